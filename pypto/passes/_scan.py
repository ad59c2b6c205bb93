"""Small queries over IR bodies shared by several passes (private)."""

from __future__ import annotations

from collections.abc import Iterator

from pypto.ir.expr import Var
from pypto.ir.stmt import Assign, For, If, Stmt
from pypto.ir.visit import walk


def defined_names(body: tuple[Stmt, ...]) -> set[str]:
    """Every name a body binds (assignments, loop variables, iter args, results)."""
    names: set[str] = set()
    for node in walk(body):
        if isinstance(node, Assign):
            names.add(node.var.name)
        elif isinstance(node, For):
            names.add(node.var.name)
            names.update(it.var.name for it in node.iter_args)
            names.update(r.name for r in node.results)
        elif isinstance(node, If):
            names.update(r.name for r in node.results)
    return names


def used_vars(body: tuple[Stmt, ...]) -> Iterator[Var]:
    """Var uses and defs in walk order (callers filter by what they need)."""
    for node in walk(body):
        if isinstance(node, Var):
            yield node
