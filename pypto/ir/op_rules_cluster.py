"""Result-typing rules of the cross-core tile-pipe ops (``pl.tpush_to_aiv`` ...).

A cluster is one AIC and two AIVs. The AIC pushes a tile from Acc and pops into Mat; an AIV
pushes from Vec and pops into Vec. ``split`` says how the two AIVs share a tile the AIC
sees whole: 0 (one AIV, the whole tile), 1 (rows halved: AIV 0 the top half), 2 (columns
halved: AIV 0 the left half). A pop names the shape its core receives.
"""

from __future__ import annotations

from pypto.ir.enums import MemorySpace, SplitMode
from pypto.ir.expr import Const, Expr, Literal
from pypto.ir.op_rules import Bound
from pypto.ir.types import TileType, Type, VoidType


def split_of(e: Expr | None) -> int:
    """The split mode of a ``split=`` argument as upstream's number (0, 1, 2)."""
    if isinstance(e, Literal) and isinstance(e.value, SplitMode):
        return int(e.value.value)
    if isinstance(e, Const) and isinstance(e.value, int):
        return int(e.value)
    return 0


def _check_split(b: Bound, shape: tuple[int, ...]) -> None:
    split = split_of(b.args.get("split"))
    rows, cols = (1, shape[0]) if len(shape) == 1 else shape[-2:]
    if split == 1 and rows % 2:
        raise b.fail(f"split UP_DOWN halves the rows, but the tile has {rows} rows (odd)")
    if split == 2 and cols % 2:
        raise b.fail(f"split LEFT_RIGHT halves the columns, but the tile has {cols} columns (odd)")


def _pipe_id(b: Bound) -> None:
    pid = b.literal("id")
    if not isinstance(pid, int) or pid < 0:
        raise b.fail(f"id must be a non-negative integer (the pipe), got {pid!r}")


def push_rule(b: Bound) -> Type:
    t = b.array("tile")
    assert isinstance(t, TileType)
    _pipe_id(b)
    if b.op == "tile.tpush_to_aiv":
        _check_split(b, t.shape)
    return VoidType()


def _pop(b: Bound, memory: MemorySpace) -> Type:
    _pipe_id(b)
    shape = b.ints("shape") or ()
    if len(shape) not in (1, 2):
        raise b.fail(f"shape must have 1 or 2 dims, got {list(shape)}")
    if memory is MemorySpace.Mat:
        _check_split(b, shape)
    return TileType(shape, b.dtype("dtype"), memory)


def pop_from_aic_rule(b: Bound) -> Type:
    return _pop(b, MemorySpace.Vec)


def pop_from_aiv_rule(b: Bound) -> Type:
    return _pop(b, MemorySpace.Mat)


def free_rule(b: Bound) -> Type:
    _pipe_id(b)
    return VoidType()
