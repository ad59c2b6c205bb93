"""Name bookkeeping of one kernel: SSA names and parameter bindings."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any

from pypto.frontend.consteval import MISSING
from pypto.ir.enums import Direction
from pypto.ir.types import Type


class Names:
    """SSA name allocation; fresh names avoid every identifier the function mentions."""

    def __init__(self, reserved: set[str]) -> None:
        self.reserved = reserved
        self.used: set[str] = set()

    def claim(self, name: str) -> str:
        """The IR name for a new binding of the Python name ``name``."""
        if name not in self.used:
            self.used.add(name)
            return name
        return self.fresh(name)

    def fresh(self, base: str) -> str:
        name, k = base, 0
        while name in self.used or name in self.reserved:
            k += 1
            name = f"{base}_{k}"
        self.used.add(name)
        return name


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
