"""pl.dynamic dims: one compile and one kernel build for every size, ragged tails through
valid shapes, windows past the tensor caught at run time with the source line."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

import pypto.language as pl
from pypto.errors import ArgumentMismatchError, OutOfBoundsError
from pypto.frontend.specialize import specialization_key

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "dynamic_shape.py"
M = pl.dynamic("M")
C = 64


def load_example():
    spec = importlib.util.spec_from_file_location("example_dynamic_shape", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # inspect finds kernel sources through the module
    spec.loader.exec_module(module)
    return module


def test_example_runs_three_sizes_on_one_compile_and_one_kernel_build(tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "cache"))
    ex = load_example()
    rows = ex.run((16, 40, 100))
    assert [m for m, _, _ in rows] == [16, 40, 100]
    assert all(err < 1e-6 for _, err, _ in rows)
    assert rows[0][2] < rows[1][2] < rows[2][2]  # more rows, more blocks, more cycles
    x = np.zeros((40, ex.C), np.float32)
    assert ex.rms_scale.compile(x, x) is ex.rms_scale.compile(x[:16], x[:16])
    assert len(list((tmp_path / "cache" / "kernels").rglob("meta.json"))) == 1  # one kernel entry


def test_the_key_holds_the_symbol_and_one_symbol_means_one_size():
    @pl.jit
    def copy(x: pl.Tensor[[M, C], pl.FP32], out: pl.Out[pl.Tensor[[M, C], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.store(pl.load(x, [0, 0], [8, C]), [0, 0], out)
        return out

    a, b = np.zeros((24, C), np.float32), np.zeros((32, C), np.float32)
    key = specialization_key(copy, (a, a), {})
    assert key[0][:2] == ("tensor", ("M", C))
    assert key == specialization_key(copy, (b, b), {})
    with pytest.raises(ArgumentMismatchError, match="dynamic dim M is 24 in `x` but 32 in `out`"):
        copy(a, b)
    with pytest.raises(ArgumentMismatchError, match=r"signature declares \[M, 64\]"):
        copy(np.zeros((24, 32), np.float32), np.zeros((24, 32), np.float32))


@pl.jit
def no_tail(x: pl.Tensor[[M, C], pl.FP32], out: pl.Out[pl.Tensor[[M, C], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range((M + 15) // 16):
            t = pl.load(x, [i * 16, 0], [16, C])  # no valid_shape: the last block overruns
            pl.store(t, [i * 16, 0], out)
    return out


def test_a_window_past_a_dynamic_tensor_fails_at_run_time_with_the_line():
    x = np.ones((32, C), np.float32)
    out = np.zeros_like(x)
    no_tail(x, out)  # a multiple of 16: fine
    np.testing.assert_array_equal(out, x)
    x = np.ones((40, C), np.float32)
    with pytest.raises(OutOfBoundsError, match=r"TLOAD: GM window rows \[32, 48\)") as e:
        no_tail(x, np.zeros_like(x))
    line = (
        Path(__file__)
        .read_text()
        .splitlines()
        .index("            t = pl.load(x, [i * 16, 0], [16, C])  # no valid_shape: the last block overruns")
        + 1
    )
    assert f"test_dynamic_shape.py:{line}" in str(e.value)


def test_a_dynamic_dim_in_orchestration_code_sets_the_task_count_of_each_call():
    @pl.jit
    def tiles(x: pl.Tensor[[M, C], pl.FP32], out: pl.Out[pl.Tensor[[M, C], pl.FP32]]):
        for i in pl.range(M // 16):
            with pl.at(level=pl.Level.CORE_GROUP):
                pl.store(pl.load(x, [i * 16, 0], [16, C]), [i * 16, 0], out)
        return out

    for rows in (32, 64):
        x = np.arange(rows * C, dtype=np.float32).reshape(rows, C)
        out = np.zeros_like(x)
        tiles(x, out)
        np.testing.assert_array_equal(out, x)
        assert len(tiles.last_report.tasks) == rows // 16


T = pl.dynamic("T")


@pl.jit.inline
def doubled_rows(x: pl.Tensor[[T, C], pl.FP32], y: pl.Tensor[[T, C], pl.FP32]):
    x.bind_dynamic(0, T)  # the caller's tensors: here a [16, C] window of a [M, C] one
    y.bind_dynamic(0, T)
    with pl.at(level=pl.Level.CORE_GROUP):
        y[:, :] = pl.muls(x, 2.0)
    return y


@pl.jit
def first_rows_doubled(x: pl.Tensor[[M, C], pl.FP32], y: pl.Out[pl.Tensor[[M, C], pl.FP32]]):
    x.bind_dynamic(0, M)
    y.bind_dynamic(0, M)
    part = pl.create_tensor([16, C], dtype=pl.FP32)
    part = doubled_rows(pl.slice(x, [16, C], [0, 0]), part)
    with pl.at(level=pl.Level.CORE_GROUP):
        y[0:16, :] = pl.adds(part, 0.0)
    return y


def test_bind_dynamic_checks_an_entry_and_accepts_an_inline_helpers_caller_sizes():
    from pypto.runtime import RunConfig

    x = np.random.default_rng(2).standard_normal((48, C)).astype(np.float32)
    y = np.zeros_like(x)
    first_rows_doubled(x, y, config=RunConfig(platform="a2a3sim"))
    np.testing.assert_array_equal(y[:16], 2 * x[:16])

    @pl.jit
    def mismatched(x: pl.Tensor[[16, C], pl.FP32], y: pl.Out[pl.Tensor[[16, C], pl.FP32]]):
        x.bind_dynamic(0, M)
        with pl.at(level=pl.Level.CORE_GROUP):
            y[:, :] = pl.muls(x, 2.0)
        return y

    from pypto.errors import TypeCheckError

    with pytest.raises(
        TypeCheckError, match=r"axis 0 of `x` is declared 16, not M.*test_dynamic_shape.py:\d+"
    ):
        mismatched.lower(x[:16], y[:16])
