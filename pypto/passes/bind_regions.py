"""BindRegions (the PTOAS planner): every tile joins a storage region; no addresses.

The regions stand in for PTOAS's own planning. Tiles are grouped as the PYPTO planner
groups them (``memory.storage_groups``): loop-carried values, ``if`` results, ``matmul_acc``'s
accumulator and all tiles bound to one ``pl.MemRef`` declaration share a region, and so may
a copy's two ends and an elementwise result with an input that dies there (the planner may
coalesce what you separated). A region is ``slots`` slots of its largest tile; each tile's
MemRef names its region, its slot select and the slot size — no offset. Unlike PYPTO's
first fit, regions never overlap: the kernel places them when it starts
(``pypto_place_regions``, in order, per space), so InsertSync treats distinct regions as
disjoint. The regions must fit their spaces; that is checked here, before anything runs.
Every clone of a pipeline keeps its own region, so the kernel's ``pipeline_groups`` (the
PYPTO planner's depth gate input) are not needed and are dropped, as that planner does.

Test: tests/passes/test_bind_regions.py
"""

from __future__ import annotations

from pypto.errors import MemoryCapacityError
from pypto.ir.expr import Expr
from pypto.ir.stmt import Function, Program
from pypto.ir.types import TILE_REGION_PREFIX, MemRef
from pypto.passes.context import PassContext
from pypto.passes.memory import map_generated_kernels
from pypto.passes.memory.storage_groups import (
    CAPACITY_FIELD,
    Buffer,
    bind_storage,
    buffers,
    group_storage,
)


def _align(n: int, a: int) -> int:
    return (n + a - 1) // a * a


def region_name(buf: Buffer) -> str:
    """A declaration keeps its name; other regions are named after their first tile."""
    return buf.pinned.name if buf.pinned is not None else f"{TILE_REGION_PREFIX}{buf.members[0]}"


def _check_fits(fn: Function, bufs: list[Buffer], ctx: PassContext) -> None:
    align = int(ctx.platform.alignment_bytes)
    for space in sorted({b.space for b in bufs}):
        mine = [b for b in bufs if b.space == space]
        need = sum(b.slots * _align(b.slot_bytes, align) for b in mine)
        limit = int(getattr(ctx.platform, CAPACITY_FIELD[space]))
        if need > limit:
            parts = ", ".join(f"{region_name(b)} ({b.slots} x {b.slot_bytes} B)" for b in mine)
            raise MemoryCapacityError(
                f"function {fn.name!r} needs {need} B of {space} for its regions but {limit} B are "
                f"available ({need - limit} B over); the PTOAS planner gives every region its own "
                f"storage: {parts}. Use smaller tiles, fewer stages, or the PYPTO planner, which "
                "reuses storage between tiles that are not live together",
                fn.span,
            )


def _memref(b: Buffer, own: Expr | None) -> MemRef:
    return MemRef(region_name(b), slots=b.slots, index=own, size=b.slot_bytes)


def _bind(fn: Function, ctx: PassContext) -> Function:
    fn, copies, groups = group_storage(fn)
    bufs = buffers(groups)
    _check_fits(fn, bufs, ctx)
    return bind_storage(fn, groups, copies, bufs, _memref)


def bind_regions(program: Program, ctx: PassContext) -> Program:
    """Bind every tile of every generated InCore function to its storage region."""
    return map_generated_kernels(program, lambda f: _bind(f, ctx))
