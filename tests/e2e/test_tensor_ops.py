"""Tensor-level elementwise ops, `out[:] = expr` and `dst[r0:r1, :] = src` inside a pl.at
scope: lowered to tile loads, vector ops and stores, with numpy's numbers."""

from __future__ import annotations

import numpy as np
import pytest
import tensor_kernels as tk

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


def test_a_window_of_a_computed_value_is_refused_with_the_way_around():
    a = rand(tk.R, tk.C)
    out = np.zeros_like(a)
    with pytest.raises(CompileError, match="slice the input tensor before computing") as e:
        tk.window_of_computed(a, out)
    assert "tensor_kernels.py:" in str(e.value)


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
