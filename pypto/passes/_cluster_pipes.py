"""The cross-core pipes of a mixed ``pl.at`` scope, inserted by the compiler (private to
SplitClusterKernels).

In a scope that mixes cube and vector work, a value crosses cores exactly where a tile moves
between the two sides: ``pl.move(acc, target_memory=pl.Mem.Vec)`` (Acc → Vec) and
``pl.move(v, target_memory=pl.Mem.Mat)`` (Vec → Mat). Each such move becomes a push on the
producing core (right after the statement that computed the tile, when that is in the same
block) and a pop on the consuming one (where the move was), each crossing site on a pipe of
its own, and the popped tile's slot is freed right after its last use in the block that
popped it — so every pop has its push in the same trip
of the same loops, every slot is returned, and the ring (``tpipe_slots`` deep, from the
platform table, or the scope's ``pl.cross_core_slot(slot_num=n)``: each push names the depth)
can only make the producer wait, never deadlock. The pipe copies the tile,
so the producer may reuse its buffer as soon as the push has drained: race-free by
construction, with the intra-core syncs InsertSync adds around the push and the pop.

A Mat tile moved to Vec (``pl.move(m, target_memory=pl.Mem.Vec)``) has no path at all — L1
reaches neither UB nor GM — so it is routed from where the Mat tile came from first: the GM
window it was loaded from is loaded again into Vec, a product moved to Mat crosses itself
(Acc → Vec), and a Mat tile another was inserted into (``pl.tile.assemble``) is both routed
and inserted again in Vec. Anything else is refused with its line.
"""

from __future__ import annotations

import dataclasses

from pypto.errors import CompileError
from pypto.ir.bind import bind_call
from pypto.ir.enums import MemorySpace, SplitMode
from pypto.ir.expr import Call, Expr, Var, tile_type, type_of
from pypto.ir.names import NameSupply
from pypto.ir.stmt import Assign, Eval, For, If, Stmt
from pypto.ir.types import TileType
from pypto.ir.visit import nodes_of, walk
from pypto.passes._cluster_sides import CUBE_SPACES
from pypto.passes._scan import defined_names
from pypto.passes.context import PassContext


def crossing(s: Stmt) -> str | None:
    """ "to_aiv" / "to_aic" for a move across the cluster's cores, else None."""
    if not (isinstance(s, Assign) and isinstance(s.value, Call) and s.value.op == "tile.move"):
        return None
    src, dst = type_of(s.value.arg("tile")), s.var.type
    if not (isinstance(src, TileType) and isinstance(dst, TileType)):
        return None
    if src.memory is MemorySpace.Acc and dst.memory is MemorySpace.Vec:
        return "to_aiv"
    if src.memory is MemorySpace.Vec and dst.memory in CUBE_SPACES:
        return "to_aic"
    return None


def _call(op: str, args: list, kwargs: dict, span) -> Call:
    call, _ = bind_call(op, args, kwargs, span=span)
    return call


def _cross(s: Assign, way: str, split: int, pid: int, slots: int) -> tuple[Eval, Assign]:
    """The push and the pop replacing one crossing move, on pipe ``pid`` of its direction."""
    assert isinstance(s.value, Call)  # a tile.move between tiles (see crossing)
    src = s.value.arg("tile")
    src_t, dst_t = type_of(src), s.var.type
    assert isinstance(src_t, TileType) and isinstance(dst_t, TileType)
    span = s.span
    kw = {"split": split, "id": pid}
    if way == "to_aiv":
        push = _call("tile.tpush_to_aiv", [src], {**kw, "slots": slots}, span)
        pop = _call("tile.tpop_from_aic", [], {"shape": list(src_t.shape), "dtype": src_t.dtype, **kw}, span)
        return Eval(push, span=span), Assign(s.var, pop, span=span)
    if dst_t.memory is not MemorySpace.Mat:
        where = getattr(dst_t.memory, "name", dst_t.memory)
        raise CompileError(
            f"a Vec tile moves to {where} across the cluster's cores; the pipe delivers "
            "into Mat: move it to pl.Mem.Mat, then on to Left/Right",
            span,
        )
    push = _call("tile.tpush_to_aic", [src], {**kw, "slots": slots}, span)
    pop = _call("tile.tpop_from_aiv", [], {"shape": list(dst_t.shape), "dtype": dst_t.dtype, **kw}, span)
    return Eval(push, span=span), Assign(s.var, pop, span=span)


def _free(name: Var, way: str, split: int, pid: int, span) -> Stmt:
    op = "tile.tfree_to_aic" if way == "to_aiv" else "tile.tfree_to_aiv"
    return Eval(_call(op, [name], {"split": split, "id": pid}, span), span=span)


def _uses(s: Stmt, name: str) -> bool:
    return any(v.name == name for v in nodes_of(s, Var))


class _Ids:
    """One pipe per crossing site and direction: tiles of different shapes never share a
    ring, and each ring's pushes and pops pair up in program order on both cores."""

    def __init__(self, limit: int, slots: int) -> None:
        self.next = {"to_aiv": 0, "to_aic": 0}
        self.limit = limit
        self.slots = slots  # every pipe's ring depth (0: the platform's)

    def take(self, way: str, span) -> int:
        pid = self.next[way]
        if pid >= self.limit:
            raise CompileError(
                f"more than {self.limit} tiles cross cores in one direction (the platform has "
                f"{self.limit} pipe ids per direction); move fewer distinct tiles across",
                span,
            )
        self.next[way] += 1
        return pid


def _block(body: tuple[Stmt, ...], split: int, ids: _Ids) -> tuple[Stmt, ...]:
    out: list[Stmt] = []
    pending: list[tuple[Var, str, int, object]] = []  # popped tiles of this block still to free
    for s in body:
        if isinstance(s, For):
            s = dataclasses.replace(s, body=_block(s.body, split, ids))
        elif isinstance(s, If):
            s = dataclasses.replace(
                s, then_body=_block(s.then_body, split, ids), else_body=_block(s.else_body, split, ids)
            )
        way = crossing(s)
        if way is not None and isinstance(s, Assign):  # crossing() saw a tile.move
            pid = ids.take(way, s.span)
            push, pop = _cross(s, way, split, pid, ids.slots)
            out.insert(_after_def(out, push), push)
            out.append(pop)
            pending.append((s.var, way, pid, s.span))
            continue
        out.append(s)
    return _place_frees(tuple(out), pending, split)


def _after_def(out: list[Stmt], push: Eval) -> int:
    """Where a push goes: right after the statement of this block that computed its tile (the
    producer sends as soon as the value exists, so the consumer's pop — at the move — may find
    it waiting; the pipe's own order is untouched, each crossing site has its own pipe), else
    at the move."""
    assert isinstance(push.value, Call)  # a tile.tpush_to_* (see _cross)
    name = push.value.var_arg("tile").name
    for i, s in reversed(list(enumerate(out))):
        if isinstance(s, Assign) and s.var.name == name:
            return i + 1
    return len(out)


def _place_frees(body: tuple[Stmt, ...], pending: list, split: int) -> tuple[Stmt, ...]:
    """Each popped tile's free after the last statement of the block that reads it (before a
    closing yield, which only names values)."""
    out = list(body)
    for var, way, pid, span in pending:
        last = max(i for i, s in enumerate(out) if _uses(s, var.name))
        if last == len(out) - 1 and type(out[last]).__name__ == "Yield":
            raise CompileError(
                f"`{var.name}` crossed cores and is carried out of its block; a popped tile "
                "cannot outlive the trip that popped it — copy it into a tile of this core first",
                span,
            )
        out.insert(last + 1, _free(var, way, split, pid, span))
    return tuple(out)


def _mat_to_vec(s: Stmt) -> bool:
    if not (isinstance(s, Assign) and isinstance(s.value, Call) and s.value.op == "tile.move"):
        return False
    src, dst = type_of(s.value.arg("tile")), s.var.type
    return (
        isinstance(src, TileType)
        and isinstance(dst, TileType)
        and (src.memory, dst.memory)
        == (
            MemorySpace.Mat,
            MemorySpace.Vec,
        )
    )


class _Router:
    """Vec copies of Mat tiles, made from where each Mat tile came from (see ``route``)."""

    def __init__(self, body: tuple[Stmt, ...]) -> None:
        self.defs = {s.var.name: s for s in walk(body) if isinstance(s, Assign)}
        self.stored = _stored(body)
        self.names = NameSupply(defined_names(body))

    def route(self, s: Assign) -> list[Stmt]:
        """A Mat → Vec move as a route that exists: L1 has no path to UB (nor to GM), so the
        Vec copy is made from where the Mat tile came from — the GM window it was loaded from
        (loaded again, GM → UB), the product it was moved from (Acc → Vec, across the cores),
        the Vec tile it crossed from, or, for a tile another was inserted into (``pl.tile.
        assemble``), the Vec copies of both, inserted in Vec (narrowed with ties to even, as
        FIXPIPE does, when the insert narrowed a product)."""
        assert isinstance(s.value, Call)  # a tile.move (see _mat_to_vec)
        out: list[Stmt] = []
        value = self.vec_value(s.value.arg("tile"), out, s)
        return [*out, dataclasses.replace(s, value=value)]

    def vec_value(self, src: Expr, out: list[Stmt], s: Assign) -> Call:
        """The call making a Vec copy of the Mat tile ``src`` (what it needs first into ``out``)."""
        made = self.defs.get(getattr(src, "name", ""))
        c = made.value if made is not None else None
        if (
            isinstance(c, Call)
            and c.op == "tile.load"
            and getattr(c.arg("tensor"), "name", "") not in self.stored
        ):
            args = [c.arg("tensor"), c.arg("offsets"), c.arg("shapes")]
            return _call("tile.load", args, {"valid_shape": c.arg("valid_shape")}, s.span)
        if isinstance(c, Call) and c.op == "tile.move":
            origin = type_of(c.arg("tile"))
            if isinstance(origin, TileType) and origin.memory in (MemorySpace.Acc, MemorySpace.Vec):
                return _call("tile.move", [c.arg("tile"), MemorySpace.Vec], {}, s.span)
        if isinstance(c, Call) and c.op == "tile.assemble" and made is not None:
            dst = self.vec_tile(c.arg("dst"), out, s)
            part = self.vec_tile(c.arg("src"), out, s)
            want = tile_type(made.var).dtype
            if tile_type(part).dtype != want:  # FIXPIPE narrowed the product on its way in
                rint = _call("tile.cast", [part, want], {"mode": "rint"}, s.span)
                part = self.emit(out, part.name, rint, s)
            return _call("tile.assemble", [dst, part, c.arg("offset")], {}, s.span)
        raise CompileError(
            f"`{getattr(src, 'name', src)}` moves from Mat to Vec, which has no path on this "
            "platform (L1 reaches neither UB nor GM); the compiler routes it only from a window "
            "of a tensor this kernel does not write, from a product or Vec tile moved to Mat, or "
            "from such tiles inserted into one another: load the window to Vec, or move the "
            "product itself",
            s.span,
        )

    def vec_tile(self, x: Expr, out: list[Stmt], s: Assign) -> Var:
        """``x`` in Vec: a product or Vec tile moved (crossing) or kept, a Mat tile routed."""
        t = type_of(x)
        assert isinstance(x, Var) and isinstance(t, TileType)
        if t.memory is MemorySpace.Vec:
            return x
        if t.memory is MemorySpace.Mat:
            return self.emit(out, x.name, self.vec_value(x, out, s), s)
        return self.emit(out, x.name, _call("tile.move", [x, MemorySpace.Vec], {}, s.span), s)

    def emit(self, out: list[Stmt], base: str, call: Call, s: Assign) -> Var:
        var = Var(self.names.fresh(f"{base}_vec"), call.type, span=s.span)
        out.append(Assign(var, call, span=s.span))
        return var

    def block(self, body: tuple[Stmt, ...]) -> tuple[Stmt, ...]:
        out: list[Stmt] = []
        for s in body:
            if isinstance(s, For):
                out.append(dataclasses.replace(s, body=self.block(s.body)))
            elif isinstance(s, If):
                then_body, else_body = self.block(s.then_body), self.block(s.else_body)
                out.append(dataclasses.replace(s, then_body=then_body, else_body=else_body))
            elif _mat_to_vec(s):
                assert isinstance(s, Assign)
                out += self.route(s)
            else:
                out.append(s)
        return tuple(out)


def _stored(body: tuple[Stmt, ...]) -> set[str]:
    """Names of the tensors this body stores into (their windows may change while it runs)."""
    return {
        name
        for c in nodes_of(body, Call)
        if c.op == "tile.store" and (name := getattr(c.arg("output_tensor"), "name", None))
    }


def route_mat_to_vec(body: tuple[Stmt, ...]) -> tuple[Stmt, ...]:
    """``body`` with every Mat → Vec move replaced by a route that exists (``_Router.route``)."""
    return _Router(body).block(body)


def insert_pipes(
    body: tuple[Stmt, ...], split: SplitMode | None, slots: int | None, ctx: PassContext
) -> tuple[Stmt, ...]:
    """``body`` with every crossing move replaced by a push, a pop and a free (each push on a
    ring of ``slots``, None: the platform's depth); a Mat → Vec move first routed where a path
    exists."""
    mode = int(split.value) if split is not None else 0
    return _block(route_mat_to_vec(body), mode, _Ids(ctx.platform.cross_flag_ids, slots or 0))
