"""FuseCreateAssemble: an orchestration ``pl.assemble`` of a kernel's output becomes a view.

Orchestration code stages a kernel's result in a ``pl.create_tensor`` buffer and then places
it in a window of a larger tensor::

    stage = pl.create_tensor([64, D], dtype=pl.BF16)
    with pl.at(level=pl.Level.CORE_GROUP):
        stage[:, :] = ...                      # the kernel writes the buffer
    out = pl.assemble(out, stage, [r0, 0])     # the buffer goes into rows r0.. of out

Orchestration runs no code of its own between tasks, so the copy is made unnecessary instead:
the buffer *is* that window. This pass turns the ``pl.create_tensor`` into
``pl.slice(out, [64, D], [r0, 0])`` and the ``pl.assemble`` into a plain rebinding of ``out``,
so the kernel writes straight into ``out`` and the launch plan orders its task against every
other task that touches ``out``. Upstream PyPTO's FuseCreateAssembleToSlice does the same.

The rewrite is exact when the buffer is placed once, whole, and the window is known where the
buffer is made; anything else is refused at the ``pl.assemble`` line with the reason: a
source that is not such a buffer (a parameter or a view: write the kernel's output into a
``pl.slice`` of the target instead), a buffer placed twice, a window whose target or offsets
are computed after the buffer is made, or a buffer with ``init_value=`` / ``manual_dep=``
(the window has neither). Runs right after OutlineIncoreScopes, when orchestration holds the
kernel calls whose outputs name the buffer, and before anything reads the launch plan.
Test: tests/passes/test_fuse_create_assemble.py
"""

from __future__ import annotations

import dataclasses
from typing import TypeGuard

from pypto.errors import CompileError
from pypto.ir.bind import bind_call
from pypto.ir.enums import Direction, FunctionType
from pypto.ir.expr import Call, FuncCall, Literal, Var, shaped_type
from pypto.ir.stmt import Assign, For, Function, If, Program, Stmt, TaskRegion
from pypto.ir.visit import nodes_of
from pypto.passes._scan import with_functions

_REFUSED = "pl.assemble in orchestration places a kernel's pl.create_tensor output into the target"


def fuse_create_assemble(program: Program) -> Program:
    """Every orchestration ``pl.assemble`` of a ``pl.create_tensor`` buffer made a view."""
    fns = tuple(
        _fuse(program, fn) if fn.kind is FunctionType.Orchestration else fn for fn in program.functions
    )
    return with_functions(program, fns)


def _fuse(program: Program, fn: Function) -> Function:
    assembles = [a for a in nodes_of(fn.body, Assign) if _is(a, "tensor.assemble")]
    if not assembles:
        return fn
    roots = _buffer_roots(program, fn)
    visible = _visible_at_creates(fn)
    views: dict[str, Call] = {}  # create var -> the slice replacing it
    for a in assembles:
        src = _call(a).arg("src")
        root = roots.get(src.name) if isinstance(src, Var) else None
        if root is None:
            raise CompileError(
                f"{_REFUSED}; `{getattr(src, 'name', src)}` is not such a buffer: write the kernel's "
                "output into a pl.slice of the target instead",
                a.span,
            )
        if root.var.name in views:
            raise CompileError(f"{_REFUSED} once; `{root.var.name}` is placed twice", a.span)
        views[root.var.name] = _window(a, root, visible[root.var.name])
    return dataclasses.replace(fn, body=_rewrite(fn.body, views))


def _is(s: Stmt, op: str) -> TypeGuard[Assign]:
    return isinstance(s, Assign) and isinstance(s.value, Call) and s.value.op == op


def _call(s: Assign) -> Call:
    assert isinstance(s.value, Call)  # callers pass assigns `_is` matched
    return s.value


def _buffer_roots(program: Program, fn: Function) -> dict[str, Assign]:
    """Each name that stands for an orchestration ``pl.create_tensor`` buffer -> its create:
    the create's own name, the results of kernel calls that write it, plain renamings."""
    roots: dict[str, Assign] = {}
    for s in nodes_of(fn.body, Assign):
        if _is(s, "tensor.create"):
            roots[s.var.name] = s
        elif isinstance(s.value, Var) and s.value.name in roots:
            roots[s.var.name] = roots[s.value.name]
        elif isinstance(s.value, FuncCall):
            callee = program.get(s.value.callee)
            for p, arg in zip(callee.params, s.value.args):
                if p.direction in (Direction.Out, Direction.InOut) and isinstance(arg, Var):
                    if arg.name in roots:
                        roots[s.var.name] = roots[arg.name]
                    break  # the call's value names its first written tensor (as the plan reads it)
    return roots


def _visible_at_creates(fn: Function) -> dict[str, frozenset[str]]:
    """Per ``pl.create_tensor`` name, the names defined before it in its enclosing blocks."""
    out: dict[str, frozenset[str]] = {}

    def block(body: tuple[Stmt, ...], seen: set[str]) -> None:
        for s in body:
            if _is(s, "tensor.create"):
                out[s.var.name] = frozenset(seen)
            if isinstance(s, For):
                block(s.body, seen | {s.var.name} | {it.var.name for it in s.iter_args})
                seen |= {r.name for r in s.results}
            elif isinstance(s, If):
                block(s.then_body, set(seen))
                block(s.else_body, set(seen))
                seen |= {r.name for r in s.results}
            elif isinstance(s, TaskRegion):
                block(s.body, seen)  # names defined inside stay visible after it
            elif isinstance(s, Assign):
                seen.add(s.var.name)

    block(fn.body, {p.var.name for p in fn.params})
    return out


def _window(a: Assign, create: Assign, seen: frozenset[str]) -> Call:
    """The slice of the assemble's target that the buffer ``create`` becomes."""
    c, made = _call(a), _call(create)
    target, offset, shape = c.arg("target"), c.arg("offset"), made.list_arg("shape")
    rank, target_rank = len(shape.items), len(shaped_type(target).shape)
    if rank != target_rank:
        raise CompileError(
            f"{_REFUSED} of the same rank; `{create.var.name}` has {rank} axes, "
            f"`{getattr(target, 'name', target)}` {target_rank}",
            a.span,
        )
    late = sorted({v.name for v in nodes_of((target, offset), Var)} - seen)
    if late:
        raise CompileError(
            f"{_REFUSED}, which becomes a window of it where `{create.var.name}` is made; "
            f"{', '.join(f'`{n}`' for n in late)} is computed after that: make the buffer after it",
            a.span,
        )
    init, manual = made.arg("init_value"), made.arg("manual_dep")
    if not (isinstance(init, Literal) and init.value is None) or getattr(manual, "value", False):
        raise CompileError(
            f"{_REFUSED}, which becomes a window of it; that window has no init_value= or "
            f"manual_dep= of its own: drop them from `{create.var.name}`",
            a.span,
        )
    call, _ = bind_call("tensor.slice", [target, shape, offset], {}, span=create.span)
    return call


def _rewrite(body: tuple[Stmt, ...], views: dict[str, Call]) -> tuple[Stmt, ...]:
    out: list[Stmt] = []
    for s in body:
        if isinstance(s, Assign) and s.var.name in views:
            s = dataclasses.replace(s, value=views[s.var.name])
        elif isinstance(s, Assign) and _is(s, "tensor.assemble"):  # the kernel wrote the window
            s = dataclasses.replace(s, value=_call(s).arg("target"))  # the target is as it was
        elif isinstance(s, For):
            s = dataclasses.replace(s, body=_rewrite(s.body, views))
        elif isinstance(s, If):
            s = dataclasses.replace(
                s, then_body=_rewrite(s.then_body, views), else_body=_rewrite(s.else_body, views)
            )
        elif isinstance(s, TaskRegion):
            s = dataclasses.replace(s, body=_rewrite(s.body, views))
        out.append(s)
    return tuple(out)
