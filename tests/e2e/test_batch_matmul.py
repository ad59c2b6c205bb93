"""pl.batch_matmul / pl.batch_matmul_acc on batched (rank-3) tiles, and pl.gemv_acc /
pl.gemv_bias: numerics against numpy for fp16, bf16 and fp32 inputs (fp32 accumulate), the
batch broadcast and a_trans / b_trans, rank-3 windows at offsets, the cube cost (one mad per
batch from the platform table), and every bad use a typed error with the source line."""

from __future__ import annotations

import math
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import pypto.language as pl
from pypto.errors import BoundsCheckError, OutOfBoundsError, TypeCheckError
from pypto.platforms import get

from . import batch_matmul_kernels as K

F32, BF16 = np.float32, ml_dtypes.bfloat16


def rand(dtype, seed, shape):
    return np.random.default_rng(seed).uniform(-1, 1, shape).astype(dtype)


def exact(x):
    return x.astype(np.float64)


@pytest.mark.parametrize("dtype", [np.float16, BF16, F32])
def test_batch_matmul_matches_numpy_per_dtype(dtype):
    a, b = rand(dtype, 1, (4, 32, 64)), rand(dtype, 2, (4, 64, 48))
    out = np.zeros((4, 32, 48), F32)
    K.batch_matmul((4, 32, 64), (4, 64, 48))(a, b, out)
    np.testing.assert_allclose(out, np.matmul(exact(a), exact(b)), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "a_shape, b_shape",
    [
        ((3, 32, 64), (64, 16)),
        ((32, 64), (3, 64, 16)),
        ((1, 32, 64), (3, 64, 16)),
        ((3, 32, 64), (1, 64, 16)),
    ],
)
def test_a_single_matrix_broadcasts_over_the_batch(a_shape, b_shape):
    a, b = rand(np.float16, 3, a_shape), rand(np.float16, 4, b_shape)
    out = np.zeros((3, 32, 16), F32)
    K.batch_matmul(a_shape, b_shape)(a, b, out)
    np.testing.assert_allclose(out, np.matmul(exact(a), exact(b)), rtol=1e-5, atol=1e-5)


def test_transposed_operands():
    a, b = rand(np.float16, 5, (2, 64, 32)), rand(np.float16, 6, (2, 48, 64))  # [B, K, M], [B, N, K]
    out = np.zeros((2, 32, 48), F32)
    K.batch_matmul((2, 64, 32), (2, 48, 64), a_trans=True, b_trans=True)(a, b, out)
    ref = np.matmul(exact(a).transpose(0, 2, 1), exact(b).transpose(0, 2, 1))
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)


def test_rank3_windows_and_batch_matmul_acc_over_k_blocks():
    a, b = rand(np.float16, 7, (4, 32, 128)), rand(np.float16, 8, (4, 128, 32))
    out = np.zeros((4, 32, 32), F32)
    K.batch_matmul_k_loop(a, b, out)
    np.testing.assert_allclose(out[2:], np.matmul(exact(a), exact(b))[2:], rtol=1e-5, atol=1e-5)
    assert not out[:2].any()  # batches 0 and 1 of out are not written


def test_result_stored_at_an_offset_of_a_bigger_tensor():
    a, b = rand(np.float16, 9, (2, 32, 32)), rand(np.float16, 10, (2, 32, 16))
    out = np.zeros((3, 64, 32), F32)
    K.batch_matmul((2, 32, 32), (2, 32, 16), at=(1, 16, 8))(a, b, out)
    expect = np.zeros_like(out)
    expect[1:3, 16:48, 8:24] = np.matmul(exact(a), exact(b))
    np.testing.assert_allclose(out, expect, rtol=1e-5, atol=1e-5)


def test_cube_cost_is_one_mad_per_batch_from_the_platform_table():
    p = get("a2a3sim")
    kern = K.batch_matmul((4, 32, 64), (4, 64, 48))
    kern(rand(np.float16, 1, (4, 32, 64)), rand(np.float16, 2, (4, 64, 48)), np.zeros((4, 32, 48), F32))
    k0 = 32 // 2  # fp16: 32 B of K per fractal
    mad = p.cube_base_cycles + p.cube_cpr_16bit * math.ceil(32 / 16) * math.ceil(64 / k0) * math.ceil(48 / 16)
    report = kern.last_report
    assert report.pipe_busy["CUBE"] == 4 * math.ceil(mad)  # its wait and set take no pipe time
    assert report.pipe_busy["CUBE"] == 180


def test_gemv_acc_accumulates_two_k_blocks():
    v, b = rand(np.float16, 11, (1, 128)), rand(np.float16, 12, (128, 32))
    out = np.zeros((1, 32), F32)
    K.gemv_acc(v, b, out)
    np.testing.assert_allclose(out, exact(v) @ exact(b), rtol=1e-5, atol=1e-5)


def test_gemv_bias_adds_the_bias_row_in_one_mad():
    p = get("a2a3sim")
    v, b, bias = rand(np.float16, 13, (1, 64)), rand(np.float16, 14, (64, 32)), rand(F32, 15, (1, 32))
    out = np.zeros((1, 32), F32)
    K.gemv_bias(v, b, bias, out)
    np.testing.assert_allclose(out, exact(v) @ exact(b) + bias, rtol=1e-5, atol=1e-5)
    mad = p.cube_base_cycles + p.cube_cpr_16bit * 1 * math.ceil(64 / 16) * math.ceil(32 / 16)
    assert K.gemv_bias.last_report.pipe_busy["CUBE"] == math.ceil(mad)


@pytest.mark.parametrize(
    "a_shape, b_shape, dtype, message",
    [
        (
            (4, 32, 64),
            (4, 48, 16),
            np.float16,
            r"inner dimensions differ: lhs \[4, 32, 64\] × rhs \[4, 48, 16\] \(K 64 vs 48\)",
        ),
        (
            (4, 32, 64),
            (3, 64, 16),
            np.float16,
            r"batch dims do not broadcast: lhs \[4, 32, 64\] has 4 batches, rhs \[3, 64, 16\] has 3",
        ),
        ((64,), (64, 16), np.float16, r"`lhs` must be \[M, K\] or a batch \[B, M, K\], got shape \[64\]"),
        (
            (4, 8, 64),
            (4, 64, 16),
            np.float16,
            r"`lhs` \[4, 8, 64\] stacks 4 batches of 8 rows; each batch must fill whole 16-row fractals",
        ),
        (
            (2, 32, 64),
            (2, 64, 16),
            np.int16,
            r"the simulated cube multiplies FP32, FP16, BF16, INT8, UINT8 operands, not INT16",
        ),
    ],
)
def test_bad_shapes_are_typed_errors_with_the_line(a_shape, b_shape, dtype, message):
    kern = K.batch_matmul(a_shape, b_shape)
    out = np.zeros((4, 32, 16), F32)
    with pytest.raises(TypeCheckError, match=message) as e:
        kern(np.zeros(a_shape, dtype), np.zeros(b_shape, dtype), out)
    assert "batch_matmul_kernels.py:19" in str(e.value)  # the pl.batch_matmul line


def test_accumulator_of_another_shape_is_refused():
    @pl.jit
    def bad(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            la = pl.move(
                pl.load(a, [0, 0, 0], [2, 32, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left
            )
            rb = pl.move(
                pl.load(b, [0, 0, 0], [2, 64, 16], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right
            )
            acc = pl.create_tile([3, 32, 16], pl.FP32, target_memory=pl.Mem.Acc)
            pl.store(pl.batch_matmul_acc(acc, la, rb), [0, 0, 0], out)
        return out

    with pytest.raises(
        TypeCheckError, match=r"accumulator is pl.Tile\[\[3, 32, 16\].* but lhs × rhs is FP32 \[2, 32, 16\]"
    ):
        bad(np.zeros((2, 32, 64), np.float16), np.zeros((2, 64, 16), np.float16), np.zeros((2, 32, 16), F32))


def test_rank3_window_outside_the_tensor_is_refused_at_compile_time():
    kern = K.batch_matmul((4, 32, 64), (4, 64, 16))
    a, b = np.zeros((3, 32, 64), np.float16), np.zeros((4, 64, 16), np.float16)  # a has 3 batches
    with pytest.raises(BoundsCheckError, match=r"on dim 0 .* reaching 4 > size 3"):
        kern(a, b, np.zeros((4, 32, 16), F32))


BATCHES = pl.dynamic("BATCHES")


@pl.jit
def dynamic_batches(
    a: pl.Tensor[[BATCHES, 32, 64], pl.FP16], b: pl.Tensor[[64, 16], pl.FP16], out: pl.Out[pl.Tensor]
):
    with pl.at(level=pl.Level.CORE_GROUP):
        la = pl.move(pl.load(a, [0, 0, 0], [4, 32, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
        rb = pl.move(pl.load(b, [0, 0], [64, 16], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
        pl.store(pl.batch_matmul(la, rb), [0, 0, 0], out)
    return out


def test_rank3_window_outside_a_dynamic_tensor_fails_at_run_time_naming_the_dims():
    a, b = rand(np.float16, 16, (5, 32, 64)), rand(np.float16, 17, (64, 16))
    out = np.zeros((4, 32, 16), F32)
    dynamic_batches(a, b, out)
    np.testing.assert_allclose(out, np.matmul(exact(a[:4]), exact(b)), rtol=1e-5, atol=1e-5)
    with pytest.raises(
        OutOfBoundsError,
        match=r"GM window \[0, 0, 0\] to \[4, 32, 64\] is outside the tensor of shape \[3, 32, 64\]",
    ) as e:
        dynamic_batches(a[:3], b, out)
    lines = Path(__file__).read_text().splitlines()
    line = next(i for i, t in enumerate(lines, 1) if "pl.load(a, [0, 0, 0], [4, 32, 64]" in t)
    assert f"test_batch_matmul.py:{line}:" in str(e.value)  # the load's line


@pl.jit
def exp_batches(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        pl.store(pl.exp(pl.load(a, [1, 0, 0], [2, 16, 32])), [0, 0, 0], out)
    return out


def test_rank3_vec_tiles_run_element_wise_ops():
    """Regression: a rank-3 tile used to crash code generation with a bare ValueError."""
    a = rand(F32, 18, (3, 16, 32))
    out = np.zeros((2, 16, 32), F32)
    exp_batches(a, out)
    np.testing.assert_allclose(out, np.exp(a[1:]), rtol=1e-6)


def tensor_matmul(b_trans=False):
    @pl.jit
    def k(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.matmul(a, b, b_trans=b_trans)
        return out

    return k


@pytest.mark.parametrize(
    "a_shape, b_shape, b_trans",
    [((4, 64, 256), (4, 256, 32), False), ((3, 32, 64), (64, 48), False), ((2, 32, 64), (2, 48, 64), True)],
)
def test_tensor_matmul_with_a_batch_lowers_to_batch_matmul(a_shape, b_shape, b_trans):
    a, b = rand(np.float16, 19, a_shape), rand(np.float16, 20, b_shape)
    rhs = np.swapaxes(exact(b), -1, -2) if b_trans else exact(b)
    ref = np.matmul(exact(a), rhs)
    out = np.zeros(ref.shape, F32)
    kern = tensor_matmul(b_trans)
    kern(a, b, out)
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)
    p = get("a2a3sim")  # [4, 64, 256] x [4, 256, 32]: K in two chunks of 128 (L0A holds 64 KiB)
    if a_shape == (4, 64, 256):
        mad = p.cube_base_cycles + p.cube_cpr_16bit * (64 // 16) * (128 // 16) * (32 // 16)
        assert kern.last_report.pipe_busy["CUBE"] == 2 * 4 * mad + 4 * p.sync_cycles


def test_tensor_batch_matmul_refuses_a_narrow_out_dtype():
    @pl.jit
    def bad(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.matmul(a, b, out_dtype=pl.FP16)
        return out

    with pytest.raises(TypeCheckError, match="a batched matmul accumulates in FP32; out_dtype=FP16"):
        bad(
            np.zeros((2, 32, 64), np.float16),
            np.zeros((2, 64, 16), np.float16),
            np.zeros((2, 32, 16), np.float16),
        )


@pl.jit
def transpose_batches(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        pl.store(pl.transpose(pl.load(a, [0, 0, 0], [2, 16, 32]), 1, 2), [0, 0, 0], out)
    return out


def test_transpose_of_a_batch_transposes_each_matrix():
    """Regression: TTRANS ran on the whole stack and failed at run time."""
    a = rand(F32, 21, (2, 16, 32))
    out = np.zeros((2, 32, 16), F32)
    transpose_batches(a, out)
    np.testing.assert_array_equal(out, a.transpose(0, 2, 1))


@pl.jit
def read_write_batch(a: pl.Tensor, i: pl.Scalar[pl.INDEX], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0, 0], [2, 16, 32])
        pl.write(t, [0, 0, 0], pl.read(t, [1, i, 2]))
        pl.store(t, [0, 0, 0], out)
    return out


def test_scalar_access_to_a_batch_indexes_its_matrices():
    """Regression: [b, r, c] reached the flattened stack and was refused as out of bounds."""
    a = rand(F32, 22, (2, 16, 32))
    out = np.zeros_like(a)
    read_write_batch(a, 3, out)
    expect = a.copy()
    expect[0, 0, 0] = a[1, 3, 2]
    np.testing.assert_array_equal(out, expect)
    with pytest.raises(
        OutOfBoundsError, match=r"TREAD: index \[20, 2\] is outside the tile's valid shape \[16, 32\]"
    ):
        read_write_batch(a, 20, out)  # row 20 of a 16-row matrix (not row 4 of the next one)


def test_batch_tile_refuses_a_partial_valid_shape_and_a_batch_axis_swap():
    @pl.jit
    def ragged(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.store(pl.load(a, [0, 0, 0], [2, 16, 32], valid_shape=[2, 10, 32]), [0, 0, 0], out)
        return out

    @pl.jit
    def swap(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.store(pl.transpose(pl.load(a, [0, 0, 0], [2, 16, 32]), 0, 1), [0, 0, 0], out)
        return out

    a = np.zeros((2, 16, 32), F32)
    with pytest.raises(TypeCheckError, match=r"\[2, 16, 32\] is loaded whole: valid_shape must be its shape"):
        ragged(a, np.zeros_like(a))
    with pytest.raises(TypeCheckError, match=r"transposes each matrix: swap axes 1 and 2, got \[0, 1\]"):
        swap(a, np.zeros((16, 2, 32), F32))


def test_matmul_acc_init_cond_starts_the_accumulator_afresh():
    """Upstream's split-K idiom: on the step where init_cond holds the accumulator is
    overwritten, so stale Acc contents (a previous run's) never leak into the result."""
    a, b = rand(np.float16, 23, (32, 256)), rand(np.float16, 24, (256, 32))
    kern = K.split_k()
    for _ in range(2):  # the second run finds the first run's sums in L0C
        out = np.full((32, 32), 7.0, F32)
        kern(a, b, out)
        np.testing.assert_allclose(out, exact(a) @ exact(b), rtol=1e-5, atol=1e-5)


def test_matmul_acc_init_cond_must_be_a_condition():
    a, b = np.zeros((32, 256), np.float16), np.zeros((256, 32), np.float16)
    with pytest.raises(
        TypeCheckError, match=r"init_cond must be a condition \(e.g. k == 0\), got pl.Scalar\[pl.INDEX\]"
    ):
        K.split_k(init_cond=False)(a, b, np.zeros((32, 32), F32))
