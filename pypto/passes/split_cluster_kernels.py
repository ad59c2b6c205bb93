"""SplitClusterKernels: each cluster kernel becomes one AIC kernel and one AIV kernel.

OutlineIncoreScopes turns a ``with pl.cluster():`` scope (and a ``pl.at`` scope that mixes
cube and vector work) into a Group function holding the scope. Here its body is split by
core (``_cluster_sides``): the AIC kernel keeps the cube-side statements, the AIV kernel the
vector-side ones, both keep the loops, branches and index math. A mixed ``pl.at`` scope written
on tensors is first placed as tiles of both cores, a value read on the other core's side moved
there (a product to Vec, a vector result to Mat: ``convert_cluster_body``); then it gets its
cross-core pipes from the compiler (``_cluster_pipes``); a ``pl.cluster`` scope
spells them itself, and what can be seen wrong before running is a compile error with the
line: a tile computed on one core used on the other, a pop with no push, pushes and pops of
one pipe that disagree on split or shape, a free of a tile twice or of no popped tile, a
tensor one core stores and the other loads (the cores run at once: nothing orders the two).
The Group function is left calling the two kernels; it runs as one cluster task.
Test: tests/passes/test_split_cluster_kernels.py
"""

from __future__ import annotations

import dataclasses
from typing import Any

from pypto.errors import CompileError
from pypto.ir.bind import with_args
from pypto.ir.enums import FunctionType, SplitMode
from pypto.ir.expr import Call, Const, FuncCall, ListExpr, Literal, Var, type_of
from pypto.ir.op_rules_cluster import split_of
from pypto.ir.stmt import Assign, Eval, For, Function, If, Program, Scope, Stmt
from pypto.ir.types import TileType, VoidType
from pypto.ir.visit import nodes_of, rewrite, walk
from pypto.passes._cluster_pipes import insert_pipes
from pypto.passes._cluster_sides import Side, assign_sides, leaf_sides, project, prune
from pypto.passes._cluster_split import halve_aiv
from pypto.passes._scan import with_functions
from pypto.passes.context import PassContext
from pypto.passes.convert_tensor_to_tile_ops import convert_cluster_body, tensor_level
from pypto.passes.outline_incore_scopes import tensor_aliases

_PUSH = {"tile.tpush_to_aiv": "tile.tpop_from_aic", "tile.tpush_to_aic": "tile.tpop_from_aiv"}
_POP_OF_FREE = {"tile.tfree_to_aic": "tile.tpop_from_aic", "tile.tfree_to_aiv": "tile.tpop_from_aiv"}


def _leaves(body: tuple[Stmt, ...]) -> list[Assign | Eval]:
    return [s for s in walk(body) if isinstance(s, (Assign, Eval))]


def _attr(c: Call, name: str) -> Any:
    """The value of a compile-time argument of a pipe op (its id, dtype; bound as a literal)."""
    v = c.arg(name)
    assert isinstance(v, (Const, Literal)), f"{c.op} takes {name} as a literal"
    return v.value


def _check_one_core(body: tuple[Stmt, ...], explicit: bool) -> None:
    how = (
        "in pl.cluster hand tiles over with pl.tpush_to_aiv / pl.tpop_from_aic (cube to vector) "
        "or pl.tpush_to_aic / pl.tpop_from_aiv (vector to cube)"
        if explicit
        else "move the tile across on its own: pl.move(acc, target_memory=pl.Mem.Vec) or "
        "pl.move(v, target_memory=pl.Mem.Mat)"
    )
    for s in _leaves(body):
        if len(leaf_sides(s)) > 1:
            raise CompileError(
                f"this statement needs both the AIC (cube-side buffers) and an AIV (Vec): {how}",
                s.span,
            )


def _check_crossing(body: tuple[Stmt, ...], side: Side, defs: dict[str, Side]) -> None:
    """A name this core reads must be defined on it (or on both)."""
    other = Side.AIV if side is Side.AIC else Side.AIC
    for s in walk(body):
        if not isinstance(s, (Assign, Eval)):
            continue
        for v in nodes_of(s.value, Var):
            if defs.get(v.name) is other:
                how = (
                    "pl.tpush_to_aiv / pl.tpop_from_aic"
                    if other is Side.AIC
                    else "pl.tpush_to_aic / pl.tpop_from_aiv"
                )
                raise CompileError(
                    f"`{v.name}` is computed on {other.value} but used on {side.value}; the cores "
                    f"of a cluster share no buffer: hand it over with {how}",
                    s.span,
                )


def _check_gm_handoff(sides: dict[Side, tuple[Stmt, ...]], alias: dict[str, str]) -> None:
    """A tensor one core stores into and the other loads from: the two cores run at once and
    nothing orders the store before the load, so the value must cross through a pipe."""
    written: dict[Side, set[str]] = {}
    for side, body in sides.items():
        stores = _calls(body, ("tile.store",))
        written[side] = {
            alias.get(n, n) for c, _ in stores if (n := getattr(c.arg("output_tensor"), "name", None))
        }
    for side, body in sides.items():
        other = Side.AIV if side is Side.AIC else Side.AIC
        for c, s in _calls(body, ("tile.load",)):
            name = getattr(c.arg("tensor"), "name", "")
            if alias.get(name, name) in written[other]:
                raise CompileError(
                    f"`{name}` is stored by {other.value} and loaded by {side.value} of one cluster "
                    "kernel; the cores run at once and nothing orders the store before the load: "
                    "use the value itself (the compiler moves it across the cores), or write the "
                    "two parts as two pl.at scopes",
                    s.span,
                )


def _calls(body: tuple[Stmt, ...], ops: tuple[str, ...]) -> list[tuple[Call, Stmt]]:
    return [(s.value, s) for s in _leaves(body) if isinstance(s.value, Call) and s.value.op in ops]


def _check_ids(body: tuple[Stmt, ...], limit: int) -> None:
    for c, s in _calls(body, (*_PUSH, *_PUSH.values(), *_POP_OF_FREE)):
        pid = _attr(c, "id")
        if pid >= limit:
            raise CompileError(
                f"pipe id {pid} is out of range: this platform has {limit} (0..{limit - 1})", s.span
            )


def _check_pipes(aic: tuple[Stmt, ...], aiv: tuple[Stmt, ...]) -> None:
    """Pushes and pops of each pipe, in program order, agree on split and shape."""
    for push_op, pop_op in _PUSH.items():
        pushes = _calls(aic if push_op == "tile.tpush_to_aiv" else aiv, (push_op,))
        pops = _calls(aiv if pop_op == "tile.tpop_from_aic" else aic, (pop_op,))
        for k, (pop, ps) in enumerate(pops):
            pid = _attr(pop, "id")
            mine = [(c, s) for c, s in pushes if _attr(c, "id") == pid]
            if not mine:
                raise CompileError(
                    f"pl.{pop_op.removeprefix('tile.')} (pipe id {pid}) has no producer: the other core "
                    f"never calls pl.{push_op.removeprefix('tile.')} with id={pid}",
                    ps.span,
                )
            push, ss = mine[min(k, len(mine) - 1)]
            if split_of(push.arg("split")) != split_of(pop.arg("split")):
                raise CompileError(
                    f"this pop has split={split_of(pop.arg('split'))} but the push it receives "
                    f"(at {ss.span}) has split={split_of(push.arg('split'))}",
                    ps.span,
                )
            _check_shape(push, ss, pop, ps)


def _check_shape(push: Call, ss: Stmt, pop: Call, ps: Stmt) -> None:
    t, dims = type_of(push.arg("tile")), pop.arg("shape")
    assert isinstance(t, TileType) and isinstance(dims, ListExpr), "a pushed tile; a popped shape"
    shape = list(t.shape) if len(t.shape) == 2 else [1, t.shape[0]]
    got = [int(i.value) for i in dims.items if isinstance(i, Const)]
    got = got if len(got) == 2 else [1, *got]
    split = split_of(pop.arg("split"))
    to_aiv = push.op == "tile.tpush_to_aiv"
    # a split tile is whole on the AIC and halved on each AIV
    aic_shape, aiv_shape = (shape, got) if to_aiv else (got, shape)
    want = list(aic_shape)
    if split:
        want[split - 1] //= 2
    if want != aiv_shape or t.dtype != _attr(pop, "dtype"):
        raise CompileError(
            f"this pop receives {_attr(pop, 'dtype').name} {got}, but the push at {ss.span} sends "
            f"{t.dtype.name} {shape}" + (f" (split={split}: each AIV holds half)" if split else ""),
            ps.span,
        )


def _stamp_frees(body: tuple[Stmt, ...]) -> tuple[Stmt, ...]:
    """A free carries the split of the pop it returns; a second free of one tile, or a free of
    a tile no pop produced, is an error."""
    pops = {s.var.name: s.value for s in _leaves(body) if isinstance(s, Assign) and isinstance(s.value, Call)}
    freed: dict[str, Stmt] = {}

    def check(s: Eval, c: Call, block_freed: dict[str, Stmt]) -> None:
        tile = c.arg("tile")
        src = pops.get(tile.name) if isinstance(tile, Var) else None
        if src is None or src.op != _POP_OF_FREE[c.op]:
            raise CompileError(
                f"pl.{c.op.removeprefix('tile.')} frees `{getattr(tile, 'name', tile)}`, which no "
                f"pl.{_POP_OF_FREE[c.op].removeprefix('tile.')} produced",
                s.span,
            )
        assert isinstance(tile, Var)  # pops.get found it
        if tile.name in block_freed:
            raise CompileError(
                f"`{tile.name}` is freed twice (first at {block_freed[tile.name].span}); each pop "
                "returns its slot once",
                s.span,
            )
        block_freed[tile.name] = s

    def fix(node: object) -> object:
        if isinstance(node, Call) and node.op in _POP_OF_FREE:
            src = pops[node.var_arg("tile").name]
            args = list(node.args)
            args[1] = src.arg("split")
            return with_args(node, args)
        return None

    def walk_block(stmts: tuple[Stmt, ...]) -> None:
        local: dict[str, Stmt] = dict(freed)
        for s in stmts:
            if isinstance(s, Eval) and isinstance(s.value, Call) and s.value.op in _POP_OF_FREE:
                check(s, s.value, local)
            elif isinstance(s, For):
                walk_block(s.body)
            elif isinstance(s, If):
                walk_block(s.then_body)
                walk_block(s.else_body)

    walk_block(body)
    return tuple(rewrite(s, fix) for s in body)


def _aivs(aiv: tuple[Stmt, ...]) -> int:
    """AIVs the AIV kernel runs on: both when any pipe op splits tiles, else one."""
    return 2 if any(split_of(c.arg("split")) for c, _ in _calls(aiv, tuple(AIV_PIPE_OPS))) else 1


AIV_PIPE_OPS = ("tile.tpush_to_aic", "tile.tpop_from_aic", "tile.tfree_to_aic")


def _split(fn: Function, ctx: PassContext) -> list[Function]:
    scope = fn.body[0]
    assert isinstance(scope, Scope)
    if scope.cluster and scope.split is not None:
        raise CompileError(
            "pl.cluster takes no pl.split: the explicit form says how the AIVs share each tile "
            "on its pushes and pops (split=pl.SplitMode...)",
            scope.span,
        )
    body = scope.body
    if not scope.cluster and tensor_level(body):  # tiles of both cores, crossings as moves
        body = convert_cluster_body(fn, body, ctx)
    body = body if scope.cluster else insert_pipes(body, scope.split, scope.slots, ctx)
    _check_one_core(body, scope.cluster)
    _check_ids(body, ctx.platform.cross_flag_ids)
    defs: dict[str, Side] = {}
    assign_sides(body, defs)
    sides = {}
    for side in (Side.AIC, Side.AIV):
        part = prune(project(body, side, defs))
        _check_crossing(part, side, defs)
        sides[side] = _stamp_frees(part)
    if not scope.cluster and scope.split not in (None, SplitMode.NONE) and _aivs(sides[Side.AIV]) == 2:
        sides[Side.AIV] = halve_aiv(sides[Side.AIV], scope.split)  # each AIV: half of each tile
    _check_pipes(sides[Side.AIC], sides[Side.AIV])
    _check_gm_handoff(sides, tensor_aliases(body))
    args = tuple(p.var for p in fn.params)
    kernels = [
        Function(f"{fn.name}_aic", fn.params, FunctionType.AIC, sides[Side.AIC], span=fn.span),
        Function(f"{fn.name}_aiv", fn.params, FunctionType.AIV, sides[Side.AIV], span=fn.span),
    ]
    calls = tuple(Eval(FuncCall(k.name, args, VoidType(), span=fn.span), span=fn.span) for k in kernels)
    group = dataclasses.replace(fn, body=calls)
    return [group, *kernels]


def cluster_members(program: Program, group: Function) -> tuple[Function, Function]:
    """The AIC and AIV kernels a split Group function calls."""
    aic, aiv = (
        program.get(s.value.callee)
        for s in group.body
        if isinstance(s, Eval) and isinstance(s.value, FuncCall)
    )
    return aic, aiv


def aiv_count(aiv: Function) -> int:
    return _aivs(aiv.body)


def split_cluster_kernels(program: Program, ctx: PassContext) -> Program:
    """Split every unsplit Group function into its AIC and AIV kernels."""
    functions: list[Function] = []
    for fn in program.functions:
        if fn.kind is FunctionType.Group and len(fn.body) == 1 and isinstance(fn.body[0], Scope):
            functions.extend(_split(fn, ctx))
        else:
            functions.append(fn)
    return with_functions(program, tuple(functions))
