"""Typed views of IR nodes: an argument or a type read as the kind the caller relies on is
returned as is, and any other kind is reported as a compiler bug naming what was found."""

from __future__ import annotations

import pytest

from pypto import ir
from pypto.ir.expr import (
    ListExpr,
    Literal,
    as_const,
    as_var,
    scalar_type,
    shaped_type,
    tensor_type,
    tile_type,
    value_type,
)

V = ir.MemorySpace.Vec


def _load() -> ir.Call:
    x = ir.Var("x", ir.TensorType((64, 64), ir.FP32))
    return ir.bind_call("tile.load", (x, [0, 16], [16, 32]), {})[0]


def test_call_arguments_come_back_as_the_kind_the_op_table_gives():
    c = _load()
    assert isinstance(c.list_arg("offsets"), ListExpr)
    assert [i.value for i in c.list_arg("shapes").items] == [16, 32]
    assert c.var_arg("tensor").name == "x"
    assert isinstance(c.literal_arg("target_memory"), Literal)
    with pytest.raises(TypeError, match=r"tile.load: argument 'tensor' is a Var, expected a Const"):
        c.const_arg("tensor")
    with pytest.raises(KeyError, match="no parameter 'bogus'"):
        c.list_arg("bogus")


def test_types_come_back_as_the_kind_the_caller_knows():
    t = ir.Var("t", ir.TileType((16, 32), ir.FP32, V))
    x = ir.Var("x", ir.TensorType((64, 64), ir.FP32))
    assert tile_type(t).memory is V and tile_type(t.type) is t.type
    assert tensor_type(x).shape == (64, 64)
    assert shaped_type(t) is t.type and shaped_type(x) is x.type
    assert scalar_type(ir.Const(3)).dtype == ir.INDEX
    assert value_type(x) is x.type
    with pytest.raises(TypeError, match="expected a value of TileType, got TensorType"):
        tile_type(x)
    with pytest.raises(TypeError, match="expected a tile or a tensor, got ScalarType"):
        shaped_type(ir.Const(3))
    with pytest.raises(TypeError, match="expected a value, got ListExpr"):
        value_type(ListExpr((ir.Const(1),)))


def test_nodes_come_back_as_the_kind_the_caller_knows():
    x = ir.Var("x", ir.TensorType((64, 64), ir.FP32))
    assert as_var(x) is x and as_const(ir.Const(2)).value == 2
    with pytest.raises(TypeError, match="expected a named value, got Const"):
        as_var(ir.Const(2))
    with pytest.raises(TypeError, match="expected a constant, got Var"):
        as_const(x)


def test_a_loop_with_constant_bounds_has_its_range():
    i = ir.Var("i", ir.ScalarType(ir.INDEX))
    loop = ir.For(i, ir.Const(2), ir.Const(11), ir.Const(3), ir.ForKind.range, ())
    assert loop.constant_range() == range(2, 11, 3)
    n = ir.Var("n", ir.ScalarType(ir.INDEX))
    assert ir.For(i, ir.Const(0), n, ir.Const(1), ir.ForKind.range, ()).constant_range() is None
