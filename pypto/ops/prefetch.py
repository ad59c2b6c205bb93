"""The prefetch family: warming the L2 with a GM region ahead of the kernels that read it
(upstream's ``pl.prefetch.*``), implemented in ``csrc/chip/isa/transfer.cpp``.

Upstream defines a prefetch as a cache hint: ``async_prefetch(src, ctx)`` starts pulling a flat
GM region into the L2 while other work proceeds and ``wait(event, session)`` blocks until it
has landed; no tensor value changes. Here it is a real transfer: TPREFETCH reads ``src`` on the
core's MTE2 pipe, priced by the memory system like a TLOAD of the same bytes (the lead, the
port bandwidth, HBM for the lines that miss), and installs its lines in the simulated L2, so
a later load of those bytes hits. The context, session and event are compile-time handles
(the device's SDMA workspace has no counterpart here): ``make_context`` and ``session`` emit
nothing, and ``wait`` is a barrier on MTE2, the pipe the prefetches queue on.
"""

from __future__ import annotations

from pypto.ir.dtypes import ASYNC_EVENT, ASYNC_SESSION, BOOL, PREFETCH_CONTEXT, DataType
from pypto.ir.enums import Pipe
from pypto.ir.expr import Call
from pypto.ir.op_def import Kind, OpDef, ParamSpec
from pypto.ir.op_rules import Bound
from pypto.ir.types import ScalarType, TensorType, Type, format_type, is_static
from pypto.ops.family import CEntry, Cpp, Family

CONTEXT, SESSION, EVENT = PREFETCH_CONTEXT, ASYNC_SESSION, ASYNC_EVENT
MAKERS = {
    CONTEXT: "pl.prefetch.make_context()",
    SESSION: "pl.prefetch.session(ctx)",
    EVENT: "pl.prefetch.async_prefetch",
}


def _none(_types: object) -> None:
    return None


def _mte2(_types: object) -> Pipe:
    return Pipe.MTE2


def _handle(b: Bound, name: str, dtype: DataType) -> None:
    t = b.type(name)
    if not (isinstance(t, ScalarType) and t.dtype == dtype):
        raise b.fail(f"`{name}` must be the handle {MAKERS[dtype]} gives, got {format_type(t)}")


def context_rule(b: Bound) -> Type:
    return ScalarType(CONTEXT)


def session_rule(b: Bound) -> Type:
    _handle(b, "ctx", CONTEXT)
    return ScalarType(SESSION)


def prefetch_rule(b: Bound) -> Type:
    """Upstream's region: a flat GM tensor of a static shape, every dim 1 but the last."""
    src = b.type("src")
    _handle(b, "ctx", CONTEXT)
    if not isinstance(src, TensorType):
        raise b.fail(
            f"`src` must be a GM tensor (a kernel parameter or a view of one), got {format_type(src)}"
        )
    if not is_static(src.shape) or any(d != 1 for d in src.shape[:-1]):
        raise b.fail(
            f"`src` {format_type(src)} must be a flat region of a static shape, [N] or [1, N] "
            "(pl.reshape the tensor to one dim in orchestration)"
        )
    return ScalarType(EVENT)


def wait_rule(b: Bound) -> Type:
    _handle(b, "event", EVENT)
    _handle(b, "session", SESSION)
    return ScalarType(BOOL)


def _emit_prefetch(c: Call, dst: str | None, cpp: Cpp) -> list[str]:
    return [f"TPREFETCH({cpp.arg(c, 'src')}.desc);"]  # the event is compile-time: nothing to bind


def _emit_wait(c: Call, dst: str | None, cpp: Cpp) -> list[str]:
    # Every prefetch before it is queued on MTE2: once that pipe drains, they have landed.
    done = [f"const bool {dst} = true;"] if dst is not None else []
    return ["pipe_barrier(PIPE_MTE2);", *done]


def _nothing(c: Call, dst: str | None, cpp: Cpp) -> list[str]:
    return []  # a compile-time handle


OPS = (
    OpDef("prefetch.make_context", (), context_rule, "tile", _none,
          doc="a prefetch context (upstream: a runtime SDMA workspace; here a compile-time handle)"),
    OpDef("prefetch.session", (ParamSpec("ctx", Kind.SCALAR),), session_rule, "tile", _none,
          doc="the session of a prefetch context, for wait"),
    OpDef("prefetch.async_prefetch", (ParamSpec("src", Kind.TENSOR), ParamSpec("ctx", Kind.SCALAR)),
          prefetch_rule, "tile", _mte2,
          doc="start pulling the flat GM region src into the L2 (TPREFETCH on MTE2); values unchanged"),
    OpDef("prefetch.wait", (ParamSpec("event", Kind.SCALAR), ParamSpec("session", Kind.SCALAR)), wait_rule,
          "tile", _none, doc="wait until the prefetches issued before it landed (a barrier on MTE2); True"),
)  # fmt: skip

ABI = (
    CEntry(
        "pypto_tprefetch",
        ("const pypto_tensor* src",),
        "Reads the contiguous GM tensor src into the L2 on MTE2 (no on-chip destination): priced\n"
        "as a GM read of its bytes, its lines installed so that later transfers hit.",
        (("TPREFETCH", {}),),
    ),
)

FAMILY = Family(
    name="prefetch",
    ops=OPS,
    dsl={},
    emitters={
        "prefetch.make_context": _nothing,
        "prefetch.session": _nothing,
        "prefetch.async_prefetch": _emit_prefetch,
        "prefetch.wait": _emit_wait,
    },
    abi=ABI,
    isa_file="transfer.cpp",
)
