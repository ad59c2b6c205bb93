"""The op table's record types: what an op parameter accepts and what an op is.

Kept apart from the table (:mod:`pypto.ir.ops`) so that modules deriving ops from the table
(:mod:`pypto.ir.op_levels`) import the types without importing the table.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import field
from typing import Any

from pypto._dataclass import dataclass
from pypto.ir import op_rules as R
from pypto.ir.enums import MemorySpace, Pipe
from pypto.ir.types import Type


class Kind(enum.Enum):
    """What an op parameter accepts."""

    TILE = "a tile"
    TENSOR = "a tensor"
    ARRAY = "a tile or a tensor"
    SCALAR = "a scalar (number or scalar value)"
    INDICES = "a list of index expressions"
    SHAPE = "a list of compile-time integers"
    DTYPE = "a dtype (pl.FP32, ...)"
    MEMSPACE = "a memory space (pl.Mem.<Space>)"
    ATOMIC = "a pl.AtomicType"
    PAD = "a pl.PadValue"
    BOOL = "True or False"
    INT = "a compile-time integer"
    PIPE = "a pipe (pl.Pipe.<Name>)"
    STR = "a string"
    SPLIT = "a pl.SplitMode (or 0, 1, 2)"
    SEQ = "a pl.array"
    TASKS = "a list of TaskIds (pl.TASK_ID scalars, or pl.array of them)"


_REQUIRED = object()


@dataclass(frozen=True)
class ParamSpec:
    """One op parameter. ``dtype_of`` names the parameter whose dtype a literal scalar takes."""

    name: str
    kind: Kind
    default: Any = _REQUIRED
    optional: bool = False  # None is accepted
    kw_only: bool = False
    dtype_of: str | None = None

    @property
    def required(self) -> bool:
        return self.default is _REQUIRED


PipeRule = Callable[[Mapping[str, "Type | None"]], "Pipe | None"]


@dataclass(frozen=True)
class OpDef:
    """An op: name, parameters, typing rule, placement level, pipe, operand memory spaces."""

    name: str
    params: tuple[ParamSpec, ...]
    infer: R.Rule
    level: str  # "tile" | "tensor" (InCore code only) | "orchestration" | "any" (both)
    pipe: PipeRule
    spaces: Mapping[str, frozenset[MemorySpace]] = field(default_factory=dict)
    doc: str = ""
    # Parameters of this op's tile form that its tensor form leaves to the compiler (scratch):
    # naming one is a WrongLevelError, not an unknown keyword.
    tile_only: tuple[str, ...] = ()

    def param_index(self, name: str) -> int:
        for i, p in enumerate(self.params):
            if p.name == name:
                return i
        raise KeyError(f"{self.name} has no parameter {name!r}")

    def allowed(self, incore: bool) -> bool:
        """Whether the op may appear in InCore code (``incore``) or in orchestration code."""
        return self.level == "any" or (self.level == "orchestration") != incore
