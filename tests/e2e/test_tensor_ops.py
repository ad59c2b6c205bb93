"""Tensor-level elementwise ops, `out[:] = expr` and `dst[r0:r1, :] = src` inside a pl.at
scope: lowered to tile loads, vector ops and stores, with numpy's numbers."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
import tensor_kernels as tk

import pypto.language as pl
from pypto.errors import CompileError
from pypto.ir.expr import Call
from pypto.ir.visit import nodes_of


def rand(*shape, seed=0):
    return np.random.default_rng(seed).uniform(0.1, 2.0, shape).astype(np.float32)


def kernel_ops(compiled):
    (fn,) = [f for f in compiled.program.functions if f.kind.is_incore]
    return [c.op for c in nodes_of(fn, Call) if not c.op.startswith("system.")]


def test_elementwise_tensor_ops_lower_to_tile_ops_and_match_numpy():
    a, b = rand(tk.R, tk.C), rand(tk.R, tk.C, seed=1)
    out = np.zeros_like(a)
    compiled = tk.softplus_like.compile(a, b, out)
    ops = kernel_ops(compiled)
    assert ops == ["tile.load", "tile.exp", "tile.load", "tile.add", "tile.log", "tile.muls", "tile.store"]
    compiled.run(a, b, out)
    np.testing.assert_allclose(out, np.log(np.exp(a) + b) * 0.5, rtol=1e-5)


def test_window_stores_copy_and_compute_into_row_ranges():
    a = rand(tk.R, tk.C) - 1.0
    out = np.full_like(a, 7.0)
    tk.swap_halves(a, out)
    h = tk.R // 2
    np.testing.assert_array_equal(out[:h], a[h:])
    np.testing.assert_array_equal(out[h:], -a[:h])


def test_column_windows_and_casts():
    a = rand(tk.R, tk.C) - 1.0
    out = np.zeros((tk.R, tk.C), np.float16)
    compiled = tk.cast_columns.compile(a, out)
    assert kernel_ops(compiled).count("tile.cast") == 2
    compiled.run(a, out)
    h = tk.C // 2
    np.testing.assert_array_equal(out[:, :h], a[:, :h].astype(np.float16))
    np.testing.assert_array_equal(out[:, h:], np.maximum(a[:, h:], 0).astype(np.float16))


def test_a_window_of_a_computed_value_is_an_on_chip_extract():
    a = rand(tk.R, tk.C)
    out = np.zeros_like(a)
    compiled = tk.window_of_computed.compile(a, out)
    assert "tile.slice" in kernel_ops(compiled)  # a Vec window copy (TEXTRACT), not a reload
    compiled.run(a, out)
    np.testing.assert_allclose(out[:, : tk.C // 2], np.exp(a[:, : tk.C // 2]), rtol=1e-6)
    np.testing.assert_array_equal(out[:, tk.C // 2 :], 0)


def test_a_window_of_the_wrong_shape_is_a_compile_error_at_the_line():
    import pypto.language as pl

    @pl.jit
    def bad(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[0:8, :] = a
        return out

    a = rand(tk.R, tk.C)
    with pytest.raises(CompileError, match=r"cannot store .* of shape \[8, 64\]") as e:
        bad(a, np.zeros_like(a))
    assert "test_tensor_ops.py:" in str(e.value)


def test_a_tensor_too_big_for_the_vector_buffer_fails_naming_the_space():
    a = np.ones((512, 512), np.float32)  # 1 MiB per operand: far over UB
    out = np.zeros_like(a)
    with pytest.raises(CompileError, match=r"needs 1048576 B of Vec but \d+ B are available") as e:
        tk.too_big(a, out)
    assert "tensor_kernels.py:" in str(e.value)
    assert not out.any()  # nothing ran


DTYPES = [np.float32, np.float16, ml_dtypes.bfloat16]


def operands(m, k, n, dtype, seed=0, b_trans=False):
    rng = np.random.default_rng(seed)
    a = rng.uniform(-1, 1, (m, k)).astype(dtype)
    b = rng.uniform(-1, 1, (n, k) if b_trans else (k, n)).astype(dtype)
    return a, b


@pytest.mark.parametrize("dtype", DTYPES, ids=["fp32", "fp16", "bf16"])
@pytest.mark.parametrize("b_trans", [False, True], ids=["b", "b_trans"])
def test_tensor_matmul_matches_numpy(dtype, b_trans):
    a, b = operands(64, 128, 64, dtype, b_trans=b_trans)
    c = np.zeros((64, 64), np.float32)
    (tk.tensor_matmul_bt if b_trans else tk.tensor_matmul)(a, b, c)
    bf = b.astype(np.float32)
    ref = a.astype(np.float32) @ (bf.T if b_trans else bf)  # exact products, fp32 sums
    np.testing.assert_allclose(c, ref, rtol=1e-3, atol=1e-4)


def test_operands_over_l0a_l0b_are_split_into_k_chunks():
    a, b = operands(128, 1024, 128, np.float16)  # 256 KiB of A: four 64 KiB chunks of L0A
    c = np.zeros((128, 128), np.float32)
    compiled = tk.tensor_matmul.compile(a, b, c)
    ops = kernel_ops(compiled)
    assert ops.count("tile.matmul") == 1 and ops.count("tile.matmul_acc") == 3
    compiled.run(a, b, c)
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-3, atol=1e-3)


def test_an_accumulator_over_l0c_is_made_and_stored_in_blocks():
    a, b = operands(256, 64, 256, np.float16)  # a 256x256 fp32 Acc is 256 KiB; L0C holds 128
    c = np.zeros((256, 256), np.float32)
    compiled = tk.tensor_matmul.compile(a, b, c)
    assert kernel_ops(compiled).count("tile.matmul") == 2  # two [128, 256] blocks
    compiled.run(a, b, c)
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-3, atol=1e-3)


def test_a_batched_accumulator_over_l0c_is_a_capacity_error_naming_the_bytes():
    @pl.jit
    def batched(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            c[:] = pl.matmul(a, b, out_dtype=pl.FP32)
        return c

    a, b = np.zeros((2, 128, 64), np.float16), np.zeros((2, 64, 256), np.float16)
    c = np.ones((2, 128, 256), np.float32)
    with pytest.raises(
        CompileError, match=r"2 x \[128, 256\] fp32 needs 262144 B of Acc but L0C holds 131072 B"
    ) as e:
        batched(a, b, c)
    assert "test_tensor_ops.py:" in str(e.value) and c.all()


def test_a_k_too_long_for_sixteen_chunks_is_refused_naming_l0a_l0b():
    a, b = operands(128, 8192, 128, np.float16)
    c = np.zeros((128, 128), np.float32)
    with pytest.raises(CompileError, match=r"do not tile onto L0A/L0B \(65536 B each\)"):
        tk.tensor_matmul(a, b, c)


def test_nested_loops_of_window_stores_from_a_matmul():
    a, b = operands(64, 128, 64, np.float16)
    c = np.zeros((64, 64), np.float32)
    tk.tiled_matmul(a, b, c)
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-3, atol=1e-3)
    assert tk.tiled_matmul.last_report.hazards == []
