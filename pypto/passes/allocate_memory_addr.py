"""AllocateMemoryAddr (the PYPTO planner): liveness → shared buffers → first-fit addresses.

Per InCore function:

1. Storage flows become explicit copies (``memory.tile_storage.insert_copies``; grouping is
   shared with the PTOAS planner in ``memory.storage_groups``): a loop's init,
   iter arg, yielded value and result must end in one buffer, as must an ``if``'s result
   and both branch values.
2. Path-aware liveness says which tiles clash (live at once, or read by an op that cannot
   write over them). Tiles are merged into buffers, never across a clash: the forced
   groups above, every tile bound to one declared ``pl.MemRef``, ``t2 = t1``, the
   accumulator of ``matmul_acc``; then each copy whose ends do not clash (the copy is
   deleted), then in-place reuse (``y = exp(x)`` writes over ``x`` when ``x`` dies there).
3. Per memory space, buffers are placed first-fit from address 0 at the platform's
   alignment, each clear of every buffer it clashes with; a declared ``pl.MemRef`` is
   pinned for the whole kernel (N slots of its largest tile). Going past the space's
   capacity is a :class:`MemoryCapacityError` naming the function, the space, the bytes,
   the limit and the tiles live together. In L1 (Mat), L0A (Left) and L0B (Right) no
   storage is reused while every tile fits, and otherwise a tile goes over the storage of
   the longest-dead tiles: a write over a dead tile would wait for that tile's pending read
   on another pipe (an L1 tile's move to L0, an L0 tile's matmul).

Copies that must stay are ``tile.move`` statements, so InsertSync orders them like any op.
The kernel's ``pipeline_groups`` are consumed here (the gate) and dropped.
Test: tests/passes/test_allocate_memory_addr.py
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from pypto.errors import MemoryCapacityError
from pypto.ir.expr import Expr
from pypto.ir.stmt import Function, Program
from pypto.ir.types import MemRef
from pypto.passes.context import PassContext
from pypto.passes.memory import map_generated_kernels
from pypto.passes.memory.pipeline_gate import (
    pipeline_shortfalls,
    reorder_for_depth,
    share_leftovers,
    share_storage,
)
from pypto.passes.memory.rotate_carries import rotate_buffers, rotations
from pypto.passes.memory.storage_groups import (
    CAPACITY_FIELD,
    Buffer,
    bind_storage,
    buffers,
    group_storage,
)
from pypto.passes.memory.tile_storage import Groups

__all__ = ["allocate_memory_addr"]


def _align(n: int, a: int) -> int:
    return (n + a - 1) // a * a


def _clashes(groups: Groups, a: Buffer, b: Buffer) -> bool:
    if a.pinned is not None or b.pinned is not None:
        return True
    return any(groups.interferes(x, y) for x in a.roots for y in b.roots)


# Spaces where reusing a dead tile's storage costs a false dependency: an L1 tile is written
# by MTE2 and read by MTE1, so a load placed over a tile whose move to L0 is still pending
# must wait for that move; an L0A/L0B tile is written by MTE1 and read by the cube, so an
# extract placed over the operand of a pending matmul waits for that matmul. There each tile
# gets its own storage while the space has room, else the storage of the longest-dead tiles.
_SPREAD = frozenset({"Mat", "Left", "Right"})


def _place_space(fn: Function, groups: Groups, bufs: list[Buffer], align: int, limit: int) -> None:
    if bufs and bufs[0].space in _SPREAD:
        spread = sum(_align(b.nbytes, align) for b in bufs) <= limit
        return _place(fn, groups, bufs, align, limit, spread=spread, oldest=not spread)
    return _place(fn, groups, bufs, align, limit)


def _place(
    fn: Function,
    groups: Groups,
    bufs: list[Buffer],
    align: int,
    limit: int,
    spread: bool = False,
    oldest: bool = False,
) -> None:
    """First fit: pinned buffers, then by first definition (larger first on ties). ``spread``:
    every buffer clear of every other (no reuse at all). ``oldest``: of the offsets where a
    buffer fits, the one over storage no placed buffer uses, else over the earliest-defined
    tiles (their pending reads are the likeliest done), so a loop's first load does not wait
    for a tile the code before the loop is still reading."""
    placed: list[Buffer] = []
    for buf in sorted(bufs, key=lambda b: (b.pinned is None, b.start, -b.nbytes)):
        busy = sorted((o for o in placed if spread or _clashes(groups, o, buf)), key=lambda o: o.offset)
        offset = _first_fit(buf, busy, align)
        if oldest and offset + buf.nbytes <= limit:
            offset = _oldest_fit(buf, busy, placed, align, limit, offset)
        buf.offset = offset
        if offset + buf.nbytes > limit:
            _overflow(fn, groups, buf, busy, limit)
        placed.append(buf)


def _first_fit(buf: Buffer, busy: list[Buffer], align: int) -> int:
    offset = 0
    for other in busy:
        if offset + buf.nbytes <= other.offset:
            break
        offset = max(offset, _align(other.offset + other.nbytes, align))
    return offset


def _overlaps(a: Buffer, offset: int, nbytes: int) -> bool:
    return a.offset < offset + nbytes and offset < a.offset + a.nbytes


def _oldest_fit(
    buf: Buffer, busy: list[Buffer], placed: list[Buffer], align: int, limit: int, first: int
) -> int:
    """The fitting offset (0 or just past a placed buffer) whose previous occupants were
    defined earliest; storage never used counts as oldest; ties go to the lower offset."""
    candidates = {first, *(_align(o.offset + o.nbytes, align) for o in placed)}
    best, best_age = first, None
    for off in sorted(candidates):
        if off + buf.nbytes > limit or any(_overlaps(o, off, buf.nbytes) for o in busy):
            continue
        age = max((o.start for o in placed if _overlaps(o, off, buf.nbytes)), default=-1)
        if best_age is None or age < best_age:
            best, best_age = off, age
    return best


def _overflow(fn: Function, groups: Groups, buf: Buffer, busy: list[Buffer], limit: int) -> None:
    need = buf.offset + buf.nbytes
    tiles = ", ".join(f"{'/'.join(b.members)} ({b.nbytes} B at {b.offset})" for b in busy)
    tiles += f"{', ' if tiles else ''}{'/'.join(buf.members)} ({buf.nbytes} B, does not fit)"
    raise MemoryCapacityError(
        f"function {fn.name!r} needs {need} B of {buf.space} but {limit} B are available "
        f"({need - limit} B over); tiles live at once: {tiles}",
        groups.live.spans.get(buf.root) or fn.span,
    )


# --- rewriting -----------------------------------------------------------------------------------
def _memref(bufs: list[Buffer]) -> Callable[[Buffer, Expr | None], MemRef]:
    """A buffer's MemRef: its declaration's, else ``mem_<space>_<k>`` (k: by offset in the
    space), at the buffer's offset."""
    ordinal: dict[str, int] = {}
    for space in {b.space for b in bufs}:
        for k, b in enumerate(sorted((b for b in bufs if b.space == space), key=lambda b: b.offset)):
            ordinal[b.root] = k

    def memref(b: Buffer, own: Expr | None) -> MemRef:
        ref = b.pinned or MemRef(f"mem_{b.space.lower()}_{ordinal[b.root]}", slots=b.slots)
        return dataclasses.replace(ref, index=own).with_address(b.offset, b.slot_bytes)

    return memref


def _allocate(fn: Function, ctx: PassContext) -> Function:
    src = fn
    fn, copies, groups = group_storage(src)
    share_leftovers(src, groups)
    # The pipelining capacity gate (memory.pipeline_gate): clones that do not fit share storage.
    limits = {s: int(getattr(ctx.platform, f)) for s, f in CAPACITY_FIELD.items()}
    short = pipeline_shortfalls(src, groups, ctx, limits)
    if short:
        fn, copies, groups = group_storage(reorder_for_depth(src, short))
        share_leftovers(src, groups)
        share_storage(groups, short)
    # A carried tile computed a trip ahead: its two groups become the two slots of one buffer.
    align = int(ctx.platform.alignment_bytes)
    rots = rotations(fn, groups, copies)
    bufs = rotate_buffers(buffers(groups), rots, align)
    for space in sorted({b.space for b in bufs}):
        limit = int(getattr(ctx.platform, CAPACITY_FIELD[space]))
        _place_space(fn, groups, [b for b in bufs if b.space == space], align, limit)
    slots = {m: index for r in rots for m, index in r.slots}
    gone = frozenset(r.copy for r in rots)
    return bind_storage(
        fn, groups, copies, bufs, _memref(bufs), slots, gone
    )  # the gate above used pipeline_groups


def allocate_memory_addr(program: Program, ctx: PassContext) -> Program:
    """Give every tile of every InCore function a MemRef with its offset and slot size."""
    return map_generated_kernels(program, lambda f: _allocate(f, ctx))
