"""The pipelining records of printed IR, read back from a pass dump.

Two pass decisions are printed as DSL keywords (see :mod:`pypto.ir.printer`):

* ``for i in pl.pipeline(0, 8, stage=2, staged=["t", "e"]):`` — PlanPipelineLoops' plan
  (``For.staged``): the tiles of the body each clone gets its own copy of;
* ``@pl.function(..., pipeline_groups=[pl.PipelineGroup("i", depth=2, blocks=[[
  pl.PipelineClone(staged=[...], defs=[...], hoisted=[...]), ...], ...])])`` — the clones
  ExpandPipelineLoops made (``Function.pipeline_groups``), which the memory planner reads.

They are compiler records, not a kernel author's knobs: only the ``@pl.program`` form (the
form dumps are printed in; text, file or class) accepts them, so a pass can be rerun from a
dump. A ``@pl.jit`` kernel that writes ``staged=`` is refused here; one calling a
``@pl.function(pipeline_groups=...)`` kernel is refused by the parser. The verifier checks
that every name they hold is a value of the function.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Any

from pypto.errors import SourceSpan, TypeCheckError, UnsupportedSyntaxError
from pypto.ir.stmt import PipelineClone, PipelineGroup

Span = Callable[[ast.AST], SourceSpan | None]

NOT_IN_KERNELS = (
    "`{what}` is a compiler record printed in pass dumps (the @pl.program form); "
    "a @pl.jit kernel writes only `pl.pipeline(..., stage=N)` and the compiler plans the rest"
)


def name_list(node: ast.expr, what: str, span: Span) -> tuple[str, ...]:
    """``["t", "e"]``: a list of value names, as the printer writes them."""
    items = node.elts if isinstance(node, (ast.List, ast.Tuple)) else []
    names = tuple(e.value for e in items if isinstance(e, ast.Constant) and isinstance(e.value, str))
    if not isinstance(node, (ast.List, ast.Tuple)) or len(names) != len(items):
        raise TypeCheckError(f'{what} must be a list of value names, e.g. ["t", "e"]', span(node))
    return names


def staged(node: ast.expr, ir_form: bool, span: Span) -> tuple[str, ...]:
    """``pl.pipeline(..., staged=[...])``, in the ``@pl.program`` form only."""
    if not ir_form:
        raise UnsupportedSyntaxError(NOT_IN_KERNELS.format(what="staged="), span(node))
    return name_list(node, "pl.pipeline staged=", span)


def _call_of(node: ast.expr, cls: type, fold: Callable[[ast.AST], Any], span: Span) -> ast.Call:
    if not (isinstance(node, ast.Call) and fold(node.func) is cls):
        raise TypeCheckError(f"expected pl.{cls.__name__}(...), got `{ast.unparse(node)}`", span(node))
    return node


def _keywords(call: ast.Call, names: tuple[str, ...], span: Span) -> dict[str, ast.expr]:
    """Positional then keyword arguments of ``call`` by parameter name; all required."""
    what = ast.unparse(call.func)
    if len(call.args) > len(names):
        raise TypeCheckError(f"{what} takes at most {len(names)} arguments", span(call))
    args = dict(zip(names, call.args))
    for kw in call.keywords:
        if kw.arg not in names or kw.arg in args:
            raise TypeCheckError(f"{what} has no (second) parameter `{kw.arg}`", span(kw))
        args[kw.arg] = kw.value
    missing = [n for n in names if n not in args]
    if missing:
        raise TypeCheckError(f"{what} needs {', '.join(missing)}", span(call))
    return args


def _clone(node: ast.expr, fold: Callable[[ast.AST], Any], span: Span) -> PipelineClone:
    args = _keywords(_call_of(node, PipelineClone, fold, span), ("staged", "defs", "hoisted"), span)
    lists = {k: name_list(v, f"pl.PipelineClone {k}=", span) for k, v in args.items()}
    return PipelineClone(lists["staged"], lists["defs"], lists["hoisted"], span=span(node))


def _group(node: ast.expr, fold: Callable[[ast.AST], Any], span: Span) -> PipelineGroup:
    args = _keywords(_call_of(node, PipelineGroup, fold, span), ("name", "depth", "blocks"), span)
    name, depth = fold(args["name"]), fold(args["depth"])
    if not isinstance(name, str):
        raise TypeCheckError("pl.PipelineGroup name must be the loop's name", span(args["name"]))
    if not isinstance(depth, int) or isinstance(depth, bool) or depth < 1:
        raise TypeCheckError("pl.PipelineGroup depth must be an int >= 1", span(args["depth"]))
    blocks = args["blocks"]
    elts = blocks.elts if isinstance(blocks, (ast.List, ast.Tuple)) else None
    rows = [b.elts for b in elts or () if isinstance(b, (ast.List, ast.Tuple))]
    if elts is None or len(rows) != len(elts):
        raise TypeCheckError("pl.PipelineGroup blocks must be a list of lists of clones", span(blocks))
    clones = tuple(tuple(_clone(c, fold, span) for c in row) for row in rows)
    return PipelineGroup(name, depth, clones, span=span(node))


def pipeline_groups(node: ast.expr, fold: Callable[[ast.AST], Any], span: Span) -> tuple[PipelineGroup, ...]:
    """``@pl.function(pipeline_groups=[pl.PipelineGroup(...), ...])``."""
    if not isinstance(node, (ast.List, ast.Tuple)):
        raise TypeCheckError("pipeline_groups must be a list of pl.PipelineGroup(...)", span(node))
    return tuple(_group(g, fold, span) for g in node.elts)
