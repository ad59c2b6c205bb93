"""Kernels written with tensor-level ops inside pl.at scopes (imported by test_tensor_ops.py)."""

import pypto.language as pl

R, C = 32, 64


@pl.jit
def softplus_like(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    """out = log(exp(a) + b) * 0.5, elementwise ops on whole tensors, written with out[:] = ..."""
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.muls(pl.log(pl.add(pl.exp(a), b)), 0.5)
    return out


@pl.jit
def swap_halves(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    """out = a with its two row halves swapped and the second one negated: window stores."""
    with pl.at(level=pl.Level.CORE_GROUP):
        out[0 : R // 2, :] = a[R // 2 : R, :]
        out[R // 2 : R, :] = pl.neg(a[0 : R // 2, :])
    return out


@pl.jit
def cast_columns(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    """out (fp16) = a's left half cast, then its right half relu'd and cast: column windows."""
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:, 0 : C // 2] = pl.cast(a[:, 0 : C // 2], pl.FP16)
        out[:, C // 2 : C] = pl.cast(pl.relu(a[:, C // 2 : C]), pl.FP16)
    return out


@pl.jit
def window_of_computed(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        h = pl.exp(a)
        out[:, 0 : C // 2] = h[:, 0 : C // 2]
    return out


@pl.jit
def too_big(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.exp(a)
    return out


@pl.jit
def tensor_matmul(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    """c = a @ b with tensor-level ops: tiled onto L0A/L0B in K chunks by the lowering."""
    with pl.at(level=pl.Level.CORE_GROUP):
        c[:] = pl.matmul(a, b, out_dtype=pl.FP32)
    return c


@pl.jit
def tensor_matmul_bt(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    """c = a @ b.T (b stored [N, K])."""
    with pl.at(level=pl.Level.CORE_GROUP):
        c[:] = pl.matmul(a, b, out_dtype=pl.FP32, b_trans=True)
    return c


@pl.jit
def tiled_matmul(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    """c = a @ b for [64, K] x [K, 64], one 32 x 32 output tile per trip of two nested loops
    (c is carried through both: the loop-end syncs must come before each loop's yield)."""
    with pl.at(level=pl.Level.CORE_GROUP):
        for mi in pl.range(2):
            for ni in pl.range(2):
                r = mi * 32
                q = ni * 32
                c[r : r + 32, q : q + 32] = pl.matmul(a[r : r + 32, :], b[:, q : q + 32], out_dtype=pl.FP32)
    return c
