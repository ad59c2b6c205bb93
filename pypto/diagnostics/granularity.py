"""PH001 ``TileInnermostDimGranularity``: GM transfers whose rows are too short (docs/perf_hints.md).

Every ``tile.load`` / ``tile.store`` (any memory space) whose tile row — the innermost
dimension times the element size — is strictly shorter than the platform's recommended
transfer size (``recommended_transfer_bytes``: 512 B on a2a3, the L2 line; 128 B on a5, its
GM granularity) gets one hint. The ``moves`` clause gives the traffic of the valid shape
(rows × row bytes), so the hints can be ranked by what they cost.
Test: tests/diagnostics/test_ph001.py
"""

from __future__ import annotations

import math

from pypto.diagnostics.hints import PerfHint
from pypto.ir.expr import Call, Const, Expr, ListExpr, Var
from pypto.ir.stmt import Assign, Eval, Function, Program, Stmt
from pypto.ir.types import TensorType, TileType
from pypto.ir.visit import walk
from pypto.platforms import Platform

CODE, RULE = "PH001", "TileInnermostDimGranularity"
L2_LINE_BYTES = (
    512  # a2a3 and a5 both have 512 B L2 cache lines (the a5 hint threshold is its 128 B GM granularity)
)


def _static(shape: Expr | None) -> tuple[int, ...] | None:
    if not isinstance(shape, ListExpr):
        return None
    sizes = tuple(int(i.value) for i in shape.items if isinstance(i, Const))
    return sizes if len(sizes) == len(shape.items) else None


def _transfer(stmt: Stmt) -> tuple[str, TileType, tuple[int, ...], str] | None:
    """(op, tile type, valid shape, memory shown) of a load/store statement, else None."""
    call = stmt.value if isinstance(stmt, (Assign, Eval)) else None
    if not isinstance(call, Call) or call.op not in ("tile.load", "tile.store"):
        return None
    if call.op == "tile.load":
        tensor = call.arg("tensor")
        shape = _static(call.arg("shapes"))
        if not isinstance(tensor, Var) or not isinstance(tensor.type, TensorType) or shape is None:
            return None
        target = call.arg("target_memory")
        memory = getattr(getattr(target, "value", None), "name", "Vec")
        tile = TileType(shape, tensor.type.dtype)
        return call.op, tile, _static(call.arg("valid_shape")) or shape, memory
    src = call.arg("tile")
    if not isinstance(src, Var) or not isinstance(src.type, TileType):
        return None
    memory = src.type.memory.name if src.type.memory is not None else "Vec"
    return call.op, src.type, src.type.shape, memory


def _hint(stmt: Stmt, platform: Platform) -> PerfHint | None:
    found = _transfer(stmt)
    if found is None:
        return None
    op, tile, valid, memory = found
    size = tile.dtype.itemsize
    inner = tile.shape[-1] * size
    threshold = int(platform.recommended_transfer_bytes)
    if inner >= threshold:
        return None
    rows, row_bytes = math.prod(valid[:-1]), valid[-1] * size
    message = (
        f"{op} has innermost dim = {inner}B (tile {tile.dtype.name.lower()}[{tile.shape[-1]}], "
        f"target_memory={memory}); moves {rows * row_bytes}B as {rows} x {row_bytes}B rows; "
        f"recommended >= {threshold}B for backend {platform.device} (L2 cache line = {L2_LINE_BYTES}B). "
        "Consider increasing tile shape on the innermost axis."
    )
    return PerfHint(CODE, RULE, message, stmt.span)


def tile_innermost_dim_granularity(fn: Function, platform: Platform) -> list[PerfHint]:
    """The PH001 hints of one InCore function, one per offending transfer statement."""
    hints = []
    for node in walk(fn):
        if isinstance(node, (Assign, Eval)):
            hint = _hint(node, platform)
            if hint is not None:
                hints.append(hint)
    return hints


def check_program(program: Program, platform: Platform) -> list[PerfHint]:
    """PH001 over every generated InCore function (external C++ kernels are not inspected)."""
    return [
        h
        for fn in program.functions
        if fn.kind.is_incore and fn.external_source is None
        for h in tile_innermost_dim_granularity(fn, platform)
    ]
