"""Enumerations shared by the DSL and the IR.

The DSL re-exports these under the user spellings (``pl.Mem.Vec``, ``pl.Level.CORE_GROUP``),
so a folded annotation or keyword argument *is* the IR value; the printer spells each member
back through ``dsl_name``.
"""

from __future__ import annotations

import enum


class _DslEnum(enum.Enum):
    """An enum whose members print as the DSL attribute path that names them."""

    @property
    def dsl_name(self) -> str:
        return f"{_PREFIX[type(self)]}.{self.name}"

    def __repr__(self) -> str:
        return self.dsl_name


class MemorySpace(_DslEnum):
    """Where a tile lives. DDR is global memory (tensors; the simulator's GM); the rest are
    on-chip buffers. Members and order are the simulator's pypto_mem, compared with it by
    tests/sim/test_hardware_facts.py (this module stays free of the native library)."""

    DDR = "ddr"
    Vec = "vec"  # UB, on the vector core (AIV)
    Mat = "mat"  # L1, on the cube core (AIC)
    Left = "left"  # L0A
    Right = "right"  # L0B
    Acc = "acc"  # L0C
    Bias = "bias"


class Level(_DslEnum):
    """Hardware level a ``pl.at`` scope runs at."""

    CORE_GROUP = "core_group"


class FunctionType(_DslEnum):
    """What kind of function: host orchestration, or a device kernel (core type optional)."""

    Orchestration = "orchestration"
    # Upstream's default, "unspecified" function type: a host function whose pl.at scopes the
    # compiler outlines into kernels, which is what an orchestration function is here (an alias:
    # it prints as Orchestration).
    Opaque = "orchestration"
    InCore = "incore"  # a device kernel whose core type (AIV/AIC) is still to be decided
    AIV = "aiv"
    AIC = "aic"
    # One AIC and its AIVs launched together (a cluster task): the body only calls the AIC
    # kernel and the AIV kernel it was split into, which talk through cross-core tile pipes.
    Group = "group"

    @property
    def is_incore(self) -> bool:
        return self not in (FunctionType.Orchestration, FunctionType.Group)


class AtomicType(_DslEnum):
    """How a store combines with what is already in global memory."""

    None_ = "none"
    Add = "add"


class MaskPattern:
    """Which elements of each row a mask-form gather keeps, as upstream's hardware selectors.
    Read right to left: P0101 keeps elements 0, 2, 4, ... (the values of (value, index) pairs),
    P1010 elements 1, 3, 5, ... (the indices); the four-bit ones keep one element in four."""

    P0101 = 1
    P1010 = 2
    P0001 = 3
    P0010 = 4
    P0100 = 5
    P1000 = 6
    P1111 = 7


class PadValue(_DslEnum):
    """Fill value for the padded (invalid) region of a tile."""

    zero = "zero"
    max = "max"
    min = "min"


class TensorLayout(_DslEnum):
    """How a tensor's elements lie in GM (``pl.TensorView(layout=)``): ND is row-major; DN
    column-major; NZ the cube's fractal layout."""

    ND = "ND"
    DN = "DN"
    NZ = "NZ"


class Direction(_DslEnum):
    """Data direction of a function parameter (default In)."""

    In = "in"
    Out = "out"
    InOut = "inout"


ParamDirection = Direction  # upstream PyPTO's name for it (pypto.ir.ParamDirection.Out, ...)


class ForKind(_DslEnum):
    """Loop flavour: the DSL function that spelled it (``pl.range``, ``pl.parallel`` ...)."""

    range = "range"
    parallel = "parallel"
    pipeline = "pipeline"
    unroll = "unroll"


class Pipe(_DslEnum):
    """Hardware pipe an instruction issues on (names and order as in the run report and the
    simulator's pypto_pipe, compared with it by tests/sim/test_hardware_facts.py)."""

    MTE2 = "mte2"  # GM -> on-chip
    MTE1 = "mte1"  # L1 -> L0A/L0B
    CUBE = "cube"
    VECTOR = "vector"
    FIXPIPE = "fixpipe"  # L0C -> GM / L1
    MTE3 = "mte3"  # UB -> GM
    SCALAR = "scalar"


class SplitMode(_DslEnum):
    """How the two AIVs of a cluster share a tile pushed by the AIC (upstream's numbering:
    0 none — one AIV takes the whole tile; 1 rows halved; 2 columns halved)."""

    NONE = 0
    UP_DOWN = 1
    LEFT_RIGHT = 2


class ScopeMode(_DslEnum):
    """``pl.scope(mode=...)``: AUTO infers a task's dependencies from the tensors it shares with
    earlier tasks; MANUAL (``pl.manual_scope()``) infers none, so ``deps=`` alone orders them."""

    AUTO = 0
    MANUAL = 1


# The DSL attribute path of each enum, used by the printer (pl.Mem.Vec, pl.range, ...).
_PREFIX: dict[type, str] = {
    MemorySpace: "pl.Mem",
    Level: "pl.Level",
    FunctionType: "pl.FunctionType",
    AtomicType: "pl.AtomicType",
    PadValue: "pl.PadValue",
    TensorLayout: "pl.TensorLayout",
    Direction: "pl.Direction",
    ForKind: "pl",
    Pipe: "pl.Pipe",
    SplitMode: "pl.SplitMode",
    ScopeMode: "pl.ScopeMode",
}


class PassDumpLevel(enum.Enum):
    """``dump_passes``: NONE writes nothing; CONCISE and EXPLICIT write each pass's IR."""

    NONE = "none"
    CONCISE = "concise"
    EXPLICIT = "explicit"
