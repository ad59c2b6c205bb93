"""AllocateMemoryAddr (the PYPTO planner): liveness → shared buffers → first-fit addresses.

Per InCore function:

1. Storage flows become explicit copies (``_tile_storage.insert_copies``): a loop's init,
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
   the limit and the tiles live together.

Copies that must stay are ``tile.move`` statements, so InsertSync orders them like any op.
Test: tests/passes/test_allocate_memory_addr.py
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from pypto.errors import CompileError
from pypto.ir.expr import Call, Var
from pypto.ir.ops import get_op
from pypto.ir.stmt import Assign, For, Function, If, Program, Stmt, Yield
from pypto.ir.types import MemRef, TileType, same_shape_dtype
from pypto.ir.visit import retype, rewrite, walk
from pypto.passes._pipeline_gate import pipeline_shortfalls, reorder_for_depth, share_storage
from pypto.passes._tile_storage import INPLACE, Groups, Liveness, insert_copies, is_tile
from pypto.passes.context import PassContext

_CAPACITY_FIELD = {
    "Vec": "ub_bytes",
    "Mat": "l1_bytes",
    "Left": "l0a_bytes",
    "Right": "l0b_bytes",
    "Acc": "l0c_bytes",
    "Bias": "bias_bytes",
}


class MemoryCapacityError(CompileError):
    """Tiles that must be live together do not fit in their on-chip memory space."""


@dataclass
class _Buffer:
    root: str
    members: list[str]
    space: str
    slot_bytes: int
    slots: int
    start: int
    pinned: MemRef | None
    offset: int = 0

    @property
    def nbytes(self) -> int:
        return self.slot_bytes * self.slots


# --- grouping ----------------------------------------------------------------------------------
def _force(groups: Groups, a: str, b: str, span, why: str) -> None:
    if not groups.may_join(a, b) or groups.interferes(a, b):
        raise CompileError(why, span)
    groups.union(a, b)


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
                        _force(groups, it.var.name, other.name, node.span, why)
        elif isinstance(node, If):
            for body in (node.then_body, node.else_body):
                last = body[-1] if body else None
                for r, y in zip(node.results, last.values if isinstance(last, Yield) else ()):
                    if is_tile(r):
                        _force(groups, r.name, y.name, node.span, f"if-result {r.name!r} needs one buffer")
        elif isinstance(node, Assign) and isinstance(node.value, Call) and node.value.op == "tile.matmul_acc":
            acc = node.value.arg("acc")
            why = (
                f"pl.matmul_acc updates its accumulator {acc.name!r} in place, so it cannot be "
                "used after this call (use the result instead)"
            )
            _force(groups, node.var.name, acc.name, node.span, why)


def _pin_declared(groups: Groups) -> None:
    first: dict[str, str] = {}
    for name in groups.live.order:
        ref = groups.memref.get(name)
        if ref is not None:
            groups.union(first.setdefault(ref.name, name), name)


def _try(groups: Groups, a: str, b: str) -> bool:
    same_space = groups.live.vars[a].type.memory == groups.live.vars[b].type.memory
    if same_space and groups.may_join(a, b) and not groups.interferes(a, b):
        groups.union(a, b)
        return True
    return False


def _coalesce(fn: Function, groups: Groups, copies: list[tuple[str, str]]) -> None:
    for dst, src in copies:  # a copy whose two ends may share a buffer disappears
        _try(groups, dst, src)
    for node in walk(fn.body):  # in place: an elementwise result over an input that dies there
        if isinstance(node, Assign) and is_tile(node.var) and isinstance(node.value, Call):
            ok = INPLACE.get(node.value.op, frozenset())
            for p, a in zip(get_op(node.value.op).params, node.value.args):
                fits = p.name in ok and is_tile(a) and same_shape_dtype(a.type, node.var.type)
                if fits and _try(groups, node.var.name, a.name):
                    break


# --- placement ---------------------------------------------------------------------------------
def _buffers(groups: Groups) -> list[_Buffer]:
    live, out = groups.live, []
    for root in groups.roots():
        members = sorted(groups.members[root], key=live.order.__getitem__)
        types = [live.vars[m].type for m in members]
        spaces = {t.memory for t in types}
        if None in spaces:
            raise CompileError(
                f"tile {root!r} has no memory space (InferMemorySpaces must run first)", live.spans[root]
            )
        if len(spaces) > 1:
            raise CompileError(
                f"tiles {', '.join(members)} share storage but live in different memory spaces "
                f"({', '.join(sorted(s.name for s in spaces))})",
                live.spans[root],
            )
        pinned = groups.memref[root]
        out.append(
            _Buffer(
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


def _align(n: int, a: int) -> int:
    return (n + a - 1) // a * a


def _clashes(groups: Groups, a: _Buffer, b: _Buffer) -> bool:
    return a.pinned is not None or b.pinned is not None or groups.interferes(a.root, b.root)


def _place(fn: Function, groups: Groups, bufs: list[_Buffer], align: int, limit: int) -> None:
    """First fit: pinned buffers, then by first definition (larger first on ties)."""
    placed: list[_Buffer] = []
    for buf in sorted(bufs, key=lambda b: (b.pinned is None, b.start, -b.nbytes)):
        busy = sorted((o for o in placed if _clashes(groups, o, buf)), key=lambda o: o.offset)
        offset = 0
        for other in busy:
            if offset + buf.nbytes <= other.offset:
                break
            offset = max(offset, _align(other.offset + other.nbytes, align))
        buf.offset = offset
        if offset + buf.nbytes > limit:
            _overflow(fn, groups, buf, busy, limit)
        placed.append(buf)


def _overflow(fn: Function, groups: Groups, buf: _Buffer, busy: list[_Buffer], limit: int) -> None:
    need = buf.offset + buf.nbytes
    tiles = ", ".join(f"{'/'.join(b.members)} ({b.nbytes} B at {b.offset})" for b in busy)
    tiles += f"{', ' if tiles else ''}{'/'.join(buf.members)} ({buf.nbytes} B, does not fit)"
    raise MemoryCapacityError(
        f"function {fn.name!r} needs {need} B of {buf.space} but {limit} B are available "
        f"({need - limit} B over); tiles live at once: {tiles}",
        groups.live.spans.get(buf.root) or fn.span,
    )


# --- rewriting -----------------------------------------------------------------------------------
def _types(groups: Groups, bufs: list[_Buffer]) -> dict[str, TileType]:
    live, types = groups.live, {}
    by_root = {b.root: b for b in bufs}
    ordinal: dict[str, int] = {}
    for space in {b.space for b in bufs}:
        for k, b in enumerate(sorted((b for b in bufs if b.space == space), key=lambda b: b.offset)):
            ordinal[b.root] = k
    for name, var in live.vars.items():
        b = by_root[groups.find(name)]
        t = var.type
        own = t.memref.index if t.memref is not None and b.pinned is not None else None
        ref = b.pinned or MemRef(f"mem_{b.space.lower()}_{ordinal[b.root]}")
        ref = dataclasses.replace(ref, index=own).with_address(b.offset, b.slot_bytes)
        types[name] = dataclasses.replace(t, memref=ref)
    return types


def _drop_copies(fn: Function, groups: Groups, copies: list[tuple[str, str]]) -> Function:
    """Deletes the copies whose two ends share a buffer; their uses read the source."""
    gone = {dst: src for dst, src in copies if groups.find(dst) == groups.find(src)}
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


def _check_copies(fn: Function, copies: list[tuple[str, str]]) -> None:
    """A copy that stayed must be one the ISA can do: within a space, only Vec has one."""
    kept = {dst for dst, _ in copies}
    for node in walk(fn.body):
        if isinstance(node, Assign) and node.var.name in kept and node.var.type.memory.name != "Vec":
            src = node.value.arg("tile")
            raise CompileError(
                f"tile {src.name!r} in {node.var.type.memory.name} must be copied to keep a "
                "loop-carried or merged value in one buffer, but that space has no on-chip copy; "
                "do not use the old value after the new one is computed",
                node.span,
            )


def _group(fn: Function) -> tuple[Function, list[tuple[str, str]], Groups]:
    fn, copies = insert_copies(fn)
    groups = Groups(Liveness(fn))
    _pin_declared(groups)
    _forced_groups(fn, groups)
    _coalesce(fn, groups, copies)
    return fn, copies, groups


def _allocate(fn: Function, ctx: PassContext) -> Function:
    src = fn
    fn, copies, groups = _group(src)
    # The pipelining capacity gate (_pipeline_gate): clones that do not fit share storage.
    limits = {s: int(getattr(ctx.platform, f)) for s, f in _CAPACITY_FIELD.items()}
    short = pipeline_shortfalls(fn, groups, ctx, limits)
    if short:
        fn, copies, groups = _group(reorder_for_depth(src, short))
        share_storage(groups, short)
    bufs = _buffers(groups)
    for space in sorted({b.space for b in bufs}):
        limit = int(getattr(ctx.platform, _CAPACITY_FIELD[space]))
        _place(fn, groups, [b for b in bufs if b.space == space], int(ctx.platform.alignment_bytes), limit)
    fn = _drop_copies(retype(fn, _types(groups, bufs)), groups, copies)
    _check_copies(fn, copies)
    return fn


def allocate_memory_addr(program: Program, ctx: PassContext) -> Program:
    """Give every tile of every InCore function a MemRef with its offset and slot size."""
    fns = tuple(
        _allocate(f, ctx) if f.kind.is_incore and f.external_source is None else f for f in program.functions
    )
    return dataclasses.replace(program, functions=fns)
