"""The abstract core InsertSync executes (private): what each instruction touches, and what
each pipe is known to run after.

Knowledge is a vector clock per pipe: ``known[p][q] = n`` means pipe ``p`` runs after the
first ``n`` instructions of pipe ``q``. A ``set_flag(q, p)`` carries ``q``'s clock at the
point it issues (its own count included); the matching ``wait_flag`` merges that clock into
``p``'s — so one wait also covers everything ``q`` had waited for (transitivity). Flags
match first-in first-out per (src, dst, event), exactly like the simulator's counters.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from dataclasses import field

from pypto._dataclass import dataclass
from pypto.ir.enums import Pipe
from pypto.ir.expr import BinOp, Call, Const, Expr, UnaryOp, Var
from pypto.ir.ops import get_op
from pypto.ir.stmt import Assign, Eval, For, Function, If, Stmt, Yield
from pypto.ir.types import ScalarType, TensorType, TileType
from pypto.ir.visit import nodes_of

PIPES = list(Pipe)
N = len(PIPES)
INDEX = {p: i for i, p in enumerate(PIPES)}
_WRITTEN = {
    "tile.store": ("output_tensor",),
    "tile.row_max": ("tmp",),
    "tile.row_sum": ("tmp",),
    "tile.row_min": ("tmp",),
    "tensor.write": ("dst",),
    "tile.write": ("dst",),
}
_WHOLE_SPACE = 1 << 62

Env = Mapping[str, int | None]


@dataclass(frozen=True)
class Access:
    """``res`` is ``("GM", roots)`` (tensors by the parameters they may be) or ``(space, lo, hi)``."""

    res: tuple
    write: bool

    def conflicts(self, o: Access) -> bool:
        if not (self.write or o.write) or self.res[0] != o.res[0]:
            return False
        if self.res[0] == "GM":
            return bool(self.res[1] & o.res[1])
        return self.res[1] < o.res[2] and o.res[1] < self.res[2]

    def covers(self, o: Access) -> bool:
        """Whatever conflicts with ``o`` conflicts with ``self``."""
        if self.res[0] != o.res[0] or (o.write and not self.write):
            return False
        if self.res[0] == "GM":
            return self.res[1] >= o.res[1]
        return self.res[1] <= o.res[1] and o.res[2] <= self.res[2]


def evaluate(e: Expr, env: Env) -> int | None:
    """An index expression over known loop values (None when anything is unknown)."""
    if isinstance(e, Const) and isinstance(e.value, int):
        return int(e.value)
    if isinstance(e, Var):
        return env.get(e.name)
    if isinstance(e, UnaryOp) and e.op == "-":
        v = evaluate(e.operand, env)
        return None if v is None else -v
    if isinstance(e, BinOp) and e.op in ("+", "-", "*", "//", "%"):
        a, b = evaluate(e.lhs, env), evaluate(e.rhs, env)
        if a is None or b is None or (e.op in ("//", "%") and b == 0):
            return None
        return {"+": a + b, "-": a - b, "*": a * b, "//": a // b if b else 0, "%": a % b if b else 0}[e.op]
    return None


def tile_range(t: TileType, env: Env, opaque: AbstractSet = frozenset()) -> tuple:
    """The bytes a tile occupies: its slot when the slot index is known, else all slots."""
    ref, space = t.memref, t.memory.name if t.memory is not None else "?"
    if ref is None or ref.size is None:
        return (space, 0, _WHOLE_SPACE)  # no storage bound yet: assume it may be anywhere
    base = ref.offset
    if base is None:  # not allocated: a PTOAS region, disjoint from every other, offsets inside it
        space, base = f"{space}:{ref.name}", 0
    if ref.slots > 1:
        k = evaluate(ref.index, env) if ref.index is not None and ref.index not in opaque else None
        if k is None:
            return (space, base, base + ref.slots * ref.size)
        lo = base + k * ref.size
        return (space, lo, lo + t.nbytes)
    return (space, base, base + t.nbytes)


def gm_roots(fn: Function) -> dict[str, frozenset[str]]:
    """Which tensor parameters each tensor name may be (``t2 = pl.store(..., t)``, loops)."""
    roots = {p.var.name: frozenset({p.var.name}) for p in fn.params if isinstance(p.var.type, TensorType)}

    def of(e: object) -> frozenset[str]:
        return roots.get(e.name, frozenset({e.name})) if isinstance(e, Var) else frozenset()

    def block(body: tuple[Stmt, ...]) -> frozenset[str]:
        yielded: frozenset[str] = frozenset()
        for s in body:
            if isinstance(s, Assign) and isinstance(s.var.type, ScalarType):
                scalar_root(s, roots)
            elif isinstance(s, Assign) and isinstance(s.var.type, TensorType):
                v = s.value
                src = v.arg("output_tensor") if isinstance(v, Call) and v.op == "tile.store" else v
                roots[s.var.name] = of(src) or frozenset({s.var.name})
            elif isinstance(s, For):
                for it in s.iter_args:
                    roots[it.var.name] = of(it.init)
                for _ in range(2):  # a yielded tensor flows back into the iter arg
                    back = block(s.body)
                    for it in s.iter_args:
                        roots[it.var.name] = roots.get(it.var.name, frozenset()) | back
                for it, r in zip(s.iter_args, s.results):
                    roots[r.name] = roots.get(it.var.name, frozenset())
            elif isinstance(s, If):
                merged = block(s.then_body) | block(s.else_body)
                for r in s.results:
                    roots[r.name] = merged
            elif isinstance(s, Yield):
                yielded = frozenset().union(*(of(v) for v in s.values))
        return yielded

    block(fn.body)
    return roots


_SCALAR_READS = ("tensor.read", "tile.read")


def scalar_root(s: Assign, roots: dict[str, frozenset[str]]) -> None:
    """A scalar read from memory is a register the SCALAR pipe fills: values computed from it
    carry its name, so an op using them waits for the read (the scalar unit stalls on it)."""
    if isinstance(s.value, Call) and s.value.op in _SCALAR_READS:
        roots[s.var.name] = frozenset({f"sreg:{s.var.name}"})
        return
    found = frozenset().union(*(roots.get(v.name, frozenset()) for v in nodes_of(s.value, Var)))
    if found:
        roots[s.var.name] = found


def _register_reads(call: Call, roots: Mapping[str, frozenset[str]]) -> list[Access]:
    regs = frozenset().union(
        *(roots.get(v.name, frozenset()) for v in nodes_of(call.args, Var) if isinstance(v.type, ScalarType))
    )
    regs = frozenset(r for r in regs if r.startswith("sreg:"))
    return [Access(("GM", regs), False)] if regs else []


def instruction(
    s: Stmt, env: Env, roots: Mapping[str, frozenset[str]], opaque: AbstractSet = frozenset()
) -> tuple[int, tuple[Access, ...]] | None:
    """The pipe an op statement issues on and what it reads and writes (None: no instruction)."""
    call = s.value if isinstance(s, (Assign, Eval)) else None
    if not isinstance(call, Call) or call.op.startswith("system."):
        return None
    op = get_op(call.op)
    types = {p.name: getattr(a, "type", None) for p, a in zip(op.params, call.args)}
    if isinstance(s, Assign):
        types["result"] = s.var.type
    pipe = op.pipe(types)
    if pipe is None:
        return None
    written = _WRITTEN.get(call.op, ())
    acc: list[Access] = []
    for p, a in zip(op.params, call.args):
        if isinstance(a, Var) and isinstance(a.type, TensorType):
            acc.append(Access(("GM", roots.get(a.name, frozenset({a.name}))), p.name in written))
        elif isinstance(a, Var) and isinstance(a.type, TileType):
            acc.append(Access(tile_range(a.type, env, opaque), p.name in written))
    if isinstance(s, Assign) and isinstance(s.var.type, TileType):
        acc.append(Access(tile_range(s.var.type, env, opaque), True))
    acc.extend(_register_reads(call, roots))
    if isinstance(s, Assign) and call.op in _SCALAR_READS:
        acc.append(Access(("GM", frozenset({f"sreg:{s.var.name}"})), True))
    return INDEX[pipe], tuple(acc)


@dataclass(frozen=True)
class Site:
    """Where an instruction sat: per open block, its instance, statement index and trip."""

    inst: int
    idx: int
    it: int


@dataclass(frozen=True)
class Entry:
    pipe: int
    seq: int
    acc: tuple[Access, ...]
    site: tuple[Site, ...]
    order: int
    stmt: Stmt
    env: tuple[tuple[str, int | None], ...]


Snap = tuple[int, ...]  # a pipe's clock as a set_flag carries it


@dataclass
class State:
    count: list[int] = field(default_factory=lambda: [0] * N)
    known: list[list[int]] = field(default_factory=lambda: [[0] * N for _ in range(N)])
    fifo: dict[tuple[int, int, int], deque[Snap]] = field(default_factory=dict)
    history: list[Entry] = field(default_factory=list)

    def copy(self) -> State:
        return State(
            list(self.count),
            [list(k) for k in self.known],
            {k: deque(v) for k, v in self.fifo.items()},
            list(self.history),
        )

    def clock(self, q: int) -> Snap:
        c = list(self.known[q])
        c[q] = self.count[q]
        return tuple(c)

    def learn(self, p: int, snap: Snap) -> None:
        row = self.known[p]
        for r in range(N):
            if snap[r] > row[r]:
                row[r] = snap[r]

    def set_flag(self, key: tuple[int, int, int]) -> None:
        self.fifo.setdefault(key, deque()).append(self.clock(key[0]))

    def wait_flag(self, key: tuple[int, int, int]) -> None:
        queue = self.fifo.get(key)
        assert queue, f"wait without a set: {key}"  # flags are placed set-before-wait
        self.learn(key[1], queue.popleft())

    def record(self, e: Entry) -> None:
        """Adds ``e``; earlier entries of its pipe that ``e`` covers are no longer needed."""
        self.count[e.pipe] = e.seq
        keep = [h for h in self.history if h.pipe != e.pipe or not _covered(h, e)]
        self.history = keep + [e]

    def unordered(self, p: int, acc: tuple[Access, ...]) -> dict[int, Entry]:
        """Per other pipe, the latest earlier instruction that conflicts and is not ordered."""
        need: dict[int, Entry] = {}
        known = self.known[p]
        for h in self.history:
            if h.pipe == p or h.seq <= known[h.pipe] or (h.pipe in need and need[h.pipe].seq > h.seq):
                continue
            if any(a.conflicts(b) for a in acc for b in h.acc):
                need[h.pipe] = h
        return need


def _covered(old: Entry, new: Entry) -> bool:
    return all(any(a.covers(b) for a in new.acc) for b in old.acc)


def merge(a: State, b: State) -> State:
    """After two alternative paths: either side's instructions may be pending, and only what
    both sides guarantee is known."""
    out = State()
    out.count = [max(x, y) for x, y in zip(a.count, b.count)]
    out.known = [[min(x, y) for x, y in zip(ra, rb)] for ra, rb in zip(a.known, b.known)]
    for key in a.fifo.keys() | b.fifo.keys():
        qa, qb = a.fifo.get(key, deque()), b.fifo.get(key, deque())
        assert len(qa) == len(qb), f"unbalanced flags across paths: {key}"
        out.fifo[key] = deque(tuple(min(x, y) for x, y in zip(sa, sb)) for sa, sb in zip(qa, qb))
    seen = {id(h) for h in a.history}
    out.history = a.history + [h for h in b.history if id(h) not in seen]
    return out
