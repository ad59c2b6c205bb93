"""Arguments of the cluster forms of a scope: ``with pl.cluster(name_hint=..., deps=[...])``
and ``pl.at(..., optimizations=[pl.split(pl.SplitMode.UP_DOWN), pl.cross_core_slot(slot_num=4)])``."""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Any, NamedTuple

from pypto.errors import SourceSpan, TypeCheckError
from pypto.ir.enums import SplitMode
from pypto.language.markers import ScopeMarker

CLUSTER_KEYWORDS = ("name_hint", "deps")
KNOWN = "pl.split(pl.SplitMode.<MODE>), pl.cross_core_slot(slot_num=N)"


class Optimizations(NamedTuple):
    """What ``optimizations=[...]`` asks of a scope: how its AIVs share tiles (``split``) and
    how deep the rings of its automatic cross-core pipes are (``slots``); None: not given."""

    split: SplitMode | None = None
    slots: int | None = None


def parse_optimizations(
    node: ast.expr | None, fold: Callable[[ast.expr], Any], span: Callable[[ast.AST], SourceSpan | None]
) -> Optimizations:
    """The entries of ``optimizations=[...]`` (each at most once, in any order)."""
    if node is None:
        return Optimizations()
    items = node.elts if isinstance(node, (ast.List, ast.Tuple)) else None
    if items is None:
        raise TypeCheckError(
            "optimizations must be a list, e.g. [pl.split(pl.SplitMode.UP_DOWN)]", span(node)
        )
    found: dict[str, Any] = {}
    for item in items:
        marker = fold(item.func) if isinstance(item, ast.Call) else None
        kind = marker.dsl_name if isinstance(marker, ScopeMarker) else None
        if kind not in ("split", "cross_core_slot"):
            raise TypeCheckError(f"unknown optimization `{ast.unparse(item)}`; known: {KNOWN}", span(item))
        if kind in found:
            raise TypeCheckError(f"pl.{kind} is given twice in optimizations=", span(item))
        assert isinstance(item, ast.Call)  # kind is known only for a call
        found[kind] = (_split if kind == "split" else _slots)(item, fold, span)
    return Optimizations(found.get("split"), found.get("cross_core_slot"))


def _split(item: ast.Call, fold: Callable[[ast.expr], Any], span: Callable) -> SplitMode:
    args = list(item.args) + [kw.value for kw in item.keywords if kw.arg == "mode"]
    mode = fold(args[0]) if len(args) == 1 else None
    if not isinstance(mode, SplitMode):
        raise TypeCheckError("pl.split takes one pl.SplitMode (NONE, UP_DOWN, LEFT_RIGHT)", span(item))
    return mode


def _slots(item: ast.Call, fold: Callable[[ast.expr], Any], span: Callable) -> int:
    """``pl.cross_core_slot(slot_num=N)``: N slots per ring, a compile-time integer >= 1."""
    args = list(item.args) + [kw.value for kw in item.keywords if kw.arg == "slot_num"]
    other = [kw.arg for kw in item.keywords if kw.arg != "slot_num"]
    n = fold(args[0]) if len(args) == 1 and not other else None
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise TypeCheckError(
            "pl.cross_core_slot takes slot_num=N, a compile-time integer >= 1 (the ring depth "
            f"of the scope's cross-core pipes), got `{ast.unparse(item)}`",
            span(item),
        )
    return n
