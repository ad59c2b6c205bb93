"""InsertSync: set_flag / wait_flag between pipes so generated kernels are race-free.

Each op issues on one pipe (the op table's pipe rule) and reads/writes buffers: on-chip
byte ranges from the assigned MemRefs (the slot a ``pl.MemRef(...)[i % 2]`` index selects,
when the loop values are known), GM tensors by the parameters they may be. Pipes run in
order, so only cross-pipe conflicts need flags.

The pass executes the kernel abstractly (``sync.sync_state``): vector clocks say which
instructions each pipe is known to run after, and flags behave as on the simulator. At
each instruction whose conflicting predecessors on another pipe are not ordered yet, it
adds one flag for the latest of them — the wait merges that pipe's clock, so a single wait
often covers several hazards. Placement, in the block where producer and consumer meet:

* same trip: ``set`` right after the producer's statement, ``wait`` right before the
  consumer's (a wait for a producer outside a loop goes before the loop, not into it);
* producer in an earlier trip of the loop (a loop-carried hazard): the double-buffer
  pattern — the flag is set ``d`` times before the loop, waited for before the consumer,
  set again after the producer, and waited for ``d`` times after the loop so counts
  balance; ``d`` is the trip distance (2 for ``slots=2`` indexed by ``i % 2``, so loads run
  one trip ahead). The ``d`` closing waits go at the end of the loop's block, or before the
  first later statement that must wait for that producer (a pipeline's leftover clone
  waits only for its own clone's storage, not for the whole loop);
* inside an ``if`` branch, for a producer before the branch: ``set`` + ``wait`` just
  before the consumer, so the other path never waits — unless the producer's pipe has
  issued more since the producer (a set there would wait for all of it): then ``set`` right
  after the producer and ``wait`` before the ``if``.

A carried flag's opening sets go at the start of the block holding its loop, so the loop's
first trip waits for nothing before the loop it does not touch; when its first trip does
conflict with a producer before the loop, the sets of the nearest carried flag of that pipe
pair move to just after that producer (one flag covers both hazards, and the rest of the
trip does not wait for it).

A carried flag of a loop nested in another loop is then lifted: its opening sets and closing
waits move around the enclosing loop (again and again outwards while they stay at the start
and end of a loop's body), so the first trip of the inner loop waits for the previous outer
trip's last inner trips — the same storage, freed by exactly the reads the flag orders —
instead of a drain of everything at the end of each outer trip (a GEMM's next block of C
then loads while this block's last matmuls and its store run). A statement after the inner
loop that needs those reads done (a pipeline's leftover clone) gets the closing waits and
then the opening sets again just before it. Lifting needs the inner loops' walks to end on
the same slot phases as the real loops. A lifted flag that a later walk must move back is
never lifted again.

A loop that runs exactly once (a pipeline's one-trip clone loop) is transparent: a wait goes
into it, right before its consumer (a set before the loop would hold back the whole loop),
and a set for a producer inside it goes right after that producer, not after the loop.

Loops are executed for enough trips to reach the steady state of their slot pattern
(``2 * period``); a new loop-carried flag restarts the walk, since it changes the first
trip; the restart keeps only the carried flags (the others are derived again: a carried
flag's opening sets may already order what an earlier walk's flag did) and puts every
carried flag's opening sets back at their earliest place. Event ids are assigned last:
flags of one pipe pair that may be outstanding at once get distinct ids within
``platform.event_ids``; when ids run out a flag falls back to the set-just-before-wait
form, and when even that one finds none free (a pipelined loop's copies holding every id of
the pair), the longest-lived flag outstanding across it does (a lifted one first goes back
around its own loop). Functions that already contain flags are left alone.
Test: tests/passes/test_insert_sync.py
"""

from __future__ import annotations

import dataclasses
import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import field

from pypto._dataclass import dataclass
from pypto.errors import CompileError, SourceSpan
from pypto.ir.bind import bind_call
from pypto.ir.expr import Call, Const, Literal, Var
from pypto.ir.stmt import Eval, For, Function, If, Program, Return, Stmt, Yield
from pypto.ir.types import TileType
from pypto.ir.visit import nodes_of
from pypto.passes._scan import with_functions
from pypto.passes.context import PassContext
from pypto.passes.sync.slot_period import MAX_PERIOD, sequence_period
from pypto.passes.sync.sync_state import PIPES, Entry, Site, State, gm_roots, instruction, merge

Path = tuple  # statement path from the function body: (3, "body", 0, "then", 2)
_MAX_RESTARTS = 256


@dataclass
class _Token:
    """One flag: where it is set and waited for; a loop-carried one also primes and drains."""

    src: int
    dst: int
    set_at: tuple[str, Path]  # ("pre" | "post", statement path)
    wait_at: Path  # the wait goes just before this statement
    span: SourceSpan | None = None
    loop: Path | None = None  # loop-carried: the loop statement
    depth: int = 0
    drain_at: tuple[str, Path] | None = None  # loop-carried: where the closing waits go
    prime_at: tuple[str, Path] | None = None  # loop-carried: where the opening sets go
    # loop-carried: the earliest place for the opening sets, the start of the loop's block
    # (what the code before the loop must finish first moves them later: prime_after)
    first_at: tuple[str, Path] | None = None
    # loop-carried: the loop statement whose block holds the opening sets and closing waits:
    # the flag's own loop, or an enclosing loop it was lifted out of (``lift``)
    level: Path | None = None
    home: tuple | None = None  # (first_at, drain_at) at the flag's own loop, once lifted
    pinned: bool = False  # lifted once and brought back: never lifted again
    # lifted: statements after its loop (in the enclosing loop's body) that read what its
    # producer's last trips freed: before each, the closing waits and then the opening sets
    relays: list[Path] = field(default_factory=list)

    def adjacent(self) -> None:
        """Fall back to set-just-before-wait (always valid, never overlaps another flag)."""
        self.set_at, self.loop, self.depth = ("pre", self.wait_at), None, 0

    def unlift(self) -> None:
        """Opening sets and closing waits back around the flag's own loop, for good (a lifted
        flag that had to come back is never lifted again, so the walks settle). Always valid:
        an opening set there comes after every set of the enclosing loop's earlier trips on
        the same pipe, so each wait only learns a later clock."""
        if self.home is not None:
            self.first_at, self.drain_at = self.home
            self.prime_at, self.level, self.home, self.pinned = self.first_at, self.loop, None, True


@dataclass
class _Plan:
    tokens: list[_Token] = field(default_factory=list)
    carried: dict[tuple[Path, int, int, int], _Token] = field(default_factory=dict)

    def lift(self, fn: Function, exact: dict[Path, bool]) -> bool:
        """Lifts every carried flag that may go one loop further out; True when any did."""
        lifted = False
        for t in self.carried.values():
            out = _lift_target(fn, t, exact)
            if out is not None:
                t.home = t.home or (t.first_at, t.drain_at)
                t.level, t.first_at, t.drain_at = out
                t.prime_at = t.first_at
                lifted = True
        return lifted

    def early_primes(self) -> None:
        """Every carried flag's opening sets back at their earliest place."""
        for t in self.carried.values():
            t.prime_at = t.first_at

    def forget_same_trip(self) -> None:
        """Keeps the loop-carried flags only: the next walk derives the others again. A new
        carried flag may cover a hazard an earlier walk ordered with a flag of its own: its
        primes before the loop are set on the producer's pipe after everything that pipe
        issued before the loop, so the first trip's wait also orders the consumer after the
        code before the loop (a pipeline's first load need not wait at the loop's entry)."""
        carried = {id(t) for t in self.carried.values()}
        self.tokens = [t for t in self.tokens if id(t) in carried]

    def flags(self) -> tuple[dict[Path, list], dict[Path, list]]:
        """Per statement path, the (op, token index) flags before and after it, in order."""
        pre: dict[Path, list] = defaultdict(list)
        post: dict[Path, list] = defaultdict(list)
        for k in range(len(self.tokens)):
            self.place(k, pre, post)
        return pre, post

    def place(self, k: int, pre: dict[Path, list], post: dict[Path, list]) -> None:
        t = self.tokens[k]
        if t.loop is not None:
            where, at = t.prime_at or ("pre", t.loop)
            (pre if where == "pre" else post)[at] += [("set", k)] * t.depth
            assert t.drain_at is not None  # a loop-carried token closes where its loop ends
            where, at = t.drain_at
            (pre if where == "pre" else post)[at] += [("wait", k)] * t.depth
            for at in t.relays:
                pre[at] += [("wait", k)] * t.depth + [("set", k)] * t.depth
        (pre if t.set_at[0] == "pre" else post)[t.set_at[1]].append(("set", k))
        pre[t.wait_at].append(("wait", k))


class _Restart(Exception):
    """A loop-carried flag changed: walk the function again from the start."""


@dataclass
class _Frame:
    kind: str  # "fn" | "loop" | "if"
    inst: int
    path: Path  # the block's path; its statements are path + (j,)
    idx: int = 0
    it: int = 0
    size: int = 0  # statements in the block
    closed: bool = False  # the block ends with a yield or return (nothing may follow it)
    once: bool = False  # a loop that runs exactly one trip (a pipeline's leftover, say)
    snaps: list = field(default_factory=list)  # state before each statement of this trip


class _Walker:
    def __init__(self, fn: Function, plan: _Plan) -> None:
        self.fn, self.plan = fn, plan
        self.pre, self.post = plan.flags()  # grows as same-trip flags are added
        self.roots = gm_roots(fn)
        self.st = State()
        self.env: dict[str, int | None] = {}
        self.frames: list[_Frame] = []
        self.insts = 0
        self.issued = 0
        self.opaque: set = set()  # slot indices whose pattern is not periodic enough to follow
        # per loop statement: its walk ends on the same trips (slot phases) as the real loop,
        # so a set in the walk's last trips stands for the real last trips' (see ``lift``)
        self.exact: dict[Path, bool] = {}
        self.by_inst: dict[int, _Frame] = {}  # every block instance walked, by Site.inst

    def run(self) -> None:
        self.block(self.fn.body, self.frame("fn", ()))

    def frame(self, kind: str, path: Path) -> _Frame:
        self.insts += 1
        fr = self.by_inst[self.insts] = _Frame(kind, self.insts, path)
        return fr

    # --- execution -----------------------------------------------------------------------
    def block(self, body: tuple[Stmt, ...], fr: _Frame) -> None:
        self.frames.append(fr)
        fr.snaps, fr.size = [], len(body)
        fr.closed = bool(body) and isinstance(body[-1], (Yield, Return))
        for j, s in enumerate(body):
            fr.idx = j
            fr.snaps.append((list(self.st.count), [list(k) for k in self.st.known]))
            path = fr.path + (j,)
            self.run_flags(self.pre.get(path, ()))
            self.stmt(s, path)
            self.run_flags(self.post.get(path, ()))
        self.frames.pop()

    def run_flags(self, flags: Iterable[tuple[str, int]]) -> None:
        for op, k in flags:
            t = self.plan.tokens[k]
            key = (t.src, t.dst, k)
            self.st.set_flag(key) if op == "set" else self.st.wait_flag(key)

    def stmt(self, s: Stmt, path: Path) -> None:
        if isinstance(s, For):
            self.for_(s, path)
        elif isinstance(s, If):
            self.if_(s, path)
        else:
            ins = instruction(s, self.env, self.roots, self.opaque)
            if ins is not None:
                self.issue(s, *ins)

    def issue(self, s: Stmt, pipe: int, acc: tuple) -> None:
        while need := self.st.unordered(pipe, acc):
            e = max(need.values(), key=lambda h: h.order)
            self.order(e, pipe, s.span)
            if e.seq > self.st.known[pipe][e.pipe]:  # placement could not cover it: be blunt
                self.adjacent(self.frames[-1], e.pipe, pipe, s.span, now=True)
        self.issued += 1
        site = tuple(Site(f.inst, f.idx, f.it) for f in self.frames)
        env = tuple(self.env.items())
        self.st.record(Entry(pipe, self.st.count[pipe] + 1, acc, site, self.issued, s, env))

    def for_(self, s: For, path: Path) -> None:
        trips = _trips(s)
        if trips == 0:
            return
        values = s.constant_range() if trips is not None else None
        period = self.period(s, trips) if trips is not None else 0
        walk = min(trips, 2 * period) if trips is not None else 2
        self.exact[path] = trips is not None and (trips - walk) % period == 0
        before = self.st.copy() if trips is None else None  # a dynamic loop may not run
        fr = self.frame("loop", path + ("body",))
        fr.once = trips == 1
        for t in range(walk):
            fr.it = t
            self.env[s.var.name] = values.start + t * values.step if values is not None else None
            self.block(s.body, fr)
        del self.env[s.var.name]
        self.widen(fr.inst, s.var.name)
        if before is not None:
            self.st = merge(self.st, before)

    def if_(self, s: If, path: Path) -> None:
        base, ends = self.st, []
        for name, body in (("then", s.then_body), ("else", s.else_body)):
            self.st = base.copy()
            self.block(body, self.frame("if", path + (name,)))
            ends.append(self.st)
        self.st = merge(*ends)

    def widen(self, inst: int, var: str) -> None:
        """After a loop, its instructions stand for every trip: forget the loop value."""
        hist = []
        for h in self.st.history:
            if any(x.inst == inst for x in h.site) and any(k == var for k, _ in h.env):
                env = {k: v for k, v in h.env if k != var}
                ins = instruction(h.stmt, env, self.roots, self.opaque)
                assert ins is not None  # h was issued, so its statement is an instruction
                h = dataclasses.replace(h, acc=ins[1], env=tuple(env.items()))
            hist.append(h)
        self.st.history = hist

    def period(self, s: For, trips: int) -> int:
        """Trips after which the loop's slot pattern repeats (slot indices using its variable)."""
        period = 1
        for v in nodes_of(s.body, Var):
            ref = v.type.memref if isinstance(v.type, TileType) else None
            if ref is None or ref.slots < 2 or ref.index is None or ref.index in self.opaque:
                continue
            names = {x.name for x in nodes_of(ref.index, Var)}
            if s.var.name not in names:
                continue
            p = sequence_period(ref.index, s, trips) if names == {s.var.name} else None
            if p is None or math.lcm(period, p) > MAX_PERIOD:
                self.opaque.add(ref.index)  # treated as "any slot": always safe
            else:
                period = math.lcm(period, p)
        return period

    # --- placement ------------------------------------------------------------------------
    def order(self, e: Entry, p: int, span) -> None:
        """Adds the flag that orders consumer pipe ``p`` after instruction ``e``."""
        q, site, frames = e.pipe, e.site, self.frames
        level = 0
        while level + 1 < min(len(site), len(frames)) and site[level + 1].inst == frames[level + 1].inst:
            level += 1
        w = len(frames) - 1
        while w > level and (frames[w].kind == "loop" or self.late_set(frames[w], e)):
            w -= 1  # hoist the wait out of inner loops (and of branches where a set would be late)
        v = w  # the wait itself goes back in through loops that run once: no later trip waits
        while v + 1 < len(frames) and frames[v + 1].kind == "loop" and frames[v + 1].once:
            v += 1
        wait_at = frames[v].path + (frames[v].idx,)
        fr, jp, trip = frames[level], site[level].idx, site[level].it
        if w > level:
            self.adjacent(frames[w], q, p, span, wait_at=wait_at)
        elif jp < fr.idx and self.moved_for(fr, level, site, q, p, jp):
            raise _Restart
        elif fr.kind == "loop" and trip < fr.it:
            self.carry(fr, q, p, jp, fr.it - trip, span)
        elif jp < fr.idx:
            at, snap = self.after_producer(fr, level, site, jp)
            self.new(_Token(q, p, ("post", at), wait_at, span))
            self.st.learn(p, _clock(snap, q))
        else:
            self.adjacent(fr, q, p, span)

    def after_producer(self, fr: _Frame, level: int, site: tuple, jp: int) -> tuple[Path, tuple]:
        """Where a set for a producer in statement ``jp`` of ``fr`` goes, and the state just
        after it: after that statement, or inside it after the producer itself while the way
        down runs through loops of one trip only (the set then runs once, as the wait does,
        and does not wait for the rest of the loop)."""
        at, snap = fr.path + (jp,), fr.snaps[jp + 1]
        for s in site[level + 1 :]:
            inner = self.by_inst.get(s.inst)
            if inner is None or not inner.once or s.idx + 1 >= len(inner.snaps):
                break
            at, snap = inner.path + (s.idx,), inner.snaps[s.idx + 1]
        return at, snap

    def late_set(self, fr: _Frame, e: Entry) -> bool:
        """In a branch, a set placed just before the consumer fires only once the producer's
        pipe has drained everything issued since (the next clone's L1 -> L0 extracts, say);
        then the wait goes before the ``if`` instead and the set right after the producer."""
        return fr.kind == "if" and self.st.count[e.pipe] > e.seq

    def adjacent(
        self, fr: _Frame, q: int, p: int, span, now: bool = False, wait_at: Path | None = None
    ) -> None:
        """Set just before the current statement of ``fr``, wait there too (or at ``wait_at``,
        further in through loops that run once)."""
        path = fr.path + (fr.idx,)
        self.new(_Token(q, p, ("pre", path), wait_at or path, span))
        self.st.learn(p, self.st.clock(q) if now else _clock(fr.snaps[fr.idx], q))

    def drain_before(self, fr: _Frame, q: int, p: int, jp: int, js: int) -> bool:
        """Moves the closing waits of loop ``jp``'s carried flag from producer ``js`` to just
        before the current statement (a lifted flag relays there instead: it is drained and
        primed again, so it stays balanced for the next trip of the enclosing loop); False
        when there is none or it is already there."""
        tok = self.plan.carried.get((fr.path + (jp, "body"), q, p, js))
        here = ("pre", fr.path + (fr.idx,))
        if tok is None or tok.drain_at == here or tok.loop is None or here[1] in tok.relays:
            return False
        if tok.home is not None:
            tok.relays.append(here[1])
        else:
            tok.drain_at = here
        return True

    def moved_for(self, fr: _Frame, level: int, site: tuple, q: int, p: int, jp: int) -> bool:
        """A carried flag's closing waits or opening sets moved to cover producer ``jp``."""
        if len(site) >= level + 2 and self.drain_before(fr, q, p, jp, site[level + 1].idx):
            return True
        return self.prime_after(fr, level, q, p, jp)

    def prime_after(self, fr: _Frame, level: int, q: int, p: int, jp: int) -> bool:
        """A consumer in the first trip of loop ``fr.idx`` conflicts with producer ``jp`` before
        the loop: moves the opening sets of the nearest carried flag of the pipe pair that the
        consumer waits for in that trip to just after the producer. False when there is none
        or its sets already follow the producer."""
        inner = self.frames[level + 1] if level + 1 < len(self.frames) else None
        loop = fr.path + (fr.idx,)
        if inner is None or inner.kind != "loop" or inner.it != 0 or inner.path != loop + ("body",):
            return False
        waits = [
            t
            for t in self.plan.carried.values()
            if t.loop == loop and (t.src, t.dst) == (q, p) and t.wait_at[len(inner.path)] <= inner.idx
        ]
        if not waits:
            return False
        tok = max(waits, key=lambda t: t.wait_at[len(inner.path)])
        after = ("post", fr.path + (jp,))
        if tok.prime_at is not None and tok.prime_at[0] == "post" and tok.prime_at[1][-1] >= jp:
            return False
        tok.unlift()
        tok.prime_at = after
        return True

    def carry(self, fr: _Frame, q: int, p: int, js: int, depth: int, span) -> None:
        # One flag per pipe pair, loop and producer statement: the clones of a replicated
        # pipeline body each keep their own, so clone k's load waits only for clone k's store.
        key = (fr.path, q, p, js)
        old = self.plan.carried.get(key)
        if old is None:
            body, outer = fr.path, self.frames[self.frames.index(fr) - 1]
            tok = _Token(
                q, p, ("post", body + (js,)), body + (fr.idx,), span, body[:-1], depth, level=body[:-1]
            )
            # the end of the loop's block: after its last statement, or before the yield or
            # return that ends it
            tok.drain_at = ("pre" if outer.closed else "post", outer.path + (outer.size - 1,))
            tok.first_at = ("pre", outer.path + (0,))
            self.plan.carried[key] = tok
            self.plan.tokens.append(tok)
        else:  # the same producer for another consumer: earliest consumer, nearest trip
            js = max(js, old.set_at[1][-1])
            merged = (("post", fr.path + (js,)), fr.path + (min(fr.idx, old.wait_at[-1]),))
            if merged == (old.set_at, old.wait_at) and depth >= old.depth:
                self.adjacent(self.frames[-1], q, p, span, now=True)  # already there: cannot help
                return
            old.set_at, old.wait_at, old.depth = *merged, min(depth, old.depth)
        self.plan.early_primes()  # a new carried flag may be the nearer one for a consumer
        raise _Restart

    def new(self, tok: _Token) -> None:
        """A same-trip flag takes effect from the next time its statements run."""
        self.plan.tokens.append(tok)
        self.plan.place(len(self.plan.tokens) - 1, self.pre, self.post)


def _clock(snap: tuple[list[int], list[list[int]]], q: int) -> tuple[int, ...]:
    count, known = snap
    c = list(known[q])
    c[q] = count[q]
    return tuple(c)


def _block(fn: Function, path: Path) -> tuple[Stmt, ...]:
    """The statements of the block at ``path`` ((), or a statement path plus its block name)."""
    body = fn.body
    for k in range(0, len(path), 2):
        s = body[path[k]]
        body = getattr(s, {"body": "body", "then": "then_body", "else": "else_body"}[path[k + 1]])
    return body


def _block_end(fn: Function, path: Path) -> tuple[str, Path]:
    """Where the closing waits of a loop in block ``path`` go: after its last statement, or
    before the yield or return that ends it."""
    body = _block(fn, path)
    closed = bool(body) and isinstance(body[-1], (Yield, Return))
    return ("pre" if closed else "post", path + (len(body) - 1,))


def _lift_target(fn: Function, t: _Token, exact: dict[Path, bool]) -> tuple | None:
    """(the enclosing loop, its block's start, its block's end) for a carried flag whose
    opening sets and closing waits may go one loop further out; None when they must stay.

    The opening sets at the start and the closing waits at the end of an enclosing loop's
    body make each trip of it drain the flag and prime it again: the first trip of the inner
    loop then waits for everything its producer pipe did before the trip, the enclosing
    loop's previous trip included. Lifted, that first trip instead waits for the sets of the
    previous enclosing trip's last inner trips: the same storage, freed by exactly the reads
    the flag orders, so the next trip's loads overlap this trip's tail. The walk then checks
    every hazard the drain used to cover, and flags what is still unordered."""
    if t.loop is None or t.pinned or t.prime_at != t.first_at:
        return None
    level = t.level or t.loop
    if len(level) < 3 or level[-2] != "body" or t.drain_at != _block_end(fn, level[:-1]):
        return None
    loops = [t.loop[:k] for k in range(len(level), len(t.loop) + 1, 2)]
    if not all(exact.get(p, False) for p in loops):
        return None
    outer = level[:-2]
    return outer, ("pre", outer[:-1] + (0,)), _block_end(fn, outer[:-1])


def _trips(s: For) -> int | None:
    if s.cond is not None:  # a pl.while_ runs until its condition fails: unknown, maybe zero
        return None
    if all(isinstance(b, Const) for b in (s.start, s.stop, s.step)):
        return len(s.constant_range() or ())
    return None


# --- emission ------------------------------------------------------------------------------------
def _flag_stmt(op: str, t: _Token, eid: int) -> Stmt:
    args = (Literal(PIPES[t.src]), Literal(PIPES[t.dst]), Const(eid))
    call, _ = bind_call(f"system.{op}_flag", list(args), span=t.span)
    return Eval(call, span=t.span)


def _emit(body: tuple[Stmt, ...], path: Path, plan: _Plan, ids: dict[int, int], trace: list) -> tuple:
    pre, post = plan.flags()

    def one(flags: list, out: list[Stmt]) -> None:
        for op, k in flags:
            trace.append(k)
            out.append(_flag_stmt(op, plan.tokens[k], ids.get(k, 0)))

    def block(stmts: tuple[Stmt, ...], bpath: Path) -> tuple[Stmt, ...]:
        out: list[Stmt] = []
        for j, s in enumerate(stmts):
            p = bpath + (j,)
            one(pre.get(p, []), out)
            if isinstance(s, For):
                s = dataclasses.replace(s, body=block(s.body, p + ("body",)))
            elif isinstance(s, If):
                then_body, else_body = block(s.then_body, p + ("then",)), block(s.else_body, p + ("else",))
                s = dataclasses.replace(s, then_body=then_body, else_body=else_body)
            out.append(s)
            one(post.get(p, []), out)
        return tuple(out)

    return block(body, path)


def _event_ids(plan: _Plan, body: tuple[Stmt, ...], limit: int, fn: Function) -> dict[int, int]:
    """Flags of one pipe pair whose lifetimes (first to last appearance) overlap get distinct
    ids; a flag that finds none free falls back to set-just-before-wait and we try again."""
    while True:
        trace: list[int] = []
        _emit(body, (), plan, {}, trace)
        first: dict[int, int] = {}
        last: dict[int, int] = {}
        for pos, k in enumerate(trace):
            first.setdefault(k, pos)
            last[k] = pos
        ids, failed = _color(plan, first, last, limit)
        if failed is None:
            return ids
        tok = plan.tokens[failed]
        if not _adjacent(tok):
            _shorten(tok)
            continue
        # Already as short as a flag gets: the flags outstanding across it give way instead,
        # the longest-lived first (a pipelined loop's copies can hold every id of a pipe pair).
        blockers = [
            k for k in first
            if k != failed and _same_pair(plan.tokens[k], tok) and first[k] <= first[failed] < last[k]
            and not _adjacent(plan.tokens[k])
        ]  # fmt: skip
        if not blockers:
            raise CompileError(
                f"{fn.name}: more than {limit} flags between {PIPES[tok.src].name} and "
                f"{PIPES[tok.dst].name} are outstanding at once (platform event_ids = {limit})",
                tok.span,
            )
        _shorten(plan.tokens[max(blockers, key=lambda k: last[k] - first[k])])


def _adjacent(t: _Token) -> bool:
    return t.home is None and t.loop is None and t.set_at == ("pre", t.wait_at)


def _same_pair(a: _Token, b: _Token) -> bool:
    return (a.src, a.dst) == (b.src, b.dst)


def _shorten(t: _Token) -> None:
    """A lifted flag goes back around its own loop; any other becomes set-just-before-wait."""
    if t.home is not None:
        t.unlift()
    else:
        t.adjacent()


def _color(plan: _Plan, first: dict, last: dict, limit: int) -> tuple[dict[int, int], int | None]:
    ids: dict[int, int] = {}
    active: dict[tuple[int, int], list[int]] = defaultdict(list)
    for k in sorted(first, key=first.__getitem__):
        t = plan.tokens[k]
        pair = (t.src, t.dst)
        active[pair] = [a for a in active[pair] if last[a] > first[k]]
        free = sorted(set(range(limit)) - {ids[a] for a in active[pair]})
        if not free:
            return ids, k
        ids[k] = free[0]
        active[pair].append(k)
    return ids, None


_FLAG_OPS = ("system.set_flag", "system.wait_flag", "system.pipe_barrier")


def _has_flags(fn: Function) -> bool:
    return any(c.op in _FLAG_OPS for c in nodes_of(fn.body, Call))


def _sync(fn: Function, limit: int) -> Function:
    plan = _Plan()
    for _ in range(_MAX_RESTARTS):
        walker = _Walker(fn, plan)
        try:
            walker.run()
        except _Restart:
            plan.forget_same_trip()
            continue
        if not plan.lift(fn, walker.exact):
            break
        plan.forget_same_trip()
    else:
        raise CompileError(f"{fn.name}: synchronisation did not settle (internal error)", fn.span)
    ids = _event_ids(plan, fn.body, limit, fn)
    return dataclasses.replace(fn, body=_emit(fn.body, (), plan, ids, []))


def insert_sync(program: Program, ctx: PassContext) -> Program:
    """Add the flags every InCore function needs between its pipes."""
    limit = int(ctx.platform.event_ids)
    fns = tuple(
        _sync(f, limit) if f.kind.is_incore and f.external_source is None and not _has_flags(f) else f
        for f in program.functions
    )
    return with_functions(program, fns)
