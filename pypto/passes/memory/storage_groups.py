"""Storage groups shared by both memory planners (private): which tiles must be, or may be,
one buffer.

A loop's init, iter arg, yielded value and result end in one buffer, as do an ``if``'s
result and both branch values, every tile bound to one ``pl.MemRef`` declaration, and
``matmul_acc``'s accumulator and result (explicit copies are inserted first, so a flow that
cannot share storage keeps a ``tile.move``). Then a copy whose ends do not clash
disappears, and an elementwise result takes over an input that dies there.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping

from pypto._dataclass import dataclass
from pypto.errors import CompileError, SourceSpan
from pypto.ir.enums import MemorySpace
from pypto.ir.expr import Call, Expr, Var, as_var, tile_type
from pypto.ir.ops import get_op
from pypto.ir.stmt import Assign, For, Function, If, Stmt, Yield
from pypto.ir.types import MemRef, Type
from pypto.ir.visit import retype, rewrite, walk
from pypto.passes.memory.tile_storage import (
    ACCUMULATORS,
    Groups,
    Liveness,
    in_place,
    insert_copies,
    is_tile,
    viewed,
)

CAPACITY_FIELD = {
    "Vec": "ub_bytes",
    "Mat": "l1_bytes",
    "Left": "l0a_bytes",
    "Right": "l0b_bytes",
    "Acc": "l0c_bytes",
    "Bias": "bias_bytes",
}


@dataclass
class Buffer:
    root: str
    members: list[str]
    space: str
    slot_bytes: int
    slots: int
    start: int
    pinned: MemRef | None
    offset: int = 0
    partners: tuple[str, ...] = ()  # other groups in its slots (memory.rotate_carries)

    @property
    def nbytes(self) -> int:
        return self.slot_bytes * self.slots

    @property
    def roots(self) -> tuple[str, ...]:
        return (self.root, *self.partners)


# --- grouping ----------------------------------------------------------------------------------
def _force(groups: Groups, a: str, b: Expr, span: SourceSpan | None, why: str) -> None:
    """Tile ``a`` and the tile ``b`` (a Var in normal form) must be one buffer."""
    name = as_var(b).name
    if not groups.may_join(a, name) or groups.interferes(a, name):
        raise CompileError(why, span)
    groups.union(a, name)


def _forced_groups(fn: Function, groups: Groups) -> None:
    """Values that are one storage by construction: loop-carried tiles, if results,
    matmul_acc's accumulator."""
    for node in walk(fn.body):
        if isinstance(node, For):
            last = node.body[-1] if node.body else None
            yields = last.values if isinstance(last, Yield) else ()
            for it, r, y in zip(node.iter_args, node.results, yields):
                if is_tile(it.var):
                    for other in (it.init, y, r):
                        why = f"loop-carried tile {it.var.name!r} cannot keep one buffer around the loop"
                        _force(groups, it.var.name, other, node.span, why)
        elif isinstance(node, If):
            for body in (node.then_body, node.else_body):
                last = body[-1] if body else None
                for r, y in zip(node.results, last.values if isinstance(last, Yield) else ()):
                    if is_tile(r):
                        _force(groups, r.name, y, node.span, f"if-result {r.name!r} needs one buffer")
        elif isinstance(node, Assign) and isinstance(node.value, Call) and node.value.op in ACCUMULATORS:
            acc = node.value.var_arg("acc")
            why = (
                f"pl.{node.value.op.removeprefix('tile.')} updates its accumulator {acc.name!r} in place, so "
                "it cannot be used after this call (use the result instead)"
            )
            _force(groups, node.var.name, acc, node.span, why)
        elif isinstance(node, Assign) and isinstance(node.value, Call) and (view := viewed(node.value)):
            src = view[0]
            if is_tile(node.var):
                what = f"pl.{node.value.op.removeprefix('tile.')}"
                why = (
                    f"{what} returns {src.name!r}'s own storage, so {src.name!r} cannot be "
                    "written after this call, nor used after it when the call writes (use the result)"
                )
                _force(groups, node.var.name, src, node.span, why)


def _pin_declared(groups: Groups) -> None:
    first: dict[str, str] = {}
    for name in groups.live.order:
        ref = groups.memref.get(name)
        if ref is not None:
            groups.union(first.setdefault(ref.name, name), name)


def _try(groups: Groups, a: str, b: str) -> bool:
    same_space = groups.live.tile(a).memory == groups.live.tile(b).memory
    if same_space and groups.may_join(a, b) and not groups.interferes(a, b):
        groups.union(a, b)
        return True
    return False


def _coalesce(fn: Function, groups: Groups, copies: list[tuple[str, str]]) -> None:
    for dst, src in copies:  # a copy whose two ends may share a buffer disappears
        _try(groups, dst, src)
    for node in walk(fn.body):  # in place: an elementwise result over an input that dies there
        if isinstance(node, Assign) and is_tile(node.var) and isinstance(node.value, Call):
            for p, a in zip(get_op(node.value.op).params, node.value.args):
                if not (is_tile(a) and in_place(node.value.op, p.name, a.type, node.var.type)):
                    continue
                if _try(groups, node.var.name, a.name):
                    break


def buffers(groups: Groups) -> list[Buffer]:
    live, out = groups.live, []
    for root in groups.roots():
        members = sorted(groups.members[root], key=live.order.__getitem__)
        types = [live.tile(m) for m in members]
        spaces = {t.memory for t in types if t.memory is not None}
        if len(spaces) < len({t.memory for t in types}):  # one of them is unplaced
            raise CompileError(
                f"tile {root!r} has no memory space (InferMemorySpaces must run first)",
                live.spans[root],
            )
        if len(spaces) > 1:
            raise CompileError(
                f"tiles {', '.join(members)} share storage but live in different memory spaces "
                f"({', '.join(sorted(s.name for s in spaces))})",
                live.spans[root],
            )
        pinned = groups.memref[root]
        out.append(
            Buffer(
                root,
                members,
                spaces.pop().name,
                max(t.nbytes for t in types),
                pinned.slots if pinned else 1,
                live.order[members[0]],
                pinned,
            )
        )
    return out


def drop_copies(
    fn: Function, groups: Groups, copies: list[tuple[str, str]], also: frozenset[str] = frozenset()
) -> Function:
    """Deletes the copies whose two ends share a buffer, and those named in ``also``; their
    uses read the source."""
    gone = {dst: src for dst, src in copies if groups.find(dst) == groups.find(src) or dst in also}
    if not gone:
        return fn
    fn = dataclasses.replace(fn, body=_keep(fn.body, gone))
    names = {v.name: v for v in walk(fn) if isinstance(v, Var)}

    def source(x: object) -> Var | None:
        if not isinstance(x, Var) or x.name not in gone:
            return None
        name = x.name
        while name in gone:
            name = gone[name]
        return names[name]

    return rewrite(fn, source)


def _keep(body: tuple[Stmt, ...], gone: dict[str, str]) -> tuple[Stmt, ...]:
    out: list[Stmt] = []
    for s in body:
        if isinstance(s, Assign) and s.var.name in gone:
            continue
        if isinstance(s, For):
            s = dataclasses.replace(s, body=_keep(s.body, gone))
        elif isinstance(s, If):
            s = dataclasses.replace(s, then_body=_keep(s.then_body, gone), else_body=_keep(s.else_body, gone))
        out.append(s)
    return tuple(out)


def check_copies(fn: Function, copies: list[tuple[str, str]]) -> None:
    """A copy that stayed must be one the ISA can do: within a space, only Vec has one."""
    kept = {dst for dst, _ in copies}
    for node in walk(fn.body):
        if not (isinstance(node, Assign) and node.var.name in kept and isinstance(node.value, Call)):
            continue
        space = tile_type(node.var).memory
        if space is not MemorySpace.Vec:
            where = space.name if space else None
            raise CompileError(
                f"tile {node.value.var_arg('tile').name!r} in {where} must be copied to keep a "
                "loop-carried or merged value in one buffer, but that space has no on-chip copy; "
                "do not use the old value after the new one is computed",
                node.span,
            )


def group_storage(fn: Function) -> tuple[Function, list[tuple[str, str]], Groups]:
    """``fn`` with its flow copies, the copies, and the storage groups of its tiles."""
    fn, copies = insert_copies(fn)
    groups = Groups(Liveness(fn))
    _pin_declared(groups)
    _forced_groups(fn, groups)
    _coalesce(fn, groups, copies)
    return fn, copies, groups


def bind_storage(
    fn: Function,
    groups: Groups,
    copies: list[tuple[str, str]],
    bufs: list[Buffer],
    memref: Callable[[Buffer, Expr | None], MemRef],
    slots: Mapping[str, Expr | None] | None = None,
    gone: frozenset[str] = frozenset(),
) -> Function:
    """``fn`` with each tile typed with its buffer's ``memref(buffer, index)`` (index: the
    tile's own slot select of a declared MemRef, else its entry in ``slots``), the copies
    inside one buffer and those in ``gone`` deleted, and the pipeline groups dropped (either
    planner has used or does not need them)."""
    by_root = {root: b for b in bufs for root in b.roots}
    types: dict[str, Type] = {}
    for name, var in groups.live.vars.items():
        b = by_root[groups.find(name)]
        t = tile_type(var)
        own = t.memref.index if t.memref is not None and b.pinned is not None else None
        own = (slots or {}).get(groups.live.canon(name), own)
        types[name] = dataclasses.replace(t, memref=memref(b, own))
    fn = drop_copies(retype(fn, types), groups, copies, gone)
    check_copies(fn, copies)
    return dataclasses.replace(fn, pipeline_groups=())
