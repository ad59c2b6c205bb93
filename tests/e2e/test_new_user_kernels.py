"""Kernels a new user writes with the tile-movement, dynamic-shape, SPMD and op-family
features, checked against numpy: a layernorm over a dynamic number of rows (one block per 16
rows, ragged tail), a top-k from pl.sort, and a batched small GEMM over a dynamic batch count.
Plus the regressions they found (a rank-3 pl.reshape, a rank-4 load)."""

from __future__ import annotations

import numpy as np
import pytest

import pypto.language as pl
from pypto.errors import TypeCheckError

M = pl.dynamic("M")
NB = pl.dynamic("NB")
N, B, EPS = 256, 16, 1e-5


@pl.jit
def layernorm(
    x: pl.Tensor[[M, N], pl.FP32],
    gamma: pl.Tensor[[1, N], pl.FP32],
    beta: pl.Tensor[[1, N], pl.FP32],
    out: pl.Out[pl.Tensor[[M, N], pl.FP32]],
):
    for blk in pl.spmd((M + B - 1) // B, name_hint="ln_rows"):
        g = pl.load(gamma, [0, 0], [1, N])
        bt = pl.load(beta, [0, 0], [1, N])
        t = pl.load(x, [blk * B, 0], [B, N], valid_shape=[min(B, M - blk * B), N])
        tmp = pl.create_tile([B, N], pl.FP32)
        mean = pl.muls(pl.row_sum(t, tmp), 1.0 / N)
        c = pl.row_expand_sub(t, mean)
        var = pl.muls(pl.row_sum(pl.mul(c, c), tmp), 1.0 / N)
        y = pl.row_expand_mul(c, pl.rsqrt(pl.adds(var, EPS)))
        pl.store(pl.col_expand_add(pl.col_expand_mul(y, g), bt), [blk * B, 0], out)
    return out


@pytest.mark.parametrize("rows", [16, 40, 100])
def test_layernorm_over_a_dynamic_number_of_rows(rows):
    rng = np.random.default_rng(rows)
    x = (rng.standard_normal((rows, N)) * 2 + 1).astype(np.float32)
    gamma = rng.uniform(0.5, 1.5, (1, N)).astype(np.float32)
    beta = rng.uniform(-1, 1, (1, N)).astype(np.float32)
    out = np.zeros_like(x)
    layernorm(x, gamma, beta, out)
    z = x.astype(np.float64)
    mu = z.mean(1, keepdims=True)
    ref = (z - mu) / np.sqrt(((z - mu) ** 2).mean(1, keepdims=True) + EPS) * gamma + beta
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=2e-6)
    assert len(layernorm.last_report.tasks) == -(-rows // B)  # one block per 16 rows


R, C, K = 16, 64, 8


@pl.jit
def topk(x: pl.Tensor, idx: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        pairs = pl.sort(pl.load(x, [0, 0], [R, C]), pl.load(idx, [0, 0], [R, C]))
        pl.store(pairs[:, 0 : 2 * K], [0, 0], out)  # the K largest (value, index) pairs of each row
    return out


def test_top_k_from_sort():
    x = np.random.default_rng(1).standard_normal((R, C)).astype(np.float32)
    idx = np.tile(np.arange(C, dtype=np.int32), (R, 1))
    out = np.zeros((R, 2 * K), np.float32)
    topk(x, idx, out)
    order = np.argsort(-x, axis=1, kind="stable")[:, :K]
    np.testing.assert_array_equal(out[:, 1::2].copy().view(np.int32), order)
    np.testing.assert_array_equal(out[:, 0::2], np.take_along_axis(x, order, 1))


BM, BK, BN, G = 32, 64, 32, 2


@pl.jit
def batched_gemm(
    a: pl.Tensor[[NB, BM, BK], pl.FP16],
    b: pl.Tensor[[NB, BK, BN], pl.FP16],
    out: pl.Out[pl.Tensor[[NB, BM, BN], pl.FP32]],
):
    for blk in pl.spmd(NB // G, name_hint="bgemm"):  # G matrices per block
        a1 = pl.load(a, [blk * G, 0, 0], [G, BM, BK], target_memory=pl.Mem.Mat)
        b1 = pl.load(b, [blk * G, 0, 0], [G, BK, BN], target_memory=pl.Mem.Mat)
        la, rb = pl.move(a1, target_memory=pl.Mem.Left), pl.move(b1, target_memory=pl.Mem.Right)
        pl.store(pl.batch_matmul(la, rb), [blk * G, 0, 0], out)
    return out


@pytest.mark.parametrize("batches", [2, 6, 8])
def test_batched_small_gemm_over_a_dynamic_batch_count(batches):
    rng = np.random.default_rng(batches)
    a = rng.uniform(-1, 1, (batches, BM, BK)).astype(np.float16)
    b = rng.uniform(-1, 1, (batches, BK, BN)).astype(np.float16)
    out = np.zeros((batches, BM, BN), np.float32)
    batched_gemm(a, b, out)
    np.testing.assert_allclose(
        out, np.matmul(a.astype(np.float64), b.astype(np.float64)), rtol=1e-5, atol=1e-5
    )
    report = batched_gemm.last_report
    assert len(report.tasks) == batches // G and len({t.core for t in report.tasks}) == batches // G


@pl.jit
def gemm_per_matrix(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    for i in pl.spmd(4):
        a1 = pl.reshape(pl.load(a, [i, 0, 0], [1, BM, BK], target_memory=pl.Mem.Mat), [BM, BK])
        b1 = pl.reshape(pl.load(b, [i, 0, 0], [1, BK, BN], target_memory=pl.Mem.Mat), [BK, BN])
        c = pl.matmul(pl.move(a1, target_memory=pl.Mem.Left), pl.move(b1, target_memory=pl.Mem.Right))
        pl.store(pl.reshape(c, [1, BM, BN]), [i, 0, 0], out)
    return out


def test_reshape_between_a_matrix_and_a_batch_of_one():
    """Regression: pl.reshape refused a rank-3 result ("tiles have at most 2 dims")."""
    rng = np.random.default_rng(3)
    a = rng.uniform(-1, 1, (4, BM, BK)).astype(np.float16)
    b = rng.uniform(-1, 1, (4, BK, BN)).astype(np.float16)
    out = np.zeros((4, BM, BN), np.float32)
    gemm_per_matrix(a, b, out)
    np.testing.assert_allclose(
        out, np.matmul(a.astype(np.float64), b.astype(np.float64)), rtol=1e-5, atol=1e-5
    )


def test_a_rank4_tile_is_a_typed_error_with_the_line():
    @pl.jit
    def rank4(x: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.store(pl.load(x, [0, 0, 0, 0], [2, 2, 16, 16]), [0, 0, 0, 0], out)
        return out

    x = np.zeros((2, 2, 16, 16), np.float32)
    with pytest.raises(
        TypeCheckError, match=r"tiles have at most 3 dims .* got shapes \[2, 2, 16, 16\]"
    ) as e:
        rank4(x, np.zeros_like(x))
    assert "test_new_user_kernels.py:" in str(e.value)


@pl.jit
def swap_and_add(x: pl.Tensor, y: pl.Tensor, o1: pl.Out[pl.Tensor], o2: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        a, b = pl.load(x, [0, 0], [R, C]), pl.load(y, [0, 0], [R, C])
        a, b = b, pl.add(a, b)  # every value is read before a name is rebound
        pl.store(a, [0, 0], o1)
        pl.store(b, [0, 0], o2)
    return o1, o2


def test_tuple_assignment_of_tiles():
    """Regression: `la, rb = pl.move(...), pl.move(...)` was refused ("only compile-time values")."""
    x, y = (np.random.default_rng(s).standard_normal((R, C)).astype(np.float32) for s in (4, 5))
    o1, o2 = np.zeros_like(x), np.zeros_like(x)
    swap_and_add(x, y, o1, o2)
    np.testing.assert_array_equal(o1, y)
    np.testing.assert_array_equal(o2, x + y)


AB, AS, AD = 4, 32, 64


@pl.jit
def attention_probs(q: pl.Tensor, k: pl.Tensor, out: pl.Out[pl.Tensor]):
    """softmax(q @ k^T / 8) per batch: the scores on the cube (pl.batch_matmul with b_trans),
    the softmax on the vector cores over the batch seen as [B * S, S] rows."""
    scores = pl.create_tensor([AB, AS, AS], pl.FP32)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="qk"):
        lq = pl.move(pl.load(q, [0, 0, 0], [AB, AS, AD], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
        rk = pl.move(
            pl.load(k, [0, 0, 0], [AB, AS, AD], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right
        )
        pl.store(pl.batch_matmul(lq, rk, b_trans=True), [0, 0, 0], scores)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="softmax"):
        s = pl.reshape(pl.muls(pl.load(scores, [0, 0, 0], [AB, AS, AS]), 1.0 / 8), [AB * AS, AS])
        tmp = pl.create_tile([AB * AS, AS], pl.FP32)
        e = pl.exp(pl.row_expand_sub(s, pl.row_max(s, tmp)))
        pl.store(pl.reshape(pl.row_expand_div(e, pl.row_sum(e, tmp)), [AB, AS, AS]), [0, 0, 0], out)
    return out


def test_batched_attention_probabilities():
    rng = np.random.default_rng(7)
    q = rng.standard_normal((AB, AS, AD)).astype(np.float16)
    k = rng.standard_normal((AB, AS, AD)).astype(np.float16)
    out = np.zeros((AB, AS, AS), np.float32)
    attention_probs(q, k, out)
    sc = np.matmul(q.astype(np.float64), k.astype(np.float64).transpose(0, 2, 1)) / 8
    ref = np.exp(sc - sc.max(-1, keepdims=True))
    np.testing.assert_allclose(out, ref / ref.sum(-1, keepdims=True), rtol=1e-5, atol=1e-6)
    assert [(t.name, t.core_type) for t in attention_probs.last_report.tasks] == [
        ("qk", "AIC"),
        ("softmax", "AIV"),
    ]


@pl.jit
def exp_first_block(x: pl.Tensor[[M, C], pl.FP32], out: pl.Out[pl.Tensor[[M, C], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out = pl.assemble(out, pl.exp(pl.load(x, [0, 0], [R, C])), [0, 0])
    return out


def test_assemble_into_a_dynamic_tensor():
    """Regression: pl.assemble into a pl.dynamic tensor compared DynDim with int (a bare TypeError)."""
    x = np.random.default_rng(8).standard_normal((3 * R, C)).astype(np.float32)
    out = np.zeros_like(x)
    exp_first_block(x, out)
    np.testing.assert_allclose(out[:R], np.exp(x[:R]), rtol=1e-6)
    assert not out[R:].any()


@pytest.mark.parametrize("batched", [False, True])
def test_tensor_matmul_of_a_dynamic_tensor_is_a_typed_error(batched):
    """Regression: a tensor-level pl.matmul on a pl.dynamic operand crashed with a bare TypeError."""
    if batched:

        @pl.jit
        def k(
            a: pl.Tensor[[NB, BM, BK], pl.FP16], b: pl.Tensor, out: pl.Out[pl.Tensor[[NB, BM, BN], pl.FP32]]
        ):
            with pl.at(level=pl.Level.CORE_GROUP):
                out = pl.assemble(out, pl.matmul(a, b), [0, 0, 0])
            return out

        args = (
            np.zeros((2, BM, BK), np.float16),
            np.zeros((BK, BN), np.float16),
            np.zeros((2, BM, BN), np.float32),
        )
    else:

        @pl.jit
        def k(a: pl.Tensor[[M, BK], pl.FP16], b: pl.Tensor, out: pl.Out[pl.Tensor[[M, BN], pl.FP32]]):
            with pl.at(level=pl.Level.CORE_GROUP):
                out = pl.assemble(out, pl.matmul(a, b), [0, 0])
            return out

        args = (
            np.zeros((BM, BK), np.float16),
            np.zeros((BK, BN), np.float16),
            np.zeros((BM, BN), np.float32),
        )
    with pytest.raises(TypeCheckError, match=r"compile-time shapes, but `lhs` is \[(NB, 32|M), 64"):
        k(*args)
