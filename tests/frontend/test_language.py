"""The ``pypto.language`` surface: names, annotations, op spellings."""

from __future__ import annotations

import numpy as np
import pytest

import pypto.language as pl
from pypto import errors, ir

SPEC_NAMES = [
    "FP32",
    "FP16",
    "BF16",
    "INT8",
    "INT16",
    "INT32",
    "INT64",
    "UINT8",
    "UINT32",
    "BOOL",
    "INDEX",
    "Mem",
    "MemorySpace",
    "Level",
    "FunctionType",
    "AtomicType",
    "PadValue",
    "Tensor",
    "Tile",
    "Out",
    "InOut",
    "Scalar",
    "MemRef",
    "range",
    "parallel",
    "pipeline",
    "unroll",
    "at",
    "yield_",
    "jit",
    "function",
    "program",
    "load",
    "store",
    "move",
    "create_tile",
    "add",
    "sub",
    "mul",
    "div",
    "adds",
    "subs",
    "muls",
    "divs",
    "exp",
    "log",
    "sqrt",
    "recip",
    "relu",
    "neg",
    "abs",
    "cast",
    "row_max",
    "row_sum",
    "row_expand_sub",
    "row_expand_div",
    "row_expand_mul",
    "row_expand_add",
    "col_expand_mul",
    "col_expand",
    "reshape",
    "concat",
    "slice",
    "matmul",
    "matmul_acc",
    "full",
    "assemble",
    "create_tensor",
    "tile",
    "tensor",
]


def test_every_spec_name_exists():
    missing = [n for n in SPEC_NAMES if not hasattr(pl, n)]
    assert not missing
    assert pl.Mem is pl.MemorySpace
    assert [m.name for m in pl.Mem] == ["DDR", "Vec", "Mat", "Left", "Right", "Acc", "Bias"]
    assert pl.Level.CORE_GROUP and pl.AtomicType.None_ and pl.AtomicType.Add
    assert {f.name for f in pl.FunctionType} == {"AIV", "AIC", "InCore", "Orchestration", "Group"}
    assert pl.tile.assemble and pl.tile.fillpad and pl.jit.incore


def test_every_table_op_has_a_namespaced_marker():
    for name in ir.OPS:
        level, op = name.split(".")
        marker = getattr(getattr(pl, level), op)
        assert marker.candidates == (name,)
    for dsl, candidates in ir.DSL_OPS.items():
        assert getattr(pl, dsl).candidates == candidates
        assert all(c in ir.OPS for c in candidates)


def test_annotations_are_runtime_objects():
    t = pl.Tensor[[64, 128], pl.FP32]
    assert t.to_type() == ir.TensorType((64, 128), ir.FP32)
    assert pl.Tensor.to_type() is None
    tile = pl.Tile[[64, 128], pl.FP16, pl.MemRef("ub", slots=2)[1], pl.Mem.Vec]
    assert tile.to_type() == ir.TileType(
        (64, 128), ir.FP16, ir.MemorySpace.Vec, ir.MemRef("ub", 2, ir.Const(1))
    )
    assert pl.Out[pl.Tensor].direction is ir.Direction.Out
    assert pl.Scalar[pl.INDEX].to_type() == ir.ScalarType(ir.INDEX)
    with pytest.raises(TypeError, match="needs a memory space"):
        pl.Tile[[64, 64], pl.FP32, pl.MemRef("ub")]
    with pytest.raises(TypeError, match="positive ints"):
        pl.Tensor[[64, -1], pl.FP32]


def test_a_tensor_view_may_say_row_major_and_is_refused_beyond_it():
    nd = pl.TensorView(stride=[128, 1], layout=pl.TensorLayout.ND)
    assert pl.Tensor[[64, 128], pl.FP32, nd].to_type() == ir.TensorType((64, 128), ir.FP32)
    rows = pl.dynamic("ROWS")
    assert pl.Tensor[[rows, 128], pl.FP32, pl.TensorView(layout=pl.TensorLayout.ND)].shape[1] == 128
    with pytest.raises(TypeError, match=r"layout=pl.TensorLayout.DN\): tensors here are row-major"):
        pl.Tensor[[64, 128], pl.FP32, pl.TensorView(layout=pl.TensorLayout.DN)]
    with pytest.raises(TypeError, match=r"stride=\[1, 64\]\): tensors here are row-major"):
        pl.Tensor[[64, 128], pl.FP32, pl.TensorView(stride=[1, 64])]
    with pytest.raises(TypeError, match="give valid_shape= .* to the loads"):
        pl.Tensor[[64, 128], pl.FP32, pl.TensorView(valid_shape=[64, rows])]


def test_memref_validation():
    m = pl.MemRef("ub", slots=3)
    assert m.slots == 3 and not m.allocated
    assert pl.MemRef("mem_vec_0", 0, 32768).allocated
    with pytest.raises(ValueError, match="slots"):
        pl.MemRef("ub", slots=0)
    with pytest.raises(ValueError, match="an offset needs a size"):
        pl.MemRef("ub", 0)
    region = pl.MemRef("ub", slots=2, size=4096)  # a PTOAS region: placed when the kernel starts
    assert region.size == 4096 and not region.allocated


def test_dtypes_map_from_numpy_and_torch_names():
    assert ir.dtypes.from_array_dtype(np.dtype(np.float16)) is pl.FP16
    assert ir.dtypes.from_array_dtype("torch.bfloat16") is pl.BF16
    assert ir.dtypes.from_array_dtype(np.dtype(bool)) is pl.BOOL
    with pytest.raises(ValueError, match="complex64"):
        ir.dtypes.from_array_dtype(np.dtype(np.complex64))


def test_function_decorator_forms():
    def body(x): ...

    plain = pl.function(body)
    typed = pl.function(type=pl.FunctionType.AIC, external_source="k.cpp")(body)
    assert plain.type is pl.FunctionType.Orchestration
    assert typed.type is pl.FunctionType.AIC and typed.external_source == "k.cpp"
    with pytest.raises(errors.OutsideKernelError):
        typed(1)


def test_jit_keeps_function_source_and_scopes():
    scale = 3

    @pl.jit
    def k(a: pl.Tensor):
        return a * scale

    assert k.name == "k" and k.kind is pl.FunctionType.Orchestration
    assert k.source.startswith("@pl.jit\ndef k(")
    assert k.closure == {"scale": 3} and k.globals is globals()
    assert pl.jit.incore(k.fn).kind is pl.FunctionType.InCore
