"""The pypto kernel language: ``import pypto.language as pl``.

Everything a kernel author writes lives here: dtypes (``pl.FP32`` ...), memory spaces
(``pl.Mem`` / ``pl.MemorySpace``), levels, function types, annotations (``pl.Tensor``,
``pl.Tile``, ``pl.Out``, ``pl.MemRef``), loops, scopes, decorators and the ops of the op
table (``pl.load``, ``pl.exp``, ``pl.tile.*``, ``pl.tensor.*``). Ops, loops and scopes are
markers: they mean something only inside a kernel body, which pypto compiles rather than
runs.
"""

from pypto.ir.dtypes import (
    ASYNC_EVENT,
    ASYNC_SESSION,
    BF16,
    BOOL,
    FP16,
    FP32,
    INDEX,
    INT8,
    INT16,
    INT32,
    INT64,
    PREFETCH_CONTEXT,
    TASK_ID,
    UINT8,
    UINT32,
    DataType,
)
from pypto.ir.enums import (
    AtomicType,
    Direction,
    FunctionType,
    Level,
    MemorySpace,
    PadValue,
    Pipe,
    ScopeMode,
    SplitMode,
    TensorLayout,
)
from pypto.ir.enums import ForKind as _ForKind
from pypto.ir.enums import MaskPattern as _MaskPattern
from pypto.ir.enums import MemorySpace as Mem
from pypto.language.annotations import Array, InOut, MemRef, Out, Scalar, Tensor, TensorView, Tile, dynamic
from pypto.language.decorators import JitFunction, KernelFunction, function, jit, program
from pypto.language.markers import (
    CondMarker,
    ConstMarker,
    LoopMarker,
    Namespace,
    NoDepMarker,
    ScalarFnMarker,
    ScopeMarker,
    StaticAssertMarker,
    WhileMarker,
    YieldMarker,
    op_markers,
)

range = LoopMarker(_ForKind.range)  # noqa: A001 - the DSL spelling shadows the builtin on purpose
parallel = LoopMarker(_ForKind.parallel)
pipeline = LoopMarker(_ForKind.pipeline)
unroll = LoopMarker(_ForKind.unroll)
at = ScopeMarker("at", "pl.at(level=pl.Level.CORE_GROUP, name_hint=..., deps=[...]): one InCore task")
spmd = ScopeMarker("spmd", "pl.spmd(n, name_hint=..., deps=[...]): n blocks of one InCore task")
spmd_submit = ScopeMarker("spmd_submit", "out, tid = pl.spmd_submit(kernel, *args, core_num=n, deps=[...])")
submit = ScopeMarker("submit", "out, tid = pl.submit(kernel, *args, deps=[...]): one task of a kernel")
yield_ = YieldMarker("yield_", "pl.yield_(values...): next values of loop-carried names")
while_ = WhileMarker("while_", "for (x,) in pl.while_(init_values=(x0,)): pl.cond(...) first, pl.yield_ last")
cond = CondMarker("cond", "pl.cond(condition): the first statement of a pl.while_ body")
const = ConstMarker("const", "pl.const(value, dtype): a scalar constant of that dtype")
cluster = ScopeMarker(
    "cluster", "pl.cluster(name_hint=..., deps=[...]): one AIC + its AIVs, joined by pl.tpush_*/pl.tpop_*"
)
scope = ScopeMarker("scope", "pl.scope(mode=pl.ScopeMode.AUTO): a region of task submissions")
manual_scope = ScopeMarker("manual_scope", "pl.manual_scope(): tasks whose dependencies are only deps=")
split = ScopeMarker("split", "pl.split(pl.SplitMode.UP_DOWN): in pl.at(..., optimizations=[...])")
split_aiv = ScopeMarker(
    "split_aiv", "for aiv_id in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN): vector work shared by the AIVs"
)
cross_core_slot = ScopeMarker(
    "cross_core_slot",
    "pl.cross_core_slot(slot_num=N): in pl.at(..., optimizations=[...]), the pipes' ring depth",
)
min = ScalarFnMarker("min", "pl.min(a, b, ...): the smallest of scalar values")  # noqa: A001
max = ScalarFnMarker("max", "pl.max(a, b, ...): the largest of scalar values")  # noqa: A001
no_dep = NoDepMarker("no_dep", "pl.no_dep(t): a kernel-call argument no dependency is inferred from")
static_assert = StaticAssertMarker("static_assert", "pl.static_assert(cond, msg=''): checked at compile time")

tile = Namespace("tile", MaskPattern=_MaskPattern)
tensor = Namespace("tensor")
system = Namespace("system")  # sync ops the compiler inserts; spelled so dumps re-parse
scalar = Namespace("scalar")  # pl.scalar.cast: what pl.cast of a scalar prints as
array = Namespace("array")  # pl.array.create(n, dtype): scalars of orchestration code
prefetch = Namespace("prefetch")  # pl.prefetch.async_prefetch: warming the L2 ahead of use
PrefetchAsyncContext, AsyncSession, AsyncEvent = PREFETCH_CONTEXT, ASYNC_SESSION, ASYNC_EVENT  # its handles
TaskId = Scalar[TASK_ID]  # the type of `with pl.at(...) as tid`

__all__ = [
    "BF16",
    "BOOL",
    "FP16",
    "FP32",
    "INDEX",
    "INT8",
    "INT16",
    "INT32",
    "INT64",
    "UINT8",
    "UINT32",
    "DataType",
    "AtomicType",
    "Direction",
    "FunctionType",
    "Level",
    "Mem",
    "MemorySpace",
    "PadValue",
    "TensorLayout",
    "Pipe",
    "SplitMode",
    "ScopeMode",
    "scope",
    "manual_scope",
    "no_dep",
    "InOut",
    "MemRef",
    "Out",
    "Scalar",
    "Tensor",
    "TensorView",
    "Tile",
    "dynamic",
    "JitFunction",
    "KernelFunction",
    "function",
    "jit",
    "autotune",
    "program",
    "range",
    "parallel",
    "pipeline",
    "unroll",
    "at",
    "spmd",
    "spmd_submit",
    "submit",
    "cluster",
    "split",
    "cross_core_slot",
    "split_aiv",
    "yield_",
    "while_",
    "cond",
    "const",
    "static_assert",
    "min",
    "max",
    "tile",
    "tensor",
    "system",
    "scalar",
    "array",
    "prefetch",
    "PrefetchAsyncContext",
    "AsyncEvent",
    "AsyncSession",
    "Array",
    "TASK_ID",
    "TaskId",
]


class _Names(list):
    """``__all__``: a star-import reads it by iterating, which first adds the op names."""

    def __iter__(self):
        _ops()
        return super().__iter__()


def _ops() -> dict:
    """The op markers (``pl.load``, ``pl.exp`` ...), built on first use and then kept as module
    attributes: the op table is the heaviest part of the language to import."""
    ops = globals().get("_OP_MARKERS")
    if ops is None:
        ops = op_markers()
        globals().update(ops, _OP_MARKERS=ops)
        list.extend(__all__, sorted(ops))
    return ops


__all__ = _Names(__all__)


# The records a pass dump's @pl.function(pipeline_groups=[...]) is written with: the IR's own
# classes, loaded only when a dump is imported as Python.
_DUMP_RECORDS = ("PipelineClone", "PipelineGroup")


def __getattr__(name: str):
    if name in _DUMP_RECORDS:
        from pypto.ir import stmt

        return getattr(stmt, name)
    if name == "autotune":  # the tuner (and its executors) load only when a kernel uses it
        from pypto.tune.autotune import autotune

        return autotune
    if not name.startswith("__"):
        ops = _ops()
        if name in ops:
            return ops[name]
    raise AttributeError(f"module 'pypto.language' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_ops()})
