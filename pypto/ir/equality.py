"""Structural equality of IR trees: spans are ignored, and by default so are variable
names (two programs equal up to a consistent renaming are equal). Fields that hold names of
values (``NAME_REFS`` metadata: a pipeline plan's staged tiles, the clone groups) follow the
same renaming as the variables they name."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from pypto.ir.expr import Var
from pypto.ir.printer import print_program
from pypto.ir.stmt import Function, Program


class _Mismatch(Exception):
    def __init__(self, path: str, a: Any, b: Any) -> None:
        super().__init__(f"at {path}: {a!r} != {b!r}")
        self.path = path


class _Comparer:
    def __init__(self, names: bool) -> None:
        self.names = names
        self.fwd: dict[str, str] = {}
        self.back: dict[str, str] = {}

    def var(self, a: Var, b: Var, path: str) -> None:
        self.eq(a.type, b.type, path + ".type")
        self.name(a.name, b.name, path)

    def name(self, a: str, b: str, path: str) -> None:
        if self.names:
            if a != b:
                raise _Mismatch(path, a, b)
            return
        # Bind on first sight: SSA defs precede uses in field order, so this is alpha-equality.
        if self.fwd.setdefault(a, b) != b or self.back.setdefault(b, a) != a:
            raise _Mismatch(path, a, b)

    def names_field(self, a: Any, b: Any, path: str) -> None:
        """A ``NAME_REFS`` field: a name, a tuple of names, or None."""
        if isinstance(a, str) and isinstance(b, str):
            return self.name(a, b, path)
        if not (isinstance(a, tuple) and isinstance(b, tuple)):
            return self.eq(a, b, path)
        if len(a) != len(b):
            raise _Mismatch(path + ".len", len(a), len(b))
        for i, (x, y) in enumerate(zip(a, b)):
            self.name(x, y, f"{path}[{i}]")

    def eq(self, a: Any, b: Any, path: str) -> None:
        if type(a) is not type(b):
            raise _Mismatch(path, a, b)
        if isinstance(a, tuple):
            if len(a) != len(b):
                raise _Mismatch(path + ".len", len(a), len(b))
            for i, (x, y) in enumerate(zip(a, b)):
                self.eq(x, y, f"{path}[{i}]")
        elif isinstance(a, Var):
            self.var(a, b, path)
        elif dataclasses.is_dataclass(a):
            if isinstance(a, Function):  # names are per function
                self.fwd, self.back = {}, {}
            for f in dataclasses.fields(a):
                if not f.compare:
                    continue
                compare = self.names_field if f.metadata.get("names") else self.eq
                compare(getattr(a, f.name), getattr(b, f.name), f"{path}.{f.name}")
        elif isinstance(a, float):
            if not (a == b or (math.isnan(a) and math.isnan(b))):
                raise _Mismatch(path, a, b)
        elif a != b:
            raise _Mismatch(path, a, b)


def structural_diff(a: Any, b: Any, *, names: bool = False) -> str | None:
    """``None`` when equal, else a one-line description of the first difference."""
    try:
        _Comparer(names).eq(a, b, type(a).__name__)
    except _Mismatch as m:
        return str(m)
    return None


def structural_equal(a: Any, b: Any, *, names: bool = False) -> bool:
    """True when ``a`` and ``b`` are the same IR up to spans (and names unless ``names``)."""
    return structural_diff(a, b, names=names) is None


def assert_structural_equal(a: Any, b: Any, *, names: bool = False) -> None:
    """Raise ``AssertionError`` with the first difference and both programs printed."""
    diff = structural_diff(a, b, names=names)
    if diff is None:
        return

    text = diff
    if isinstance(a, Program) and isinstance(b, Program):
        text += f"\n--- lhs\n{print_program(a)}\n--- rhs\n{print_program(b)}"
    raise AssertionError(text)
