"""The fused broadcast exp-difference family: ``exp(x - v)`` with ``v`` broadcast along rows
(TROWEXPANDEXPDIF, ``v`` is [M, 1]) or down columns (TCOLEXPANDEXPDIF, ``v`` is [1, N]), the
softmax step after the max, in one vector instruction; implemented in
``csrc/chip/isa/reduce.cpp`` beside the other broadcast ops.

Both are vector tile ops, so their tensor forms (``pl.col_expand_expdif`` on tensors) come from
:mod:`pypto.ir.op_levels`.
"""

from __future__ import annotations

from pypto.ir.enums import Pipe
from pypto.ir.op_def import Kind, OpDef, ParamSpec
from pypto.ir.op_rules import VEC, Bound, Rule, col_expand_rule, row_expand_rule
from pypto.ir.types import Type, format_type
from pypto.ops.family import CEntry, Family

T = Kind.TILE
TILE = "const pypto_tile*"


def _vector(_types: object) -> Pipe:
    return Pipe.VECTOR


def _float(b: Bound) -> None:
    x = b.array("x")
    if not x.dtype.is_float:
        raise b.fail(f"exp of a difference needs float values, got {format_type(x)}")


def row_expdif_rule(b: Bound) -> Type:
    _float(b)
    return row_expand_rule(b)


def col_expdif_rule(b: Bound) -> Type:
    _float(b)
    return col_expand_rule(b)


def _op(name: str, rule: Rule, doc: str) -> OpDef:
    return OpDef(
        name, (ParamSpec("x", T), ParamSpec("v", T)), rule, "tile", _vector, {"x": VEC, "v": VEC}, doc
    )


OPS: tuple[OpDef, ...] = (
    _op("tile.row_expand_expdif", row_expdif_rule, "exp(x - v), v ([M, 1]) broadcast along rows"),
    _op("tile.col_expand_expdif", col_expdif_rule, "exp(x - v), v ([1, N]) broadcast down columns"),
)

ABI = (
    CEntry(
        "pypto_texpand_expdif",
        (f"{TILE} dst", f"{TILE} a", f"{TILE} v", "int32_t by_row"),
        "dst = exp(a - v) in a's dtype (float), v broadcast: [M, 1] along rows (by_row) or\n"
        "[1, N] down columns; one vector instruction priced as an exp pass over dst.",
        (("TROWEXPANDEXPDIF", {"by_row": "1"}), ("TCOLEXPANDEXPDIF", {"by_row": "0"})),
    ),
)

FAMILY = Family(
    name="expdif",
    ops=OPS,
    dsl={"row_expand_expdif": ("tile.row_expand_expdif",), "col_expand_expdif": ("tile.col_expand_expdif",)},
    emitters={
        "tile.row_expand_expdif": "TROWEXPANDEXPDIF({dst}, {x}, {v});",
        "tile.col_expand_expdif": "TCOLEXPANDEXPDIF({dst}, {x}, {v});",
    },
    abi=ABI,
    isa_file="reduce.cpp",
)
