"""InsertSync: set_flag / wait_flag between pipes so generated kernels are race-free.

Each op issues on one pipe (the op table's pipe rule) and reads/writes buffers: on-chip
address ranges from the assigned MemRefs, GM tensors by name. Pipes run in order, so only
cross-pipe conflicts need flags. Knowledge is tracked as vector clocks: ``known[P][Q]`` is
the last Q instruction P is known to run after; a wait merges the waited pipe's knowledge
(transitivity), so one flag can cover several hazards.

Loops are analysed twice. The first pass orders the body against everything before it and
against itself; the second replays the body after one iteration to find loop-carried
hazards (iteration k+1 against iteration k). Those use the double-buffer pattern: set the
flag once before the loop, wait before the consumer, set again at the end of the body,
and wait once after the loop so flag counts balance. Event ids: one per loop-carried pair
for the whole loop, the rest rotate within the platform's limit.
Test: tests/passes/test_insert_sync.py
"""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass, field

from pypto.errors import CompileError
from pypto.ir.enums import Pipe
from pypto.ir.expr import Call, Const, Literal, Var
from pypto.ir.ops import get_op
from pypto.ir.stmt import Assign, Eval, For, Function, If, Program, Stmt
from pypto.ir.types import TensorType, TileType
from pypto.passes.context import PassContext

PIPES = list(Pipe)
_WRITTEN_PARAMS = {"tile.store": ("output_tensor",), "tile.row_max": ("tmp",), "tile.row_sum": ("tmp",)}

Resource = tuple  # ("GM", name) or (space, lo, hi)
Hazard = tuple  # (statement index, src pipe, dst pipe)


@dataclass(frozen=True)
class _Access:
    res: Resource
    write: bool

    def conflicts(self, other: _Access) -> bool:
        if not (self.write or other.write) or self.res[0] != other.res[0]:
            return False
        if self.res[0] == "GM":
            return self.res[1] == other.res[1]
        return self.res[1] < other.res[2] and other.res[1] < self.res[2]


@dataclass
class _State:
    count: dict[Pipe, int] = field(default_factory=lambda: dict.fromkeys(PIPES, 0))
    known: dict[Pipe, dict[Pipe, int]] = field(
        default_factory=lambda: {p: dict.fromkeys(PIPES, 0) for p in PIPES}
    )
    history: list[tuple[Pipe, int, tuple[_Access, ...]]] = field(default_factory=list)

    def record(self, pipe: Pipe, accesses: tuple[_Access, ...]) -> None:
        self.count[pipe] += 1
        self.history.append((pipe, self.count[pipe], accesses))

    def wait(self, src: Pipe, dst: Pipe) -> None:
        """dst now runs after everything src has issued so far (and all src knew)."""
        for p in PIPES:
            self.known[dst][p] = max(self.known[dst][p], self.known[src][p])
        self.known[dst][src] = self.count[src]

    def unordered(self, pipe: Pipe, accesses: tuple[_Access, ...]) -> list[Pipe]:
        need: list[Pipe] = []
        for q, seq, old in self.history:
            if q is pipe or q in need or seq <= self.known[pipe][q]:
                continue
            if any(a.conflicts(b) for a in accesses for b in old):
                need.append(q)
        return need


def _tile_range(v: Var) -> Resource | None:
    t = v.type
    if not isinstance(t, TileType) or t.memref is None or not t.memref.allocated:
        return None
    ref, lo = t.memref, t.memref.offset
    if ref.slots > 1 and isinstance(ref.index, Const):
        lo += int(ref.index.value) * ref.size
        return (t.memory.name, lo, lo + ref.size)
    return (t.memory.name, lo, lo + ref.size * (ref.slots if ref.slots > 1 else 1))


def _instr(s: Stmt) -> tuple[Pipe, tuple[_Access, ...]] | None:
    """The pipe and the accesses of an op statement (None: no instruction)."""
    call = s.value if isinstance(s, (Assign, Eval)) else None
    if not isinstance(call, Call) or call.op.startswith("system."):
        return None
    op = get_op(call.op)
    types = {p.name: getattr(a, "type", None) for p, a in zip(op.params, call.args)}
    pipe = op.pipe(types)
    if pipe is None:
        return None
    written = _WRITTEN_PARAMS.get(call.op, ())
    acc: list[_Access] = []
    for p, a in zip(op.params, call.args):
        if isinstance(a, Var) and isinstance(a.type, TensorType):
            acc.append(_Access(("GM", a.name), p.name in written))
        elif isinstance(a, Var) and (r := _tile_range(a)) is not None:
            acc.append(_Access(r, p.name in written))
    if isinstance(s, Assign) and (r := _tile_range(s.var)) is not None:
        acc.append(_Access(r, True))
    return pipe, tuple(acc)


def _flag(op: str, src: Pipe, dst: Pipe, eid: int, span) -> Stmt:
    return Eval(Call(f"system.{op}", (Literal(src), Literal(dst), Const(eid)), span=span), span=span)


class _Syncer:
    def __init__(self, fn: Function, event_ids: int) -> None:
        self.fn, self.limit = fn, event_ids
        self.reserved: dict[tuple[Pipe, Pipe], list[int]] = {}
        self.rotation: dict[tuple[Pipe, Pipe], int] = {}

    def fresh_id(self, pair: tuple[Pipe, Pipe], span, reserve: bool = False) -> int:
        taken = self.reserved.setdefault(pair, [])
        free = [i for i in range(self.limit) if i not in taken]
        if not free:
            raise CompileError(
                f"{self.fn.name}: more than {self.limit} event ids needed between "
                f"{pair[0].name} and {pair[1].name}",
                span,
            )
        if reserve:
            taken.append(free[0])
            return free[0]
        k = self.rotation.get(pair, 0)
        self.rotation[pair] = k + 1
        return free[k % len(free)]

    def block(self, body: tuple[Stmt, ...], st: _State, emit: bool) -> tuple[list[Stmt], list[Hazard]]:
        """Orders `body` after `st`. emit: returns the body with flags; else the (index, src, dst)
        hazards found (for the loop-carried check)."""
        out: list[Stmt] = []
        found: list[tuple[int, Pipe, Pipe]] = []
        for i, s in enumerate(body):
            if isinstance(s, For):
                out.extend(self.for_(s, st, emit, found, i))
            elif isinstance(s, If):
                out.append(self.if_(s, st, emit, found, i))
            elif isinstance(s, Eval) and isinstance(s.value, Call) and s.value.op.startswith("system."):
                self.replay_flag(s.value, st)
                out.append(s)
            elif (ins := _instr(s)) is not None:
                pipe, acc = ins
                for q in st.unordered(pipe, acc):
                    if q in st.unordered(pipe, acc):  # an earlier wait may have covered it
                        found.append((i, q, pipe))
                        if emit:
                            eid = self.fresh_id((q, pipe), s.span)
                            out.append(_flag("set_flag", q, pipe, eid, s.span))
                            out.append(_flag("wait_flag", q, pipe, eid, s.span))
                        st.wait(q, pipe)
                st.record(pipe, acc)
                out.append(s)
            else:
                out.append(s)
        return out, found

    def replay_flag(self, call: Call, st: _State) -> None:
        if call.op == "system.wait_flag":
            st.wait(call.args[0].value, call.args[1].value)

    def if_(self, s: If, st: _State, emit: bool, found: list, i: int) -> Stmt:
        then_st, else_st = copy.deepcopy(st), copy.deepcopy(st)
        then_body, f1 = self.block(s.then_body, then_st, emit)
        else_body, f2 = self.block(s.else_body, else_st, emit)
        found += [(i, q, p) for _, q, p in f1 + f2]
        self._merge(st, then_st, else_st)
        return dataclasses.replace(s, then_body=tuple(then_body), else_body=tuple(else_body))

    @staticmethod
    def _merge(st: _State, a: _State, b: _State) -> None:
        """After a branch: every instruction either side issued may be pending; knowledge is
        what both sides guarantee."""
        for p in PIPES:
            st.count[p] = max(a.count[p], b.count[p])
            for q in PIPES:
                st.known[p][q] = min(a.known[p][q], b.known[p][q])
        st.history = a.history + [h for h in b.history if h not in a.history]

    def for_(self, s: For, st: _State, emit: bool, found: list, i: int) -> list[Stmt]:
        body, f1 = self.block(s.body, st, emit)  # pass 1: against the past and itself
        found += [(i, q, p) for _, q, p in f1]
        carried_st = copy.deepcopy(st)
        _, carried = self.block(tuple(body), carried_st, emit=False)  # pass 2: iteration k+1 vs k
        pairs: dict[tuple[Pipe, Pipe], int] = {}
        for idx, q, p in carried:
            pairs.setdefault((q, p), idx)
            found.append((i, q, p))
        for q, p in pairs:
            st.wait(q, p)
        if not emit or not pairs:
            return [dataclasses.replace(s, body=tuple(body))] if emit else []
        return self.carry(s, body, pairs)

    def carry(self, s: For, body: list[Stmt], pairs: dict[tuple[Pipe, Pipe], int]) -> list[Stmt]:
        before, after, waits = [], [], {}
        for (q, p), idx in pairs.items():
            eid = self.fresh_id((q, p), s.span, reserve=True)
            before.append(_flag("set_flag", q, p, eid, s.span))
            after.append(_flag("wait_flag", q, p, eid, s.span))
            waits.setdefault(idx, []).append(_flag("wait_flag", q, p, eid, s.span))
            body.append(_flag("set_flag", q, p, eid, s.span))
        new_body: list[Stmt] = []
        # indices in `pairs` refer to the body with pass-1 flags: insert the waits there
        for k, stmt in enumerate(body):
            new_body.extend(waits.get(k, []))
            new_body.append(stmt)
        return [*before, dataclasses.replace(s, body=tuple(new_body)), *after]


def insert_sync(program: Program, ctx: PassContext) -> Program:
    """Add the flags every InCore function needs between its pipes."""
    fns = []
    for f in program.functions:
        if f.kind.is_incore and f.external_source is None:
            body, _ = _Syncer(f, int(ctx.platform.event_ids)).block(f.body, _State(), emit=True)
            f = dataclasses.replace(f, body=tuple(body))
        fns.append(f)
    return dataclasses.replace(program, functions=tuple(fns))
