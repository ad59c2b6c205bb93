"""AllocateMemoryAddr (the PYPTO planner): lifetimes → first-fit reuse → addresses.

Tiles that must share storage form one buffer (a loop's init / iter arg / result, an
if's merged value and both branch values, ``t2 = t1``; every tile bound to one declared
``pl.MemRef``). A buffer lives from its first definition to its last use, extended over a
whole loop when it is used inside a loop it was defined outside of; declared MemRefs are
pinned for the whole kernel (N slots of the largest bound tile). Per memory space, buffers
are placed first-fit from address 0 at the platform's alignment; going past the space's
capacity is an error naming the function, the space, the bytes and the tiles.
Test: tests/passes/test_allocate_memory_addr.py
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from pypto.errors import CompileError
from pypto.ir.expr import Call, Var
from pypto.ir.ops import BINARY, UNARY
from pypto.ir.stmt import Assign, For, Function, If, Program, Stmt, Yield
from pypto.ir.types import MemRef, TileType
from pypto.ir.visit import nodes_of, retype
from pypto.passes.context import PassContext

_CAPACITY_FIELD = {
    "Vec": "ub_bytes",
    "Mat": "l1_bytes",
    "Left": "l0a_bytes",
    "Right": "l0b_bytes",
    "Acc": "l0c_bytes",
    "Bias": "bias_bytes",
}


_ELEMENTWISE = {f"tile.{n}" for n in UNARY} | {f"tile.{n}{s}" for n in BINARY for s in ("", "s")}


class MemoryCapacityError(CompileError):
    """Tiles that must be live together do not fit in their on-chip memory space."""


@dataclass
class _Buffer:
    members: list[str]
    space: str
    slot_bytes: int
    slots: int = 1
    start: int = 0
    end: int = 0
    declared: MemRef | None = None
    offset: int = 0

    @property
    def nbytes(self) -> int:
        return self.slot_bytes * self.slots


@dataclass
class _Lifetimes:
    """Positions of defs and uses in program order, and the loops around them."""

    pos: int = 0
    first: dict[str, int] = field(default_factory=dict)
    last: dict[str, int] = field(default_factory=dict)
    loops: list[tuple[int, int]] = field(default_factory=list)  # (start, end) positions
    tiles: dict[str, Var] = field(default_factory=dict)
    parent: dict[str, str] = field(default_factory=dict)
    inplace: list[tuple[int, str, list[str]]] = field(default_factory=list)  # (pos, out, inputs)

    def find(self, name: str) -> str:
        while self.parent.get(name, name) != name:
            name = self.parent[name]
        return name

    def union(self, a: str, b: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[rb] = ra

    def touch(self, node: object) -> None:
        for v in nodes_of(node, Var):
            if isinstance(v.type, TileType):
                self.tiles.setdefault(v.name, v)
                self.first.setdefault(v.name, self.pos)
                self.last[v.name] = self.pos

    def block(self, body: tuple[Stmt, ...]) -> None:
        for s in body:
            self.pos += 1
            if isinstance(s, For):
                self.for_(s)
            elif isinstance(s, If):
                self.if_(s)
            else:
                self.touch(s)
                if isinstance(s, Assign) and isinstance(s.value, Var) and isinstance(s.var.type, TileType):
                    self.union(s.value.name, s.var.name)
                elif isinstance(s, Assign) and isinstance(s.value, Call) and s.value.op == "tile.matmul_acc":
                    acc = s.value.arg("acc")
                    if isinstance(acc, Var):  # TMATMUL_ACC accumulates into its own buffer
                        self.union(acc.name, s.var.name)
                elif isinstance(s, Assign) and isinstance(s.value, Call) and s.value.op in _ELEMENTWISE:
                    inputs = [a.name for a in s.value.args if isinstance(a, Var) and a.type == s.var.type]
                    self.inplace.append((self.pos, s.var.name, inputs))

    def for_(self, s: For) -> None:
        start = self.pos
        for it in s.iter_args:
            self.touch(it)
            if isinstance(it.init, Var):
                self.union(it.init.name, it.var.name)
        self.block(s.body)
        self.pos += 1
        for it, r in zip(s.iter_args, s.results):
            if isinstance(it.var.type, TileType):  # the yield writes it back at the end of each trip
                self.last[it.var.name] = self.pos
            self.touch(r)
            self.union(it.var.name, r.name)
        self.loops.append((start, self.pos))

    def if_(self, s: If) -> None:
        for body in (s.then_body, s.else_body):
            self.block(body)
            last = body[-1] if body else None
            if isinstance(last, Yield):
                for r, v in zip(s.results, last.values):
                    if isinstance(v, Var) and isinstance(r.type, TileType):
                        self.union(r.name, v.name)
        self.pos += 1
        for r in s.results:
            self.touch(r)

    def reuse_in_place(self) -> None:
        """An elementwise op may write over an input that dies at that op (dst == src is
        legal on the vector unit), so ``y = exp(x)`` needs one buffer, not two."""
        end: dict[str, int] = {}
        for name in self.tiles:
            root = self.find(name)
            end[root] = max(end.get(root, 0), self.last[name])
        for pos, out, inputs in self.inplace:
            for name in inputs:
                root, out_root = self.find(name), self.find(out)
                declared = self.tiles[name].type.memref is not None
                if end.get(root) == pos and root != out_root and not declared:
                    self.union(root, out_root)
                    end[self.find(root)] = max(end.pop(root, 0), end.pop(out_root, 0))
                    break

    def extend_over_loops(self) -> None:
        """A value used inside a loop it was defined before must survive every iteration."""
        for start, end in self.loops:
            for name in self.tiles:
                if self.first[name] < start < self.last[name]:
                    self.last[name] = max(self.last[name], end)


def _buffers(fn: Function, life: _Lifetimes, end: int) -> list[_Buffer]:
    groups: dict[str, _Buffer] = {}
    for name, var in life.tiles.items():
        t = var.type
        assert isinstance(t, TileType)
        if t.memory is None:
            raise CompileError(
                f"tile {name!r} has no memory space (InferMemorySpaces must run first)", var.span
            )
        key = (
            f"memref:{t.memref.name}" if t.memref is not None and not t.memref.allocated else life.find(name)
        )
        buf = groups.get(key)
        if buf is None:
            buf = groups[key] = _Buffer([], t.memory.name, 0, start=life.first[name], end=life.last[name])
        if buf.space != t.memory.name:
            raise CompileError(
                f"tiles {buf.members[0]!r} and {name!r} share storage but live in different "
                f"memory spaces ({buf.space} vs {t.memory.name})",
                var.span,
            )
        buf.members.append(name)
        buf.slot_bytes = max(buf.slot_bytes, t.nbytes)
        buf.start, buf.end = min(buf.start, life.first[name]), max(buf.end, life.last[name])
        if key.startswith("memref:"):
            buf.declared, buf.slots, buf.start, buf.end = t.memref, t.memref.slots, 0, end  # pinned
    return list(groups.values())


def _align(n: int, a: int) -> int:
    return (n + a - 1) // a * a


def _place(buffers: list[_Buffer], align: int) -> int:
    """First-fit by start position; returns the high-water mark."""
    placed: list[_Buffer] = []
    peak = 0
    for buf in sorted(buffers, key=lambda b: (b.start, -b.nbytes)):
        live = sorted((b for b in placed if b.end >= buf.start), key=lambda b: b.offset)
        offset = 0
        for other in live:
            if offset + _align(buf.nbytes, align) <= other.offset:
                break
            offset = max(offset, _align(other.offset + other.nbytes, align))
        buf.offset = offset
        placed.append(buf)
        peak = max(peak, offset + buf.nbytes)
    return peak


def _check_capacity(fn: Function, space: str, bufs: list[_Buffer], peak: int, limit: int) -> None:
    if peak <= limit:
        return
    top = sorted(bufs, key=lambda b: b.offset + b.nbytes, reverse=True)[:6]
    tiles = ", ".join(f"{'/'.join(b.members)} ({b.nbytes} B at {b.offset})" for b in top)
    raise MemoryCapacityError(
        f"function {fn.name!r} needs {peak} B of {space} but {limit} B are available "
        f"({peak - limit} B over); largest live buffers: {tiles}",
        fn.span,
    )


def _allocate(fn: Function, ctx: PassContext) -> Function:
    life = _Lifetimes()
    life.block(fn.body)
    life.extend_over_loops()
    life.reuse_in_place()
    buffers = _buffers(fn, life, life.pos + 1)
    types = {}
    for space in sorted({b.space for b in buffers}):
        bufs = [b for b in buffers if b.space == space]
        peak = _place(bufs, int(ctx.platform.alignment_bytes))
        _check_capacity(fn, space, bufs, peak, int(getattr(ctx.platform, _CAPACITY_FIELD[space])))
        for k, b in enumerate(sorted(bufs, key=lambda b: b.offset)):
            for name in b.members:
                t = life.tiles[name].type
                ref = b.declared or MemRef(f"mem_{space.lower()}_{k}")
                ref = dataclasses.replace(ref, index=t.memref.index if t.memref else None)
                types[name] = dataclasses.replace(t, memref=ref.with_address(b.offset, b.slot_bytes))
    return retype(fn, types)


def allocate_memory_addr(program: Program, ctx: PassContext) -> Program:
    """Give every tile of every InCore function a MemRef with its offset and slot size."""
    fns = tuple(
        _allocate(f, ctx) if f.kind.is_incore and f.external_source is None else f for f in program.functions
    )
    return dataclasses.replace(program, functions=fns)
