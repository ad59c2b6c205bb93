"""Which tiles may share storage (private to AllocateMemoryAddr).

Three pieces, used in this order:

* :func:`insert_copies` makes every value flow that forces storage sharing explicit: a
  loop's init is copied into a fresh tile before the loop and each yielded tile is copied
  just before the ``Yield`` (an ``if``'s yields too). A forced group — init copy, iter arg,
  yield copy, result — is then interference-free by construction, and the planner removes
  every copy whose two ends end up in one buffer.
* :class:`Liveness` is backward dataflow over the structured body. A tile is live from its
  definition to its last use *on some path*, so the branches of an ``if`` never interfere
  with each other, and a value used inside a loop is live around the back edge. Two values
  clash when one is live where the other is written, or when an op reads one while writing
  the other and cannot work in place.
* :class:`Groups` is union-find over tiles that share one buffer, refusing clashing merges.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Iterable
from typing import TypeGuard

from pypto.errors import SourceSpan
from pypto.ir.bind import bind_call
from pypto.ir.enums import MemorySpace
from pypto.ir.expr import Call, Node, Var, tile_type
from pypto.ir.names import NameSupply
from pypto.ir.ops import BINARY, UNARY, get_op
from pypto.ir.stmt import Assign, Eval, For, Function, If, Stmt, Yield
from pypto.ir.types import MemRef, TileType, Type, same_shape_dtype
from pypto.ir.visit import nodes_of
from pypto.passes._scan import defined_names

# Ops whose result may be written over the named operands (the ISA reads each element
# before it writes it, so dst == src is legal).
INPLACE: dict[str, frozenset[str]] = {
    **{f"tile.{n}": frozenset({"x"}) for n in UNARY},
    **{f"tile.{n}": frozenset({"lhs", "rhs"}) for n in BINARY},
    **{f"tile.{n}s": frozenset({"lhs"}) for n in BINARY},
    **{f"tile.row_expand_{n}": frozenset({"x"}) for n in ("add", "sub", "mul", "div")},
    "tile.col_expand_mul": frozenset({"x"}),
    # exp(x - v): each row is x - v into dst, then exp of dst in place (isa/reduce.cpp)
    "tile.row_expand_expdif": frozenset({"x"}),
    "tile.col_expand_expdif": frozenset({"x"}),
    "tile.col_expand": frozenset({"x"}),
    "tile.move": frozenset({"tile"}),
    "tile.matmul_acc": frozenset({"acc"}),
    "tile.batch_matmul_acc": frozenset({"acc"}),
    "tile.gemv_acc": frozenset({"acc"}),
}


def in_place(op: str, param: str, operand: Type, result: Type) -> bool:
    """Whether ``op`` may write its result over ``operand`` (its parameter ``param``): an
    INPLACE op of one shape and dtype, or a cast between dtypes of one width (TCVT converts
    element i from the bytes it then writes; a wider result would run ahead of its reads,
    so only equal widths are safe, as the ISA's overlap check also says)."""
    if op == "tile.cast":
        if not (isinstance(operand, TileType) and isinstance(result, TileType)):
            return False
        return operand.shape == result.shape and operand.dtype.bits == result.dtype.bits
    return param in INPLACE.get(op, frozenset()) and same_shape_dtype(operand, result)


# Cube ops that add into their accumulator in place: the result *is* the accumulator.
ACCUMULATORS = frozenset({"tile.matmul_acc", "tile.batch_matmul_acc", "tile.gemv_acc"})

# Ops whose result *is* the named operand's storage (views, and writes into a window of it):
# the planner puts both in one buffer and never lets them clash. A slice outside Vec that
# FoldTileSlices kept is a window view too (a Vec slice is a copy).
VIEWS: dict[str, str] = {
    "tile.reshape": "x",
    "tile.set_validshape": "x",
    "tile.assemble": "dst",
    "tile.gather_row": "acc",
    "tile.slice": "x",
}
READ_ONLY_VIEWS = frozenset({"tile.reshape", "tile.set_validshape", "tile.slice"})


def viewed(call: object) -> tuple[Var, bool] | None:
    """(the tile whose storage ``call``'s result is, whether the call only reads it)."""
    if not isinstance(call, Call) or call.op not in VIEWS:
        return None
    src = call.arg(VIEWS[call.op])
    if not is_tile(src) or (call.op == "tile.slice" and tile_type(src).memory in (None, MemorySpace.Vec)):
        return None
    return src, call.op in READ_ONLY_VIEWS


def is_tile(v: object) -> TypeGuard[Var]:
    """True for a named tile (a ``Var`` of ``TileType``); narrows ``v`` to ``Var``."""
    return isinstance(v, Var) and isinstance(v.type, TileType)


def declared(t: TileType) -> MemRef | None:
    """The user's ``pl.MemRef`` binding of a tile type (None once planned or when absent)."""
    return t.memref if t.memref is not None and not t.memref.allocated else None


# --- copy insertion ------------------------------------------------------------------------------
class _Copier:
    def __init__(self, fn: Function) -> None:
        self.names = NameSupply(defined_names(fn.body) | {p.var.name for p in fn.params})
        self.copies: list[tuple[str, str]] = []  # (copy, source) in program order

    def copy(self, src: Var, span) -> tuple[Assign, Var]:
        assert isinstance(src.type, TileType)
        call, t = bind_call("tile.move", (src,), {"target_memory": src.type.memory}, span=span)
        name = self.names.fresh(f"{src.name}_cp")
        dst = Var(name, t, span=span)
        self.copies.append((name, src.name))
        return Assign(dst, call, span=span), dst

    def block(self, body: tuple[Stmt, ...]) -> tuple[Stmt, ...]:
        out: list[Stmt] = []
        for s in body:
            if isinstance(s, For):
                out.extend(self.for_(s))
            elif isinstance(s, If):
                then_body = self.yields(self.block(s.then_body), s.results, set())
                else_body = self.yields(self.block(s.else_body), s.results, set())
                out.append(dataclasses.replace(s, then_body=then_body, else_body=else_body))
            else:
                out.append(s)
        return tuple(out)

    def for_(self, s: For) -> list[Stmt]:
        pre: list[Stmt] = []
        iter_args = []
        for it in s.iter_args:
            if is_tile(it.var) and isinstance(it.init, Var):
                assign, c = self.copy(it.init, s.span)
                pre.append(assign)
                it = dataclasses.replace(it, init=c)
            iter_args.append(it)
        ivs = {it.var.name for it in s.iter_args}
        body = self.yields(self.block(s.body), tuple(it.var for it in s.iter_args), ivs)
        return [*pre, dataclasses.replace(s, body=body, iter_args=tuple(iter_args))]

    def yields(self, body: tuple[Stmt, ...], targets: tuple[Var, ...], ivs: set[str]) -> tuple[Stmt, ...]:
        """Copies before a trailing Yield. The yield is a parallel copy: a carried tile read
        by another position (a swap) is first saved to a temporary, before any is overwritten."""
        last = body[-1] if body else None
        if not isinstance(last, Yield):
            return body
        saves: list[Stmt] = []
        writes: list[Stmt] = []
        values = []
        for t, v in zip(targets, last.values):
            if is_tile(t) and isinstance(v, Var):
                if v.name in ivs:
                    assign, v = self.copy(v, last.span)
                    saves.append(assign)
                assign, v = self.copy(v, last.span)
                writes.append(assign)
            values.append(v)
        return (*body[:-1], *saves, *writes, dataclasses.replace(last, values=tuple(values)))


def insert_copies(fn: Function) -> tuple[Function, list[tuple[str, str]]]:
    """``fn`` with explicit copies at every forced storage flow, and the (copy, source) list."""
    c = _Copier(fn)
    return dataclasses.replace(fn, body=c.block(fn.body)), c.copies


# --- liveness ------------------------------------------------------------------------------------
class Liveness:
    """Clashes between tiles (by canonical name: ``t2 = t1`` makes t2 another name of t1)."""

    def __init__(self, fn: Function) -> None:
        self.alias: dict[str, str] = {}
        self.order: dict[str, int] = {}  # definition order, for placement
        self.vars: dict[str, Var] = {}
        self.spans: dict[str, SourceSpan | None] = {}
        self.clash: dict[str, set[str]] = defaultdict(set)
        # Tiles the user bound to a pl.MemRef: op results with the annotation. Loop and if
        # values that merely inherit the type from their init / branch are not pinned.
        self.bound: set[str] = set()
        self._scan(fn.body)
        self._block(fn.body, frozenset())

    def canon(self, name: str) -> str:
        return self.alias.get(name, name)

    def tile(self, name: str) -> TileType:
        """The type of the tile ``name`` (every value this analysis tracks is a tile)."""
        return tile_type(self.vars[name])

    def _def(self, v: Var, span: SourceSpan | None) -> None:
        self.vars[v.name] = v
        if v.name not in self.alias:
            self.order.setdefault(v.name, len(self.order))
            self.spans.setdefault(v.name, span or v.span)

    def _scan(self, body: tuple[Stmt, ...]) -> None:
        for s in body:
            if isinstance(s, Assign) and is_tile(s.var):
                if is_tile(s.value):
                    self.alias[s.var.name] = self.canon(s.value.name)
                elif declared(tile_type(s.var)) is not None:
                    self.bound.add(s.var.name)
                self._def(s.var, s.span)
            elif isinstance(s, For):
                for it in s.iter_args:
                    if is_tile(it.var):
                        self._def(it.var, s.span)
                self._scan(s.body)
                for r in s.results:
                    if is_tile(r):
                        self._def(r, s.span)
            elif isinstance(s, If):
                self._scan(s.then_body)
                self._scan(s.else_body)
                for r in s.results:
                    if is_tile(r):
                        self._def(r, s.span)

    def uses(self, node: Node | tuple) -> frozenset[str]:
        return frozenset(self.canon(v.name) for v in nodes_of(node, Var) if isinstance(v.type, TileType))

    def _defined(self, name: str, live: Iterable[str]) -> None:
        """``name`` is written while ``live`` values are still needed: they clash."""
        for u in live:
            if u != name:
                self.clash[name].add(u)
                self.clash[u].add(name)

    def _block(self, body: tuple[Stmt, ...], live: frozenset[str]) -> frozenset[str]:
        for s in reversed(body):
            live = self._stmt(s, live)
        return live

    def _stmt(self, s: Stmt, live: frozenset[str]) -> frozenset[str]:
        if isinstance(s, For):
            return self._for(s, live)
        if isinstance(s, If):
            return self._if(s, live)
        if isinstance(s, Assign):
            uses = self.uses(s.value)
            if is_tile(s.var) and s.var.name not in self.alias:
                self._defined(s.var.name, live - self._viewed(s))
                self._operands(s)
                live = live - {s.var.name}
            return live | uses
        if isinstance(s, (Eval, Yield)):
            return live | self.uses(s)
        return live

    def _viewed(self, s: Assign) -> frozenset[str]:
        """A read-only view writes nothing: it may live beside the tile it views."""
        v = viewed(s.value)
        return frozenset({self.canon(v[0].name)}) if v is not None and v[1] else frozenset()

    def _operands(self, s: Assign) -> None:
        """Operands an op reads while writing its result, when it cannot do so in place."""
        if not isinstance(s.value, Call):
            return
        view = VIEWS.get(s.value.op) if viewed(s.value) is not None else None
        for p, a in zip(get_op(s.value.op).params, s.value.args):
            if p.name == view:
                continue
            if is_tile(a) and not in_place(s.value.op, p.name, a.type, s.var.type):
                self._defined(s.var.name, {self.canon(a.name)})

    def _for(self, s: For, live_out: frozenset[str]) -> frozenset[str]:
        pairs = [(it.var.name, r.name) for it, r in zip(s.iter_args, s.results) if is_tile(it.var)]
        ivs = frozenset(iv for iv, _ in pairs)
        results = {r for _, r in pairs}
        # At the loop head an iteration may start (ivs are defined there) or the loop may exit
        # (results take the ivs' values); after the trailing yield control returns to the head.
        head = (live_out - results) | {iv for iv, r in pairs if r in live_out}
        while True:
            grown = head | self._block(s.body, head - ivs)
            if grown == head:
                break
            head = grown
        for iv in ivs:
            self._defined(iv, head)
        for r in results:
            self._defined(r, live_out)
        return (head - ivs) | self.uses(tuple(it.init for it in s.iter_args))

    def _if(self, s: If, live_out: frozenset[str]) -> frozenset[str]:
        results = {r.name for r in s.results if is_tile(r)}
        inner = live_out - results
        live = self._block(s.then_body, inner) | self._block(s.else_body, inner)
        for r in results:
            self._defined(r, live_out)
        return live


# --- groups ----------------------------------------------------------------------------------------
class Groups:
    """Tiles that share one buffer. A group holding a user's ``pl.MemRef`` is pinned to it."""

    def __init__(self, live: Liveness) -> None:
        self.live = live
        self.parent: dict[str, str] = {}
        self.members: dict[str, set[str]] = {n: {n} for n in live.order}
        self.clash: dict[str, set[str]] = {n: set(live.clash.get(n, ())) for n in live.order}
        self.memref: dict[str, MemRef | None] = {
            n: declared(live.tile(n)) if n in live.bound else None for n in live.order
        }

    def find(self, name: str) -> str:
        name = self.live.canon(name)
        while name in self.parent:
            name = self.parent[name]
        return name

    def interferes(self, a: str, b: str) -> bool:
        ra, rb = self.find(a), self.find(b)
        return ra != rb and bool(self.members[ra] & self.clash[rb] or self.members[rb] & self.clash[ra])

    def may_join(self, a: str, b: str) -> bool:
        """Storage of a pinned group is shared only when it is one plain slot."""
        ma, mb = self.memref[self.find(a)], self.memref[self.find(b)]
        if ma is not None and mb is not None:
            return ma.name == mb.name
        m = ma or mb
        return m is None or (m.slots == 1 and m.index is None)

    def union(self, a: str, b: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return
        self.parent[rb] = ra
        self.members[ra] |= self.members.pop(rb)
        self.clash[ra] |= self.clash.pop(rb)
        mb = self.memref.pop(rb)
        self.memref[ra] = self.memref[ra] or mb

    def roots(self) -> list[str]:
        return [n for n in self.live.order if n not in self.parent]
