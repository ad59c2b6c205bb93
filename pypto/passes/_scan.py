"""Small queries over IR bodies shared by several passes (private)."""

from __future__ import annotations

from collections.abc import Iterator

from pypto.ir.expr import Var
from pypto.ir.stmt import Assign, For, If, Stmt
from pypto.ir.visit import walk


def defined_names(body: tuple[Stmt, ...]) -> set[str]:
    """Every name a body binds (assignments, loop variables, iter args, results)."""
    return set(defined_in_order(body))


def defined_in_order(body: tuple[Stmt, ...]) -> tuple[str, ...]:
    """The names of :func:`defined_names` in walk order (stable, for printed records)."""
    names: dict[str, None] = {}
    for node in walk(body):
        if isinstance(node, Assign):
            names[node.var.name] = None
        elif isinstance(node, For):
            names[node.var.name] = None
            names.update((it.var.name, None) for it in node.iter_args)
            names.update((r.name, None) for r in node.results)
        elif isinstance(node, If):
            names.update((r.name, None) for r in node.results)
    return tuple(names)


def used_vars(body: tuple[Stmt, ...]) -> Iterator[Var]:
    """Var uses and defs in walk order (callers filter by what they need)."""
    for node in walk(body):
        if isinstance(node, Var):
            yield node
