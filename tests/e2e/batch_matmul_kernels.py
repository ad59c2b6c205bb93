"""Kernels for tests/e2e/test_batch_matmul.py: batched (rank-3) tiles on the cube, and the
accumulating / biased gemv."""

from __future__ import annotations

import pypto.language as pl


def batch_matmul(a_shape, b_shape, a_trans=False, b_trans=False, at=(0, 0, 0)):
    """out[at:] = batch_matmul(a, b): both operands loaded whole (rank 2 or 3) into Mat, moved
    to L0 and multiplied; the [B, M, N] result stored at offset ``at`` of out."""
    a0, b0 = [0] * len(a_shape), [0] * len(b_shape)

    @pl.jit
    def k(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            la = pl.move(pl.load(a, a0, a_shape, target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
            rb = pl.move(pl.load(b, b0, b_shape, target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
            pl.store(pl.batch_matmul(la, rb, a_trans=a_trans, b_trans=b_trans), at, out)
        return out

    return k


@pl.jit
def batch_matmul_k_loop(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    """out[2:4] = a[2:4] @ b[2:4] for a [4, 32, 128] and b [4, 128, 32], K in two blocks of 64:
    pl.batch_matmul on the first, pl.batch_matmul_acc on the second."""
    with pl.at(level=pl.Level.CORE_GROUP):
        la = pl.move(pl.load(a, [2, 0, 0], [2, 32, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
        rb = pl.move(pl.load(b, [2, 0, 0], [2, 64, 32], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
        acc = pl.batch_matmul(la, rb)
        la2 = pl.move(
            pl.load(a, [2, 0, 64], [2, 32, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left
        )
        rb2 = pl.move(
            pl.load(b, [2, 64, 0], [2, 64, 32], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right
        )
        acc = pl.batch_matmul_acc(acc, la2, rb2)
        pl.store(acc, [2, 0, 0], out)
    return out


@pl.jit
def gemv_acc(v: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    """out[1, 32] = v[0, :64] @ b[:64] + v[0, 64:] @ b[64:] (gemv, then gemv_acc)."""
    with pl.at(level=pl.Level.CORE_GROUP):
        lv = pl.move(pl.load(v, [0, 0], [1, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
        rb = pl.move(pl.load(b, [0, 0], [64, 32], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
        acc = pl.gemv(lv, rb)
        lv2 = pl.move(pl.load(v, [0, 64], [1, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
        rb2 = pl.move(pl.load(b, [64, 0], [64, 32], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
        pl.store(pl.gemv_acc(acc, lv2, rb2), [0, 0], out)
    return out


@pl.jit
def gemv_bias(v: pl.Tensor, b: pl.Tensor, bias: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        lv = pl.move(pl.load(v, [0, 0], [1, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
        rb = pl.move(pl.load(b, [0, 0], [64, 32], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
        bt = pl.move(pl.load(bias, [0, 0], [1, 32], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Bias)
        pl.store(pl.gemv_bias(lv, rb, bt), [0, 0], out)
    return out


def split_k(init_cond=True):
    """out = a @ b with K in blocks of 64 accumulated in one Acc tile; the first block starts the
    accumulator afresh through init_cond (i == 0) when asked."""

    @pl.jit
    def k(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            acc = pl.create_tile([32, 32], pl.FP32, target_memory=pl.Mem.Acc)
            for i in pl.range(4):
                la = pl.move(
                    pl.load(a, [0, i * 64], [32, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left
                )
                rb = pl.move(
                    pl.load(b, [i * 64, 0], [64, 32], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right
                )
                if init_cond:
                    acc = pl.matmul_acc(acc, la, rb, init_cond=(i == 0))
                else:
                    acc = pl.matmul_acc(acc, la, rb, init_cond=i)
            pl.store(acc, [0, 0], out)
        return out

    return k
