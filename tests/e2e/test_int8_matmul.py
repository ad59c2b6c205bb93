"""8-bit integer matmul: INT8 (or UINT8) cube inputs accumulate exactly in an INT32 Acc, at tile
level and at tensor level (K chunks of whole 32-element int8 fractals, batches, a kernel-local
INT32 accumulator), with the mad's cycles from the platform table and bad dtypes refused before
anything runs."""

from __future__ import annotations

import numpy as np
import pytest

import pypto.language as pl
from pypto.errors import TypeCheckError
from pypto.platforms import get

M, K, N = 64, 128, 64
I32 = np.int32


def ints(seed, shape, dtype=np.int8):
    info = np.iinfo(dtype)
    return np.random.default_rng(seed).integers(info.min, info.max + 1, shape).astype(dtype)


def ref(a, b):
    return a.astype(np.int64) @ b.astype(np.int64)


@pl.jit
def tile_i8(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    """c = a @ b over two K halves of 64: matmul, then matmul_acc."""
    with pl.at(level=pl.Level.CORE_GROUP):
        la = pl.move(pl.load(a, [0, 0], [M, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
        rb = pl.move(pl.load(b, [0, 0], [64, N], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
        acc = pl.matmul(la, rb)
        la2 = pl.move(pl.load(a, [0, 64], [M, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
        rb2 = pl.move(pl.load(b, [64, 0], [64, N], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
        acc = pl.matmul_acc(acc, la2, rb2)
        pl.store(acc, [0, 0], c)
    return c


@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
def test_tile_level_int8_matmul_is_exact_in_int32(dtype):
    a, b = ints(1, (M, K), dtype), ints(2, (K, N), dtype)
    c = np.zeros((M, N), I32)
    tile_i8(a, b, c)
    np.testing.assert_array_equal(c, ref(a, b))
    # One mad per K half: 16 x 32 x 16 int8 fractals, one cube pass each (K0 = 32 B / 1 B).
    p = get("a2a3sim")
    mad = p.cube_base_cycles + p.cube_cpr_16bit * (M // 16) * (64 // 32) * (N // 16)
    assert tile_i8.last_report.pipe_busy["CUBE"] == 2 * mad


def test_extreme_int8_values_sum_exactly():
    """-128 x -128 over K = 128: 2^21 per element, far past what an fp16 accumulator keeps exactly."""
    a, b = np.full((M, K), -128, np.int8), np.full((K, N), -128, np.int8)
    c = np.zeros((M, N), I32)
    tile_i8(a, b, c)
    np.testing.assert_array_equal(c, np.full((M, N), 128 * 128 * K, I32))


@pl.jit
def tensor_i8(
    a: pl.Tensor[[M, K], pl.INT8], bt: pl.Tensor[[N, K], pl.INT8], c: pl.Out[pl.Tensor[[M, N], pl.INT32]]
):
    """The model-code pattern: a kernel-local INT32 accumulator assigned in if/else over K."""
    with pl.at(level=pl.Level.CORE_GROUP):
        acc = pl.create_tensor([M, N], dtype=pl.INT32)
        for kb in pl.range(0, K, 32):
            if kb == 0:
                acc = pl.matmul(a[:, kb : kb + 32], bt[:, kb : kb + 32], b_trans=True, out_dtype=pl.INT32)
            else:
                acc = pl.matmul_acc(acc, a[:, kb : kb + 32], bt[:, kb : kb + 32], b_trans=True)
        c[:, :] = acc
    return c


def test_tensor_level_int8_matmul_with_a_kernel_local_accumulator():
    a, b = ints(3, (M, K)), ints(4, (K, N))
    c = np.zeros((M, N), I32)
    tensor_i8(a, np.ascontiguousarray(b.T), c)
    np.testing.assert_array_equal(c, ref(a, b))


def whole_matmul():
    @pl.jit
    def k(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.matmul(a, b)
        return out

    return k


@pytest.mark.parametrize("a_shape, b_shape", [((64, 1024), (1024, 32)), ((2, 32, 64), (2, 64, 48))])
def test_tensor_level_int8_matmul_chunks_k_and_batches(a_shape, b_shape):
    """[64, 1024] int8 is 64 KiB, all of L0A: two K chunks of 512 (whole 32-wide fractals);
    a batch axis lowers to batch_matmul with an INT32 accumulator."""
    a, b = ints(5, a_shape), ints(6, b_shape)
    want = np.matmul(a.astype(np.int64), b.astype(np.int64))
    out = np.zeros(want.shape, I32)
    kern = whole_matmul()
    kern(a, b, out)
    np.testing.assert_array_equal(out, want)


def test_int8_inputs_need_an_int32_accumulator():
    @pl.jit
    def float_acc(
        a: pl.Tensor[[M, K], pl.INT8], b: pl.Tensor[[K, N], pl.INT8], c: pl.Out[pl.Tensor[[M, N], pl.FP32]]
    ):
        with pl.at(level=pl.Level.CORE_GROUP):
            acc = pl.create_tensor([M, N], dtype=pl.FP32)
            acc = pl.matmul_acc(acc, a, b)
            c[:, :] = acc
        return c

    with pytest.raises(TypeCheckError, match=r"accumulator is .*FP32.* but lhs × rhs is INT32") as e:
        float_acc.compile()
    assert "test_int8_matmul.py" in str(e.value)

    @pl.jit
    def fp32_out(
        a: pl.Tensor[[M, K], pl.INT8], b: pl.Tensor[[K, N], pl.INT8], c: pl.Out[pl.Tensor[[M, N], pl.FP32]]
    ):
        with pl.at(level=pl.Level.CORE_GROUP):
            c[:, :] = pl.matmul(a, b, out_dtype=pl.FP32)
        return c

    with pytest.raises(TypeCheckError, match="INT8 inputs accumulate in INT32; out_dtype=FP32"):
        fp32_out.compile()


def test_int8_and_fp16_operands_do_not_mix():
    a, b = ints(7, (M, K)), np.zeros((K, N), np.float16)
    with pytest.raises(TypeCheckError, match="lhs.*rhs|dtype"):
        whole_matmul()(a, b, np.zeros((M, N), I32))


LONG_K, MADS = 2048, 17


@pl.jit
def long_k_u8(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    """17 mads of one [16, 2048] x [2048, 16] uint8 product into one INT32 accumulator."""
    with pl.at(level=pl.Level.CORE_GROUP):
        la = pl.move(pl.load(a, [0, 0], [16, LONG_K], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
        rb = pl.move(pl.load(b, [0, 0], [LONG_K, 16], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
        acc = pl.matmul(la, rb)
        for _ in pl.range(MADS - 1):
            acc = pl.matmul_acc(acc, la, rb)
        pl.store(acc, [0, 0], c)
    return c


def test_long_k_sums_stay_exact_and_wrap_as_int32_adders_do():
    """255 x 255 over K = 2,048 is 133 M a mad: past 2^24, so summed in parts; 17 mads pass 2^31
    and wrap around, as the cube's int32 adders do."""
    a, b = np.full((16, LONG_K), 255, np.uint8), np.full((LONG_K, 16), 255, np.uint8)
    c = np.zeros((16, 16), I32)
    long_k_u8(a, b, c)
    want = (MADS * LONG_K * 255 * 255) % 2**32
    assert want > 2**31  # wrapped: negative as int32
    np.testing.assert_array_equal(c, np.full((16, 16), want - 2**32, I32))
    mixed = ints(9, (16, LONG_K), np.uint8), ints(10, (LONG_K, 16), np.uint8)
    long_k_u8(*mixed, c)
    np.testing.assert_array_equal(c, ((MADS * ref(*mixed)) % 2**32).astype(np.uint32).view(I32))
