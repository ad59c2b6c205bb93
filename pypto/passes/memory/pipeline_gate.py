"""The pipelining capacity gate of AllocateMemoryAddr (private).

ExpandPipelineLoops gave every clone of a ``pl.pipeline`` body its own tiles and moved the
loads of all clones ahead of the compute, so all F clones are live at once. Per memory
space the depth that fits is ``A = min(F, floor(free / per_stage))`` (sizes 32-byte
aligned), where ``per_stage`` is the storage one clone's tiles take and ``free`` is the
space's capacity minus the buffers that are live alongside the clones. When ``A < F``:

* PH-MR-001 says so (docs/double_buffering.md), once per group and space;
* the replicated block is reordered so clone ``k`` loads only after clone ``k - A`` has
  finished its compute (a depth-A software pipeline inside the F-clone body);
* clone ``k``'s tiles are given clone ``k mod A``'s storage (union of their buffers), so the
  stages A apart share storage and serialise, instead of running out of memory.

When ``A`` is 0 in a space (one stage's tiles there do not fit together, e.g. two 64 KiB
L0B operands of two matmuls) and the expansion hoisted some of them, hoisting cannot work at
any depth: those tiles go back right before their first use in their own clone, where
liveness lets them share storage as in a plain loop, and that space no longer limits the
depth of the others (``Shortfall.in_place``).

The groups are the kernel's ``pipeline_groups`` (written by ExpandPipelineLoops; the
planners drop them once storage is planned, as the reordering changes what they describe).
Test: tests/e2e/test_pipelining.py (the hint and its remedy) and
tests/passes/test_expand_pipeline_loops.py.
"""

from __future__ import annotations

import dataclasses

from pypto._dataclass import dataclass
from pypto.diagnostics.hints import PerfHint
from pypto.ir.expr import Var
from pypto.ir.stmt import Assign, For, Function, If, PipelineClone, PipelineGroup, Stmt
from pypto.ir.types import TileType
from pypto.ir.visit import nodes_of
from pypto.passes._scan import defined_names
from pypto.passes.context import PassContext
from pypto.passes.memory.tile_storage import Groups


def _align(n: int, a: int) -> int:
    return (n + a - 1) // a * a


def _bytes(groups: Groups, root: str, align: int) -> int:
    ref = groups.memref.get(root)
    size = max(groups.live.tile(m).nbytes for m in groups.members[root])
    return _align(size, align) * (ref.slots if ref is not None else 1)


def _space_name(groups: Groups, name: str) -> str | None:
    """The memory space of tile ``name`` (None when it is not a tracked, placed tile)."""
    name = groups.live.canon(name)
    space = groups.live.tile(name).memory if name in groups.live.vars else None
    return space.name if space is not None else None


def _roots(groups: Groups, clone: PipelineClone, space: str) -> list[str]:
    out: list[str] = []
    for name in clone.staged:
        if _space_name(groups, name) == space:
            root = groups.find(name)
            if root not in out:
                out.append(root)
    return out


def _lever(slot: int, depth: int, achieved: int, free: int, others: int, limit: int, align: int) -> str:
    if slot * depth > limit or others == 0:
        budget = free // depth // align * align
        return (
            f"This operand alone needs {slot * depth} B for depth {depth}; shrink the per-stage tile to "
            f"<= {budget} B, or reduce the pipeline depth (e.g. `pl.pipeline(stage=)`) to {achieved}."
        )
    return (
        f"Other buffers live alongside the loop take {others} B of the {limit} B; relieve those "
        f"(shorter lifetimes or smaller tiles), or reduce the pipeline depth (e.g. `pl.pipeline(stage=)`) "
        f"to {achieved}."
    )


def _depth_in(group: PipelineGroup, space: str, groups: Groups, ctx: PassContext, limit: int) -> int:
    """The achieved depth of ``group`` in ``space`` (0: not even one stage's tiles fit
    together); emits PH-MR-001 when it falls short."""
    align = int(ctx.platform.alignment_bytes)
    main = group.blocks[0]
    # A buffer every clone shares (an accumulator carried through the loop) is one buffer
    # however deep the pipeline: it is not a stage, it only takes space beside the stages.
    counts: dict[str, int] = {}
    for c in main:
        for r in _roots(groups, c, space):
            counts[r] = counts.get(r, 0) + 1
    first = [r for r in _roots(groups, main[0], space) if counts[r] == 1 or len(main) == 1]
    if not first:
        return group.depth
    mine = {r for r, n in counts.items() if n == 1 or len(main) == 1}
    per_stage = sum(_bytes(groups, r, align) for r in first)
    others = 0
    for root in groups.roots():
        if root in mine or _space_name(groups, root) != space:
            continue
        if groups.memref.get(root) is not None or any(groups.interferes(root, r) for r in first):
            others += _bytes(groups, root, align)
    free = max(0, limit - others)
    achieved = min(group.depth, free // per_stage)
    if achieved >= group.depth or achieved == 0:  # 0: the caller decides (see _in_place)
        return achieved
    lever = _lever(per_stage, group.depth, achieved, free, others, limit, align)
    message = (
        f"software pipelining requested depth {group.depth} for pipeline group {group.name} in {space}, "
        f"but only {achieved} of {group.depth} buffers fit ({per_stage} B per stage, {free} B free) — "
        f"stages {achieved} apart share storage and serialize. {lever}"
    )
    ctx.hints.emit(PerfHint("PH-MR-001", "MemoryReuse", message, group.span))
    return achieved


@dataclass(frozen=True)
class Shortfall:
    """What the gate changes for one pipeline group: the ``depth`` its stages get, and the
    memory spaces whose hoisted tiles go back in front of their first use (``in_place``)."""

    depth: int
    in_place: frozenset[str] = frozenset()


def _hoisted_in(group: PipelineGroup, space: str, groups: Groups) -> bool:
    """Whether the first clone hoisted a tile that lives in ``space``."""
    return any(_space_name(groups, name) == space for name in group.blocks[0][0].hoisted)


def _in_place_hint(group: PipelineGroup, spaces: frozenset[str], ctx: PassContext) -> None:
    where = ", ".join(sorted(spaces))
    message = (
        f"software pipelining of pipeline group {group.name}: one stage's tiles in {where} "
        "do not fit together, so they are not moved ahead of the compute; each is made just before its "
        "first use, as in a pl.range loop, and shares storage with the tiles already dead there. "
        "Smaller tiles per stage would let the next stage's copies overlap this stage's compute."
    )
    ctx.hints.emit(PerfHint("PH-MR-001", "MemoryReuse", message, group.span))


def pipeline_shortfalls(fn: Function, groups: Groups, ctx: PassContext, limits: dict) -> dict:
    """``{group: Shortfall}`` for this function's pipeline groups that do not fit. A space
    where not even one stage's tiles fit together, and the stage hoisted some of them (the
    L0 operands of two matmuls, say), gets them back in place: that is the storage a plain
    loop needs, and the space then no longer limits the depth."""
    short: dict[PipelineGroup, Shortfall] = {}
    for group in fn.pipeline_groups:
        depths = {space: _depth_in(group, space, groups, ctx, limit) for space, limit in limits.items()}
        in_place = frozenset(s for s, d in depths.items() if d == 0 and _hoisted_in(group, s, groups))
        depth = max(1, min((d for s, d in depths.items() if s not in in_place), default=group.depth))
        if in_place:
            _in_place_hint(group, in_place, ctx)
        if depth < group.depth or in_place:
            short[group] = Shortfall(depth, in_place)
    return short


# --- reordering and sharing ----------------------------------------------------------------------
def _owner(s: Stmt, block: tuple[PipelineClone, ...]) -> int | None:
    names = defined_names((s,)) | {v.name for v in nodes_of(s, Var)}
    owners = [k for k, c in enumerate(block) if not names.isdisjoint(c.defs)]
    return max(owners) if owners else None


def _space_of(s: Stmt) -> str | None:
    if isinstance(s, Assign) and isinstance(s.var.type, TileType) and s.var.type.memory is not None:
        return s.var.type.memory.name
    return None


def _just_before_use(tails: list[Stmt], late: list[Assign]) -> list[Stmt]:
    """``tails`` with each ``late`` statement right before the first tail that reads it, with
    the late statements that one reads in turn (an L1 load feeding a late L1 -> L0 copy), in
    their order. The rest of their inputs are defined before the clone's tails."""
    out: list[Stmt] = []
    for t in tails:
        need = {v.name for v in nodes_of(t, Var)}
        grew = True
        while grew:
            size = len(need)
            for s in late:
                if s.var.name in need:
                    need |= {v.name for v in nodes_of(s, Var)}
            grew = len(need) > size
        out += [s for s in late if s.var.name in need]
        late = [s for s in late if s.var.name not in need]
        out.append(t)
    return [*late, *out]


def _late_closure(
    heads: list[Assign], late: list[Assign], pos: dict[int, int]
) -> tuple[list[Assign], list[Assign]]:
    """A hoisted statement reading a late one is late too (it cannot run a stage ahead of
    its input): ``(heads, late)`` moved to that fixed point, late in body order (``pos``)."""
    late_names = {s.var.name for s in late}
    grew = True
    while grew:
        moved = [s for s in heads if late_names & {v.name for v in nodes_of(s, Var)}]
        heads = [s for s in heads if s not in moved]
        late += moved
        late_names |= {s.var.name for s in moved}
        grew = bool(moved)
    return heads, sorted(late, key=lambda s: pos[id(s)])


def _reorder(
    body: tuple[Stmt, ...], block: tuple[PipelineClone, ...], depth: int, in_place: frozenset[str]
) -> tuple[Stmt, ...]:
    """Heads of clone k+depth go right after the compute of clone k; hoisted tiles of the
    ``in_place`` spaces go back in front of their first use in their own clone."""
    slots: list[int] = []
    heads: list[list[Assign]] = [[] for _ in block]  # hoisted: run a stage ahead
    late: list[list[Assign]] = [[] for _ in block]  # hoisted, but put back before their first use
    tails: list[list[Stmt]] = [[] for _ in block]
    for j, s in enumerate(body):
        k = _owner(s, block)
        if k is None:
            continue
        slots.append(j)
        if isinstance(s, Assign) and s.var.name in block[k].hoisted:
            (late if _space_of(s) in in_place else heads)[k].append(s)
        else:
            tails[k].append(s)
    pos = {id(s): j for j, s in enumerate(body)}
    for k in range(len(block)):
        heads[k], late[k] = _late_closure(heads[k], late[k], pos)
    tails = [_just_before_use(t, lt) for t, lt in zip(tails, late)]
    order: list[Stmt] = [s for k in range(min(depth, len(block))) for s in heads[k]]
    for k in range(len(block)):
        order += [*tails[k], *(heads[k + depth] if k + depth < len(block) else [])]
    out = list(body)
    for j, s in zip(slots, order):
        out[j] = s
    return tuple(out)


def _visit(body: tuple[Stmt, ...], block: tuple[PipelineClone, ...], fall: Shortfall) -> tuple[Stmt, ...]:
    if not defined_names(tuple(s for s in body if isinstance(s, Assign))).isdisjoint(block[0].defs):
        return _reorder(body, block, fall.depth, fall.in_place)
    out: list[Stmt] = []
    for s in body:
        if isinstance(s, For):
            s = dataclasses.replace(s, body=_visit(s.body, block, fall))
        elif isinstance(s, If):
            then_body, else_body = _visit(s.then_body, block, fall), _visit(s.else_body, block, fall)
            s = dataclasses.replace(s, then_body=then_body, else_body=else_body)
        out.append(s)
    return tuple(out)


def reorder_for_depth(fn: Function, short: dict[PipelineGroup, Shortfall]) -> Function:
    """``fn`` with each short group's replicated blocks reordered to its achieved depth."""
    body = fn.body
    for group, fall in short.items():
        for block in group.blocks:
            body = _visit(body, block, fall)
    return dataclasses.replace(fn, body=body)


def share_storage(groups: Groups, short: dict[PipelineGroup, Shortfall]) -> None:
    """Clone k's tiles take clone (k mod depth)'s buffers (for groups short of depth), each
    pair only when the two never clash: a value one clone hands the next (a carried tile the
    body computes ahead, read by the next clone) is live beside that clone's own copy, and
    one buffer for both would overwrite it before its last read."""
    for group, fall in short.items():
        depth = fall.depth
        if depth >= group.depth:
            continue
        for block in group.blocks:
            for k in range(depth, len(block)):
                for mine, theirs in zip(block[k].staged, block[k % depth].staged):
                    if {groups.live.canon(mine), groups.live.canon(theirs)} <= groups.live.order.keys() and (
                        groups.may_join(theirs, mine) and not groups.interferes(theirs, mine)
                    ):
                        groups.union(theirs, mine)


def share_leftovers(fn: Function, groups: Groups) -> None:
    """A static leftover clone ``j`` runs the trip that clone ``j`` of the loop would run next,
    so it takes that clone's buffers: the double buffer rotates on into the leftover, whose
    loads then wait only for that clone's last reads (one trip back), never for the last
    clone's, and the storage after the loop is free for what follows."""
    for group in fn.pipeline_groups:
        main = group.blocks[0]
        for block in group.blocks[1:]:
            for j, clone in enumerate(block):
                for mine, theirs in zip(clone.staged, main[j % len(main)].staged):
                    if {groups.live.canon(mine), groups.live.canon(theirs)} <= groups.live.order.keys() and (
                        groups.may_join(theirs, mine) and not groups.interferes(theirs, mine)
                    ):
                        groups.union(theirs, mine)
