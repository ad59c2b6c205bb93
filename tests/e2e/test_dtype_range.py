"""The dtype range rule: a compile-time value that does not fit its dtype is a compile error at
its line; a run-time integer written into a narrower element wraps as numpy's astype does."""

from __future__ import annotations

import numpy as np
import pytest

import pypto.language as pl
from pypto.errors import TypeCheckError
from pypto.ir.dtypes import BF16, numpy_dtype


@pl.jit
def write_narrow(a: pl.Tensor[[4], pl.INT32], out: pl.Out[pl.Tensor[[4], pl.INT8]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        v = pl.read(a, [0])
        pl.write(out, [0], v)
        pl.write(out, [1], v + 1)
        pl.write(out, [2], pl.read(a, [2]))
        pl.write(out, [3], -128)
    return out


def test_a_run_time_integer_wraps_into_a_narrower_element_as_numpy_astype():
    a = np.array([300, 0, -129, 0], np.int32)
    out = np.zeros(4, np.int8)
    write_narrow(a, out)
    want = np.array([300, 301, -129, -128]).astype(np.int8)  # [44, 45, 127, -128]
    np.testing.assert_array_equal(out, want)


@pl.jit
def scaled_fp16(x: pl.Tensor[[16, 16], pl.FP16], out: pl.Out[pl.Tensor[[16, 16], pl.FP16]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(x, [0, 0], [16, 16])
        pl.store(pl.muls(t, 70000.0), [0, 0], out)
    return out


@pl.jit
def write_static(out: pl.Out[pl.Tensor[[4], pl.UINT8]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        pl.write(out, [0], 256)
    return out


@pl.jit
def fill_bf16(out: pl.Out[pl.Tensor[[16, 16], pl.BF16]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        pl.store(pl.tile.full([16, 16], pl.BF16, 1e39), [0, 0], out)
    return out


@pytest.mark.parametrize(
    ("kernel", "args", "message", "line"),
    [
        (
            scaled_fp16,
            [np.ones((16, 16), np.float16), np.zeros((16, 16), np.float16)],
            "70000.0 overflows FP16",
            37,
        ),
        (write_static, [np.zeros(4, np.uint8)], r"256 does not fit UINT8 \[0, 255\]", 44),
        (fill_bf16, [np.zeros((16, 16), numpy_dtype(BF16))], "overflows BF16", 51),
    ],
)
def test_a_static_value_that_does_not_fit_is_a_compile_error_at_its_line(kernel, args, message, line):
    before = [a.copy() for a in args]
    with pytest.raises(TypeCheckError, match=message) as e:
        kernel(*args)
    assert f"test_dtype_range.py:{line}:" in str(e.value)
    for a, b in zip(args, before):
        np.testing.assert_array_equal(a, b)


@pl.jit
def max_init(x: pl.Tensor[[16, 16], pl.FP16], out: pl.Out[pl.Tensor[[16, 16], pl.FP16]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(x, [0, 0], [16, 16])
        low = pl.maximums(t, float("-inf"))
        pl.store(pl.minimums(low, 65504.0), [0, 0], out)
    return out


def test_infinities_and_the_largest_finite_value_are_values_of_a_float_dtype():
    x = np.full((16, 16), -3.0, np.float16)
    out = np.zeros_like(x)
    max_init(x, out)
    np.testing.assert_array_equal(out, x)
