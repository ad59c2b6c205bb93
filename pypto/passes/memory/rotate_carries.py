"""Loop-carried tiles kept in two slots that trade places every trip (private to
AllocateMemoryAddr).

A carried tile whose next value is computed while the current one is still read (a block
fetched a trip ahead) cannot keep one buffer: the two clash, so the yield copies the next
value over the current one every trip. Instead, the two groups can be the two slots of one
buffer: trip ``t`` keeps the carried value's group in slot ``t % 2`` and the next value's in
slot ``(t + 1) % 2``, so the next value already sits where the next trip reads the carried
value, and the copy goes. A register allocator rotating registers across a loop does the
same, here without unrolling: a tile's slot is a run-time index of its ``MemRef``, and a
carried tile's address travels with its value (codegen yields tile descriptors).

That is safe when the two groups hold nothing the loop does not own: every tile of the next
value's group is made in the body, every tile of the carried group is made in the body or
before the loop (the tiles its initial value is made from, dead by then: slot 0), and the
loop's result is never read (after an odd trip count it would be in slot 1). Only innermost
``pl.range`` loops with a constant step and no ``pl.while_`` condition take part.
Test: tests/passes/test_allocate_memory_addr.py, tests/e2e/test_rotating_carries.py
"""

from __future__ import annotations

from pypto._dataclass import dataclass
from pypto.ir.enums import ForKind
from pypto.ir.expr import Const, Expr, Var, as_const, make_binop
from pypto.ir.stmt import For, Function, Yield
from pypto.ir.visit import nodes_of, walk
from pypto.passes._scan import defined_names
from pypto.passes.memory.storage_groups import Buffer
from pypto.passes.memory.tile_storage import Groups, is_tile


@dataclass(frozen=True)
class Rotation:
    """One carried tile's two groups as the two slots of one buffer."""

    carried: str  # root of the group of the carried value (its iter arg)
    ahead: str  # root of the group of the value the body yields
    copy: str  # the yield's copy, which goes
    slots: tuple[tuple[str, Expr | None], ...]  # each member's slot (None: either)


def _trip_parity(s: For, shift: int) -> Expr:
    """``(trip + shift) % 2`` where trip counts the loop's trips from 0."""
    trip: Expr = s.var
    if not (isinstance(s.start, Const) and as_const(s.start).value == 0):
        trip = make_binop("-", trip, s.start)
    step = int(as_const(s.step).value)
    if step != 1:
        trip = make_binop("//", trip, Const(step))
    if shift:
        trip = make_binop("+", trip, Const(shift))
    return make_binop("%", trip, Const(2))


def _loops(fn: Function) -> list[For]:
    """Innermost pl.range loops with a constant positive step, no condition, ending in a Yield."""
    out = []
    for s in walk(fn.body):
        if not (isinstance(s, For) and s.kind is ForKind.range and s.cond is None):
            continue
        if not (isinstance(s.step, Const) and int(as_const(s.step).value) > 0):
            continue
        if s.body and isinstance(s.body[-1], Yield) and not any(isinstance(n, For) for n in walk(s.body)):
            out.append(s)
    return out


def _uses(fn: Function, groups: Groups) -> dict[str, int]:
    """How often each tile name (canonical) appears in ``fn``, definitions included."""
    count: dict[str, int] = {}
    for v in nodes_of(fn.body, Var):
        if is_tile(v):
            name = groups.live.canon(v.name)
            count[name] = count.get(name, 0) + 1
    return count


def rotations(fn: Function, groups: Groups, copies: list[tuple[str, str]]) -> list[Rotation]:
    """The carried tiles of ``fn`` (with its flow copies) whose yield copy can go."""
    source = dict(copies)
    uses = _uses(fn, groups)
    order = groups.live.order
    taken: set[str] = set()
    out: list[Rotation] = []
    for s in _loops(fn):
        body = defined_names(s.body)
        last = s.body[-1]
        assert isinstance(last, Yield)
        for it, result, y in zip(s.iter_args, s.results, last.values):
            if not (is_tile(it.var) and isinstance(y, Var) and y.name in source):
                continue
            carried, ahead = groups.find(it.var.name), groups.find(source[y.name])
            if carried == ahead or {carried, ahead} & taken or uses.get(result.name) != 1:
                continue  # one buffer already, in another rotation, or the result is read
            if groups.memref[carried] is not None or groups.memref[ahead] is not None:
                continue
            if groups.live.tile(carried).memory != groups.live.tile(ahead).memory:
                continue
            if not groups.members[ahead] <= body:
                continue
            own = body | {it.var.name, result.name}
            before = {m for m in groups.members[carried] - own if order[m] < order[it.var.name]}
            if groups.members[carried] - own - before:
                continue
            here, next_ = _trip_parity(s, 0), _trip_parity(s, 1)
            # The loop's own values get the trip's slot; the carried value (and so its initial
            # value and the loop result, which have its type) is "either slot" to the sync
            # analysis. Codegen carries the tile's address with its value, so the initial
            # value's tiles, made at slot 0, are where the first trip reads them.
            edge = {it.var.name, result.name} | before
            slots = [(m, None if m in edge else here) for m in groups.members[carried]]
            slots += [(m, next_) for m in groups.members[ahead]]
            taken |= {carried, ahead}
            out.append(Rotation(carried, ahead, y.name, tuple(sorted(slots, key=lambda p: order[p[0]]))))
    return out


def rotate_buffers(bufs: list[Buffer], rots: list[Rotation], align: int) -> list[Buffer]:
    """``bufs`` with each rotation's two buffers made one of two slots (the larger size,
    rounded up to ``align`` so that slot 1 starts aligned too)."""
    by_root = {b.root: b for b in bufs}
    for r in rots:
        a, b = by_root[r.carried], by_root.pop(r.ahead)
        a.members = [*a.members, *b.members]
        a.slot_bytes, a.slots = -(-max(a.slot_bytes, b.slot_bytes) // align) * align, 2
        a.start = min(a.start, b.start)
        a.partners = (*a.partners, b.root)
    return list(by_root.values())
