"""Valid regions (ragged tails) flow from operands to results at run time.

A tile loaded with ``valid_shape=[rows, cols]`` carries a smaller valid region than its
storage; every op acts on the valid region and checks its operands agree. So a result
takes its valid rows/cols from the operands it is computed from, decided per dimension by
shape: a result dim equal to an operand's same dim inherits that operand's valid extent
(the cube takes rows from the left operand and columns from the right). Values are plain
runtime copies, so one compiled kernel serves every tail size (``pl.dynamic``)."""

from __future__ import annotations

from pypto.codegen.cpp_expr import cpp_name
from pypto.ir.expr import Call, Var, shaped_type
from pypto.ir.types import TileType

_CUBE: tuple[str, ...] = (
    "tile.matmul",
    "tile.matmul_acc",
    "tile.matmul_bias",
    "tile.gemv",
    "tile.gemv_acc",
    "tile.gemv_bias",
)
_CUBE += ("tile.batch_matmul", "tile.batch_matmul_acc")
# The valid region is the op's own: creations, and layout ops that define or pad it.
_NO_FLOW = (
    "tile.load", "tile.create", "tile.full", "tile.fillpad", "tile.set_validshape", "tile.reshape",
    "tile.transpose", "tile.slice", "tile.extract", "tile.concat", "tile.assemble",
)  # fmt: skip
# Ops whose result is shaped by one named operand (not by the data it reads).
_FOLLOW = {"tile.gather": "indices", "tile.expands": "target", "tile.row_expand": "x", "tile.col_expand": "x"}


def _tiles(call: Call) -> list[Var]:
    return [a for a in call.args if isinstance(a, Var) and isinstance(a.type, TileType)]


def _cube(call: Call, dst: str) -> list[str]:
    lhs, rhs = (cpp_name(call.var_arg(n).name) for n in ("lhs", "rhs"))
    flags = call.op in ("tile.matmul", "tile.matmul_acc", "tile.batch_matmul", "tile.batch_matmul_acc")
    a_trans = flags and bool(getattr(call.arg("a_trans"), "value", False))
    b_trans = flags and bool(getattr(call.arg("b_trans"), "value", False))
    rows = f"{lhs}.valid_cols" if a_trans else f"{lhs}.valid_rows"
    cols = f"{rhs}.valid_rows" if b_trans else f"{rhs}.valid_cols"
    return [f"{dst}.valid_rows = {rows};", f"{dst}.valid_cols = {cols};"]


def valid_flow(call: Call, result: Var) -> list[str]:
    """Statements giving ``result`` (just declared) the valid extents of its operands."""
    if call.op in _NO_FLOW or not isinstance(result.type, TileType) or len(result.type.shape) != 2:
        return []
    dst = cpp_name(result.name)
    if call.op in _CUBE:
        return _cube(call, dst)
    tiles = [call.var_arg(_FOLLOW[call.op])] if call.op in _FOLLOW else _tiles(call)
    lines = []
    for dim, field in ((0, "valid_rows"), (1, "valid_cols")):
        for t in tiles:
            shape = shaped_type(t).shape
            if len(shape) == 2 and shape[dim] == result.type.shape[dim]:
                lines.append(f"{dst}.{field} = {cpp_name(t.name)}.{field};")
                break
    return lines
