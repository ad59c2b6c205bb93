"""Dtypes the ISA refuses are refused when the kernel is typed, from the ISA's own table.

``pypto.hardware.ISA_DTYPES`` is read from the native ISA checks; these tests hold the three
ends together: the table says what a run accepts (swept through the ISA probe kernel), the
typing rules refuse exactly what the table refuses, and a refused kernel never reaches the
C++ compiler.
"""

from __future__ import annotations

import numpy as np
import pytest

import pypto.language as pl
from pypto import hardware, ir
from pypto.errors import DTypeMismatchError, TypeCheckError
from pypto.ir import isa_dtypes
from pypto.runtime import run_kernel_file

V = ir.MemorySpace.Vec
DTYPES = {
    "fp32": ir.FP32,
    "fp16": ir.FP16,
    "int32": ir.INT32,
    "int16": ir.INT16,
    "int8": ir.INT8,
    "uint8": ir.UINT8,
}
BINARY_OPS = ("add", "sub", "mul", "div", "max", "min")  # pypto_binary_op order
UNARY_OPS = ("exp", "log", "sqrt", "recip", "relu", "neg", "abs")  # pypto_unary_op order
K_BINARY, K_UNARY, K_ROW_REDUCE = 0, 2, 5  # the probe's kinds


def _runs(fixture_kernel, kind: int, op: int, dtype: str) -> bool:
    numpy_dtype = {"fp32": "float32", "fp16": "float16"}.get(dtype, dtype)
    a = np.ones((8, 64), numpy_dtype)
    out = np.zeros((8, 1) if kind == K_ROW_REDUCE else (8, 64), numpy_dtype)
    try:
        run_kernel_file(fixture_kernel("isa_probe"), [a, a, out, kind, op, 0.0, 0], outputs={2})
    except DTypeMismatchError:
        return False
    return True


@pytest.mark.parametrize("dtype", list(DTYPES))
def test_the_table_is_what_the_isa_runs(fixture_kernel, dtype):
    table = hardware.ISA_DTYPES
    for op, name in enumerate(BINARY_OPS):
        assert _runs(fixture_kernel, K_BINARY, op, dtype) == (dtype in table["binary"][name]), name
    for op, name in enumerate(UNARY_OPS):
        assert _runs(fixture_kernel, K_UNARY, op, dtype) == (dtype in table["unary"][name]), name
    assert _runs(fixture_kernel, K_ROW_REDUCE, 0, dtype) == (dtype in table["reduce"])


def _typed(op: str, *args) -> ir.Type:
    return ir.bind_call(op, args, {})[1]


@pytest.mark.parametrize("level", ["tile", "tensor"])
@pytest.mark.parametrize("dtype", list(DTYPES))
def test_typing_refuses_exactly_what_the_table_refuses(level, dtype):
    def operand(name: str) -> ir.Var:
        t = (
            ir.TileType((8, 64), DTYPES[dtype], V)
            if level == "tile"
            else ir.TensorType((8, 64), DTYPES[dtype])
        )
        return ir.Var(name, t)

    ops = [(f"{level}.{n}", ("binary", n)) for n in ("add", "sub", "mul", "div")]
    ops += [(f"{level}.{n}", ("unary", n)) for n in UNARY_OPS]
    ops += [(f"{level}.maximum", ("binary", "max")), (f"{level}.minimum", ("binary", "min"))]
    for op, (family, name) in ops:
        if op not in ir.OPS:
            continue
        allowed = dtype in isa_dtypes.accepted(family, name)
        args = (operand("a"),) if family == "unary" else (operand("a"), operand("b"))
        if allowed:
            _typed(op, *args)
        else:
            with pytest.raises(TypeCheckError, match=f"the vector unit has no {dtype.upper()} {name} "):
                _typed(op, *args)


def test_every_vector_op_of_the_isa_has_an_ir_op_checked_against_it():
    mapped = {isa_dtypes.isa_op(name) for name in ir.OPS}
    for name in BINARY_OPS:
        assert ("binary", name) in mapped
    for name in UNARY_OPS:
        assert ("unary", name) in mapped
    assert isa_dtypes.isa_op("tile.adds") == ("binary", "add")
    assert isa_dtypes.isa_op("tile.row_expand_max") == ("binary", "max")
    assert isa_dtypes.isa_op("tile.row_sum") == ("reduce", "row_sum")


@pl.jit
def add_tiles(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        x = pl.load(a, [0, 0], [16, 32])
        y = pl.load(b, [0, 0], [16, 32])
        pl.store(pl.add(x, y), [0, 0], out)
    return out


@pl.jit
def add_tensors(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(a, b)
    return out


@pl.jit
def matmul_tensors(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.matmul(a, b)
    return out


@pytest.fixture
def no_compiler(tmp_path, monkeypatch):
    """A fresh cache, and a build step that fails the test if anything reaches it."""
    from pypto.kernel_build import ninja

    def compiled(*args, **kwargs):
        raise AssertionError("the C++ compiler ran")

    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(ninja, "build_and_publish", compiled)
    yield tmp_path
    assert not (tmp_path / "kernels").exists()


@pytest.mark.parametrize("kernel", [add_tiles, add_tensors], ids=["tile", "tensor"])
@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
def test_a_byte_add_is_a_typed_error_at_its_line_before_any_build(no_compiler, kernel, dtype):
    a = np.ones((16, 32), dtype)
    with pytest.raises(
        TypeCheckError, match=r"pl.add: the vector unit has no U?INT8 add \(it takes FP32,"
    ) as e:
        kernel(a, a, np.zeros_like(a))
    line = kernel.fn.__code__.co_firstlineno + (5 if kernel is add_tiles else 3)  # from @pl.jit
    assert f"test_isa_dtypes.py:{line}:" in str(e.value)


def test_a_cube_input_the_cube_lacks_is_refused_as_the_simulated_cube_refuses_it(no_compiler):
    a, b = np.ones((16, 32), np.int16), np.ones((32, 16), np.int16)
    with pytest.raises(
        TypeCheckError,
        match="the simulated cube multiplies FP32, FP16, BF16, INT8, UINT8 operands, not INT16",
    ):
        matmul_tensors(a, b, np.zeros((16, 16), np.int32))
    assert hardware.ISA_DTYPES["cube_inputs"] == ["fp32", "fp16", "bf16", "int8", "uint8"]


def test_the_accumulator_and_fixpipe_dtypes_are_the_cubes():
    def t(shape, dtype, memory):
        return ir.Var("t", ir.TileType(shape, dtype, memory))

    left, right = t((16, 32), ir.FP16, ir.MemorySpace.Left), t((32, 16), ir.FP16, ir.MemorySpace.Right)
    with pytest.raises(TypeCheckError, match="the cube sums FP16 inputs in FP32, not INT32"):
        ir.bind_call("tile.matmul_acc", (t((16, 16), ir.INT32, ir.MemorySpace.Acc), left, right), {})
    with pytest.raises(TypeCheckError, match="the cube sums FP16 inputs in FP32, not FP16"):
        ir.bind_call("tile.matmul", (left, right, ir.FP16), {})
    left8, right8 = t((16, 32), ir.INT8, ir.MemorySpace.Left), t((32, 16), ir.INT8, ir.MemorySpace.Right)
    assert ir.bind_call("tile.matmul", (left8, right8), {})[1].dtype == ir.INT32
    acc = t((16, 16), ir.FP32, ir.MemorySpace.Acc)
    for dtype in (ir.FP32, ir.FP16, ir.BF16):  # FIXPIPE converts on the way out
        ir.bind_call("tile.store", (acc, [0, 0], ir.Var("o", ir.TensorType((16, 16), dtype))), {})
    with pytest.raises(
        TypeCheckError, match="FIXPIPE stores a FP32 accumulator as FP32, FP16, BF16, not INT32"
    ):
        ir.bind_call("tile.store", (acc, [0, 0], ir.Var("o", ir.TensorType((16, 16), ir.INT32))), {})
    acc32 = t((16, 16), ir.INT32, ir.MemorySpace.Acc)
    with pytest.raises(TypeCheckError, match="FIXPIPE stores a INT32 accumulator as INT32, not FP16"):
        ir.bind_call("tile.store", (acc32, [0, 0], ir.Var("o", ir.TensorType((16, 16), ir.FP16))), {})
    assert hardware.ISA_DTYPES["cube_acc"] == {
        "fp32": ["fp32"], "fp16": ["fp32"], "bf16": ["fp32"], "int8": ["int32"], "uint8": ["int32"]
    }  # fmt: skip
    assert hardware.ISA_DTYPES["fixpipe_out"] == {"fp32": ["fp32", "fp16", "bf16"], "int32": ["int32"]}
