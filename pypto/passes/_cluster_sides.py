"""Which core of a cluster each statement of a cluster kernel runs on, and one core's
projection of the body (private to SplitClusterKernels).

The AIC has the cube and the Mat/Left/Right/Acc/Bias buffers; an AIV has the vector unit
and Vec. A statement touching a cube-side buffer or op runs on the AIC, one touching Vec
runs on the AIV, scalar statements (index math) run on both. Loops and branches are kept on
both cores with the part of their body that core runs, so the two programs walk the same
trips and hand tiles over in the same order. What a core does not need is dropped.
A GM tensor is one buffer whichever core writes it: a branch whose arms store it from
different cores is carried on both, each core's yields naming its own last version.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable

from pypto.hardware import AIC_SPACES
from pypto.ir.enums import MemorySpace
from pypto.ir.expr import Call, Expr, Var
from pypto.ir.stmt import Assign, Eval, For, If, Stmt, Yield
from pypto.ir.types import TensorType, TileType
from pypto.ir.visit import nodes_of, walk


class Side(enum.Enum):
    AIC = "the AIC"
    AIV = "the AIV"
    BOTH = "both cores"  # scalar work, recomputed on each core


# The AIC's buffers, as the simulator defines them (an AIV has Vec alone).
CUBE_SPACES = frozenset(MemorySpace[name] for name in AIC_SPACES)
AIC_OPS = frozenset({"tile.tpush_to_aiv", "tile.tpop_from_aiv", "tile.tfree_to_aiv", "tensor.matmul"})
AIV_OPS = frozenset({"tile.tpush_to_aic", "tile.tpop_from_aic", "tile.tfree_to_aic", "tile.get_subblock_idx"})
# Statements that matter for what they do, not only for the value they name.
EFFECTS = frozenset(
    {
        "tile.store",
        "tensor.assemble",
        "tensor.write",
        "tile.write",
        "tile.tpush_to_aiv",
        "tile.tpush_to_aic",
        "tile.tpop_from_aic",
        "tile.tpop_from_aiv",
        "tile.tfree_to_aic",
        "tile.tfree_to_aiv",
    }
)
# The ops writing into a GM tensor, and the argument naming the tensor they write into.
TENSOR_WRITES = {
    "tile.store": "output_tensor",
    "tensor.assemble": "target",
    "tensor.write": "dst",
    "system.syncall": "gm_workspace",  # counts arrivals in it
}


def _space_side(t: object) -> Side | None:
    if isinstance(t, TileType) and t.memory is not None:
        return Side.AIC if t.memory in CUBE_SPACES else Side.AIV if t.memory is MemorySpace.Vec else None
    return None


def leaf_sides(s: Stmt) -> set[Side]:
    """The cores a leaf statement's tiles and ops live on (empty: scalar work)."""
    sides: set[Side] = set()
    for c in nodes_of(s, Call):
        if c.op in AIC_OPS:
            sides.add(Side.AIC)
        elif c.op in AIV_OPS:
            sides.add(Side.AIV)
        elif c.op.startswith("tensor.") and c.op not in ("tensor.slice", "tensor.dim", "tensor.read"):
            sides.add(Side.AIV)  # tensor-level vector work (lowered to Vec tiles)
    for v in nodes_of(s, Var):
        side = _space_side(v.type)
        if side is not None:
            sides.add(side)
    return sides


def side_of(s: Stmt) -> Side:
    """A leaf statement's core; a statement on both sides is reported by the caller."""
    sides = leaf_sides(s)
    if len(sides) == 1:
        return next(iter(sides))
    return Side.BOTH


def _carried_side(var: Var, yielded: tuple[object, ...], defs: dict[str, Side]) -> Side:
    """The core a carried value lives on. A tile lives where its buffer is; a tensor lives where
    its yielded versions were written: on one core when every branch wrote it there (or passed
    it through), on both when the branches wrote it from different cores (one GM buffer)."""
    side = _space_side(var.type)
    if side is not None:
        return side
    if not isinstance(var.type, TensorType):
        return Side.BOTH
    sides = {defs.get(y.name, Side.BOTH) for y in yielded if isinstance(y, Var)} - {Side.BOTH}
    return next(iter(sides)) if len(sides) == 1 else Side.BOTH


def _yield_values(body: tuple[Stmt, ...], k: int) -> tuple[object, ...]:
    return (body[-1].values[k],) if body and isinstance(body[-1], Yield) else ()


def assign_sides(body: tuple[Stmt, ...], defs: dict[str, Side]) -> None:
    """Fills ``defs``: the core each name is defined on (BOTH: on each core)."""
    for s in body:
        if isinstance(s, (Assign, Eval)):
            side = side_of(s)
            if isinstance(s, Assign):
                defs[s.var.name] = side
        elif isinstance(s, For):
            defs[s.var.name] = Side.BOTH
            assign_sides(s.body, defs)
            for k, (it, r) in enumerate(zip(s.iter_args, s.results)):
                defs[it.var.name] = defs[r.name] = _carried_side(it.var, _yield_values(s.body, k), defs)
        elif isinstance(s, If):
            assign_sides(s.then_body, defs)
            assign_sides(s.else_body, defs)
            for k, r in enumerate(s.results):
                ys = (*_yield_values(s.then_body, k), *_yield_values(s.else_body, k))
                defs[r.name] = _carried_side(r, ys, defs)


def tensor_versions(body: tuple[Stmt, ...]) -> dict[str, Var]:
    """Each tensor version's predecessor: the tensor a store (or assemble, write) wrote into,
    a loop's init for its carried name and result, a branch's then-yield for its result."""
    prev: dict[str, Var] = {}
    for n in walk(body):
        if isinstance(n, Assign) and isinstance(n.var.type, TensorType) and isinstance(n.value, Call):
            target = TENSOR_WRITES.get(n.value.op)
            written = n.value.arg(target) if target is not None else None
            if isinstance(written, Var):
                prev[n.var.name] = written
        elif isinstance(n, For):
            for it, r in zip(n.iter_args, n.results):
                if isinstance(it.init, Var):
                    prev[it.var.name] = prev[r.name] = it.init
        elif isinstance(n, If):
            for k, r in enumerate(n.results):
                y = _yield_values(n.then_body, k)
                if y and isinstance(y[0], Var):
                    prev[r.name] = y[0]
    return prev


def project(
    body: tuple[Stmt, ...], side: Side, defs: dict[str, Side], prev: dict[str, Var] | None = None
) -> tuple[Stmt, ...]:
    """The statements of ``body`` that run on ``side`` (loops and branches on both). A yield or
    a loop init naming a tensor version the other core wrote names this core's own latest
    version of that tensor instead (``tensor_versions``): one GM buffer, two programs."""
    prev = tensor_versions(body) if prev is None else prev
    own = _own_version(side, defs, prev)
    out: list[Stmt] = []
    for s in body:
        if isinstance(s, (Assign, Eval)):
            if side_of(s) in (side, Side.BOTH):
                out.append(s)
        elif isinstance(s, For):
            keep = [k for k, it in enumerate(s.iter_args) if defs[it.var.name] in (side, Side.BOTH)]
            out.append(
                dataclasses.replace(
                    s,
                    body=_keep_yield(project(s.body, side, defs, prev), keep, own),
                    iter_args=tuple(
                        dataclasses.replace(s.iter_args[k], init=own(s.iter_args[k].init)) for k in keep
                    ),
                    results=tuple(s.results[k] for k in keep),
                )
            )
        elif isinstance(s, If):
            keep = [k for k, r in enumerate(s.results) if defs[r.name] in (side, Side.BOTH)]
            out.append(
                dataclasses.replace(
                    s,
                    then_body=_keep_yield(project(s.then_body, side, defs, prev), keep, own),
                    else_body=_keep_yield(project(s.else_body, side, defs, prev), keep, own),
                    results=tuple(s.results[k] for k in keep),
                )
            )
        else:
            out.append(s)
    return tuple(out)


def _own_version(side: Side, defs: dict[str, Side], prev: dict[str, Var]) -> Callable[[Expr], Expr]:
    """Maps a value to this core's version of it: a tensor version written on the other core is
    walked back to the version this core last had (the same GM buffer under another name)."""
    other = Side.AIV if side is Side.AIC else Side.AIC

    def own(v: Expr) -> Expr:
        while isinstance(v, Var) and defs.get(v.name) is other and v.name in prev:
            v = prev[v.name]
        return v

    return own


def _keep_yield(
    body: tuple[Stmt, ...], keep: list[int], own: Callable[[Expr], Expr] = lambda v: v
) -> tuple[Stmt, ...]:
    if body and isinstance(body[-1], Yield):
        y = body[-1]
        if not keep:  # nothing carried on this core: no yield either
            return body[:-1]
        return (*body[:-1], dataclasses.replace(y, values=tuple(own(y.values[k]) for k in keep)))
    return body


def _effectful(s: Stmt) -> bool:
    return any(c.op in EFFECTS for c in nodes_of(s, Call))


def prune(body: tuple[Stmt, ...]) -> tuple[Stmt, ...]:
    """Drops what nothing needs (scalar math for the other core, loops left empty, carried
    values no statement reads), until nothing changes."""
    while True:
        used = _used_names(body)
        new = _prune_block(body, used)
        if new == body:
            return body
        body = new


def _used_names(body: tuple[Stmt, ...]) -> set[str]:
    """Names read anywhere (an Assign's own target and a loop's own carried names excepted)."""
    used: set[str] = set()
    for n in walk(body):
        if isinstance(n, (Assign, Eval)):
            used.update(v.name for v in nodes_of(n.value, Var))
        elif isinstance(n, For):
            used.update(v.name for v in nodes_of((n.start, n.stop, n.step), Var))
            used.update(v.name for it in n.iter_args for v in nodes_of(it.init, Var))
            if n.cond is not None:
                used.update(v.name for v in nodes_of(n.cond, Var))
        elif isinstance(n, If):
            used.update(v.name for v in nodes_of(n.cond, Var))
        elif isinstance(n, Yield):
            used.update(v.name for v in nodes_of(n.values, Var))
    return used


def _prune_block(body: tuple[Stmt, ...], used: set[str]) -> tuple[Stmt, ...]:
    out: list[Stmt] = []
    for s in body:
        if isinstance(s, Assign) and s.var.name not in used and not _effectful(s):
            continue
        if isinstance(s, For):
            pruned = _prune_for(s, used)
            if pruned is None:
                continue
            s = pruned
        elif isinstance(s, If):
            s = dataclasses.replace(
                s, then_body=_prune_block(s.then_body, used), else_body=_prune_block(s.else_body, used)
            )
            if not s.results and not _effectful(s):
                continue
        out.append(s)
    return tuple(out)


def _prune_for(s: For, used: set[str]) -> For | None:
    body = _prune_block(s.body, used)
    last = body[-1] if body and isinstance(body[-1], Yield) else None
    # a carried value is needed when read in the body or after the loop (its own yield aside)
    inner = _used_names(body[:-1] if last else body)
    keep = [
        k
        for k, (it, r) in enumerate(zip(s.iter_args, s.results))
        if it.var.name in inner or r.name in used or (s.cond is not None and it.var.name in used)
    ]
    if len(keep) != len(s.iter_args):
        body = _keep_yield(body, keep)
        s = dataclasses.replace(
            s, iter_args=tuple(s.iter_args[k] for k in keep), results=tuple(s.results[k] for k in keep)
        )
    s = dataclasses.replace(s, body=body)
    if not s.results and not _effectful(s):
        return None
    return s
