"""Small queries over IR bodies shared by several passes (private)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator

from pypto.ir.expr import Var
from pypto.ir.stmt import Assign, For, Function, If, Program, Stmt
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


def with_functions(program: Program, functions: Iterable[Function]) -> Program:
    """``program`` with ``functions``; ``program`` itself when each is the one it had (a pass
    that changed nothing hands back the program it was given, which needs no new verify)."""
    fns = tuple(functions)
    if len(fns) == len(program.functions) and all(a is b for a, b in zip(fns, program.functions)):
        return program
    return dataclasses.replace(program, functions=fns)
