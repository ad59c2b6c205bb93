"""Arguments of the cluster forms of a scope: ``with pl.cluster(name_hint=..., deps=[...])``
and ``pl.at(..., optimizations=[pl.split(pl.SplitMode.UP_DOWN)])``."""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Any

from pypto.errors import SourceSpan, TypeCheckError
from pypto.ir.enums import SplitMode
from pypto.language.markers import ScopeMarker

CLUSTER_KEYWORDS = ("name_hint", "deps")


def parse_optimizations(
    node: ast.expr, fold: Callable[[ast.expr], Any], span: Callable[[ast.AST], SourceSpan | None]
) -> SplitMode | None:
    """The split mode named by ``optimizations=[pl.split(mode)]`` (None: no split given)."""
    items = node.elts if isinstance(node, (ast.List, ast.Tuple)) else None
    if items is None:
        raise TypeCheckError(
            "optimizations must be a list, e.g. [pl.split(pl.SplitMode.UP_DOWN)]", span(node)
        )
    split = None
    for item in items:
        marker = fold(item.func) if isinstance(item, ast.Call) else None
        if not (
            isinstance(item, ast.Call) and isinstance(marker, ScopeMarker) and marker.dsl_name == "split"
        ):
            raise TypeCheckError(
                f"unknown optimization `{ast.unparse(item)}`; known: pl.split(pl.SplitMode.<MODE>)",
                span(item),
            )
        args = list(item.args) + [kw.value for kw in item.keywords if kw.arg == "mode"]
        mode = fold(args[0]) if len(args) == 1 else None
        if not isinstance(mode, SplitMode):
            raise TypeCheckError("pl.split takes one pl.SplitMode (NONE, UP_DOWN, LEFT_RIGHT)", span(item))
        split = mode
    return split
