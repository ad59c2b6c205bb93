"""Generic traversal of IR trees (nodes, and the types and memrefs they hold).

Passes use :func:`walk` to find nodes and :func:`rewrite` to rebuild a tree bottom-up; both
work on any frozen dataclass, so a new node kind needs no visitor boilerplate.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from pypto.ir.bind import infer_call_type
from pypto.ir.expr import Call, Node, Var
from pypto.ir.types import Type

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

N = TypeVar("N")
Tree = TypeVar("Tree", bound="DataclassInstance")  # what rewrite rebuilds: an IR node, a function


# Per class: the names of its compared fields (spans are not compared), or None when it is
# not a dataclass. Passes walk the tree many times; asking ``dataclasses`` at every node was
# most of a small kernel's walking time.
_TREE_FIELDS: dict[type, tuple[str, ...] | None] = {}


def _tree_fields(cls: type) -> tuple[str, ...] | None:
    try:
        return _TREE_FIELDS[cls]
    except KeyError:
        is_tree = dataclasses.is_dataclass(cls) and not issubclass(cls, type)
        names = tuple(f.name for f in dataclasses.fields(cls) if f.compare) if is_tree else None
        _TREE_FIELDS[cls] = names
        return names


def walk(node: Any) -> Iterator[Any]:
    """Every dataclass value under ``node`` (itself first), in field order."""
    stack = [node]
    while stack:
        cur = stack.pop()
        if isinstance(cur, tuple):
            stack.extend(reversed(cur))
            continue
        names = _tree_fields(type(cur))
        if names is None:
            continue
        yield cur
        stack.extend([getattr(cur, name) for name in reversed(names)])


def _rewrite_value(value: Any, fn: Callable[[Any], Any]) -> Any:
    if isinstance(value, tuple):
        items = tuple(_rewrite_value(v, fn) for v in value)
        return items if any(a is not b for a, b in zip(items, value)) else value
    if _tree_fields(type(value)) is not None:
        return rewrite(value, fn)
    return value


def rewrite(node: Tree, fn: Callable[[Any], Any]) -> Tree:
    """Rebuild ``node`` bottom-up; ``fn(x)`` returns a replacement for ``x`` or ``None``."""
    changes = {}
    for name in _tree_fields(type(node)) or ():
        old = getattr(node, name)
        new = _rewrite_value(old, fn)
        if new is not old:
            changes[name] = new
    rebuilt = dataclasses.replace(node, **changes) if changes else node
    if changes and isinstance(rebuilt, Call):  # new arguments: the result type follows them
        rebuilt = dataclasses.replace(rebuilt, type=infer_call_type(rebuilt))
    out = fn(rebuilt)
    return rebuilt if out is None else out


def retype(node: Tree, types: Mapping[str, Type]) -> Tree:
    """``node`` with every ``Var`` named in ``types`` (defs and uses) given its new type."""

    def fix(x: Any) -> Any:
        if isinstance(x, Var) and x.name in types and x.type != types[x.name]:
            return dataclasses.replace(x, type=types[x.name])
        return None

    return rewrite(node, fix)


def nodes_of(node: Any, cls: type[N]) -> list[N]:
    """All nodes of class ``cls`` under ``node``."""
    return [n for n in walk(node) if isinstance(n, cls)]


__all__ = ["Node", "walk", "rewrite", "retype", "nodes_of"]
