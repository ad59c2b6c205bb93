"""PlanPipelineLoops: validate every ``pl.pipeline`` loop and record what to replicate.

For each ``for i in pl.pipeline(start, stop, step, stage=F)`` of every function this pass
checks what the expansion relies on and records the plan on the loop itself
(``For.staged``, printed ``pl.pipeline(..., stage=F, staged=["t", "e"])``): the tiles the
body defines — the staged tiles, of which each clone gets its own copy. The depth and the
constant step are the loop's own ``stage`` and ``step``. ExpandPipelineLoops does the
rewriting.

Rejected, at the loop's (or the declaration's) source line:

* ``stage`` missing or < 1;
* a step that is not a compile-time constant (the outer stride ``F * step`` must be known);
* a ``pl.MemRef`` declared inside the body: replicating it would bind every clone to the
  same declared storage, which defeats the clones' own buffers.

Test: tests/passes/test_plan_pipeline_loops.py
"""

from __future__ import annotations

import dataclasses

from pypto.errors import CompileError
from pypto.ir.enums import ForKind
from pypto.ir.expr import Const
from pypto.ir.stmt import Assign, For, Function, If, Program, Stmt
from pypto.ir.types import TileType
from pypto.ir.visit import rewrite, walk
from pypto.passes._scan import with_functions
from pypto.passes.context import PassContext


def _check(loop: For) -> None:
    if not isinstance(loop.stage, int) or isinstance(loop.stage, bool) or loop.stage < 1:
        raise CompileError(
            f"pl.pipeline stage must be a compile-time int >= 1, got {loop.stage!r}", loop.span
        )
    step = loop.step
    if not (isinstance(step, Const) and isinstance(step.value, int) and not isinstance(step.value, bool)):
        raise CompileError(
            "pl.pipeline needs a compile-time constant step: the outer loop strides by stage * step",
            loop.span,
        )
    if step.value == 0:
        raise CompileError("pl.pipeline step must not be 0", loop.span)
    for node in walk(loop.body):
        if isinstance(node, Assign) and isinstance(node.var.type, TileType):
            ref = node.var.type.memref
            if ref is not None and not ref.allocated:
                raise CompileError(
                    f"pl.MemRef {ref.name!r} is declared inside a pl.pipeline body (tile "
                    f"{node.var.name!r}); every clone would share that storage. Declare the slots "
                    "with a pl.range loop instead, or drop the MemRef and let pl.pipeline stage it",
                    node.span or loop.span,
                )


def _staged(body: tuple[Stmt, ...]) -> tuple[str, ...]:
    """Tile names the body defines, in definition order (``if`` branches included). A nested
    loop contributes its carried values only: its own tiles live one inner iteration, so the
    clones of this loop never hold them at once (an inner pl.pipeline stages them itself)."""
    names: list[str] = []
    for node in body:
        if isinstance(node, Assign) and isinstance(node.var.type, TileType):
            names.append(node.var.name)
        elif isinstance(node, For):
            names += [v.var.name for v in node.iter_args if isinstance(v.var.type, TileType)]
            names += [r.name for r in node.results if isinstance(r.type, TileType)]
        elif isinstance(node, If):
            names += _staged(node.then_body) + _staged(node.else_body)
            names += [r.name for r in node.results if isinstance(r.type, TileType)]
    return tuple(names)


def _plan(node: object) -> For | None:
    if isinstance(node, For) and node.kind is ForKind.pipeline:
        return dataclasses.replace(node, staged=_staged(node.body))
    return None


def _plan_function(fn: Function) -> Function:
    loops = [n for n in walk(fn.body) if isinstance(n, For) and n.kind is ForKind.pipeline]
    for loop in loops:  # outermost first: errors name the first bad loop in source order
        _check(loop)
    return rewrite(fn, _plan) if loops else fn


def plan_pipeline_loops(program: Program, ctx: PassContext) -> Program:
    """Validate every pl.pipeline loop and record its plan on it (``For.staged``)."""
    fns = tuple(fn if fn.external_source is not None else _plan_function(fn) for fn in program.functions)
    return with_functions(program, fns)
