"""Parameter bindings of one kernel and the identifiers its fresh names avoid."""

from __future__ import annotations

import ast
from typing import Any

from pypto._dataclass import dataclass
from pypto.frontend.consteval import MISSING
from pypto.ir.enums import Direction
from pypto.ir.types import Type


@dataclass
class ParamBinding:
    """A parameter as specialised (jit) or declared (program): type, direction, value."""

    name: str
    type: Type
    direction: Direction = Direction.In
    value: Any = MISSING  # a specialisation constant for scalars
    span: Any = None


def identifiers(node: ast.AST) -> set[str]:
    """Every identifier a function mentions (fresh names must avoid them all)."""
    found: set[str] = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name):
            found.add(n.id)
        elif isinstance(n, ast.arg):
            found.add(n.arg)
    return found
