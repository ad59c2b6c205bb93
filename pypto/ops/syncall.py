"""``pl.system.syncall``: a barrier across every block of one ``pl.spmd`` launch, implemented by
``pypto_syncall`` in ``csrc/chip/isa/sync.cpp``.

``mode="hard"`` waits for every core of ``core_type`` in the launch (upstream's FFTS barrier:
the launch fills the cores and starts them together). ``mode="soft"`` counts arrivals in a
zero-initialised ``INT32`` GM workspace of at least 16 elements (one 64-byte cache line) and
polls it, so it also works when fewer blocks than cores take part; ``used_cores`` is the
participant count (``0``: every block of the launch).
"""

from __future__ import annotations

import math
from typing import Any

from pypto.ir.dtypes import INT32
from pypto.ir.enums import Pipe
from pypto.ir.expr import Call
from pypto.ir.op_def import _REQUIRED, Kind, OpDef, ParamSpec
from pypto.ir.op_rules import Bound
from pypto.ir.types import ScalarType, TensorType, Type, VoidType, format_type, is_static
from pypto.ops.family import CEntry, Cpp, Family

CORE_TYPES = ("aiv_only", "aic_only", "mix")  # their index is the C entry's core_type
WORKSPACE_ELEMS = 16  # one 64-byte cache line of INT32 counters


def _p(name: str, kind: Kind, default: Any = _REQUIRED, **kw: Any) -> ParamSpec:
    return ParamSpec(name, kind, default, kw_only=True, **kw)


def _scalar_pipe(_types: object) -> Pipe:
    return Pipe.SCALAR


def _check_workspace(b: Bound) -> None:
    ws = b.type("gm_workspace")
    if not isinstance(ws, TensorType):
        raise b.fail("syncall(mode='soft') needs gm_workspace=, a zero-initialised INT32 GM tensor")
    if ws.dtype != INT32:
        raise b.fail(f"the syncall workspace must be INT32, got {format_type(ws)}")
    if is_static(ws.shape) and math.prod(ws.shape) < WORKSPACE_ELEMS:
        raise b.fail(
            f"the syncall workspace needs at least {WORKSPACE_ELEMS} INT32 elements (a 64-byte "
            f"cache line), got {format_type(ws)}"
        )


def syncall_rule(b: Bound) -> Type:
    mode, core_type = b.literal("mode"), b.literal("core_type")
    if core_type not in CORE_TYPES:
        raise b.fail(f"syncall core_type must be one of {', '.join(CORE_TYPES)}, got {core_type!r}")
    used = b.literal("used_cores")
    if mode == "hard":
        if b.type("gm_workspace") is not None or used is not None:
            raise b.fail("syncall(mode='hard') takes no gm_workspace/used_cores; the soft form does")
        return VoidType()
    if mode != "soft":
        raise b.fail(f"syncall mode must be 'hard' or 'soft', got {mode!r}")
    _check_workspace(b)
    used_type = b.type("used_cores")
    if used is None and not isinstance(used_type, ScalarType):
        raise b.fail("syncall(mode='soft') needs used_cores= (0: every block of the launch)")
    if isinstance(used, int) and not 0 <= used < 2**31:
        raise b.fail(f"used_cores must be in [0, 2**31), got {used}")
    return VoidType()


def _emit(call: Call, _dst: str | None, cpp: Cpp) -> list[str]:
    core = CORE_TYPES.index(str(call.literal_arg("core_type").value))
    if call.literal_arg("mode").value == "hard":
        return [f"SYNCALL({core});"]
    ws, used = cpp.arg(call, "gm_workspace"), cpp.arg(call, "used_cores")
    return [f"SYNCALL({ws}.desc, {core}, static_cast<int32_t>({used}));"]


OPS = (
    OpDef(
        "system.syncall",
        (
            _p("core_type", Kind.STR, "mix"),
            _p("mode", Kind.STR, "hard"),
            _p("gm_workspace", Kind.TENSOR, None, optional=True),
            _p("used_cores", Kind.SCALAR, None, optional=True, dtype_of=None),
        ),
        syncall_rule,
        "tile",
        _scalar_pipe,
        doc="a barrier across the blocks of a pl.spmd launch (hard: all cores; soft: a GM counter)",
    ),
)

ABI = (
    CEntry(
        "pypto_syncall",
        ("const pypto_tensor* workspace", "int32_t core_type", "int32_t used_cores"),
        "A barrier across the blocks of the launch (see sync.cpp): workspace null is the hard\n"
        "form; otherwise workspace[0] counts arrivals; used_cores 0: every core of core_type.",
        (("SYNCALL", {"workspace": "nullptr", "used_cores": "0"}), ("SYNCALL", {})),
    ),
)

FAMILY = Family(
    name="syncall",
    ops=OPS,
    dsl={},  # spelled pl.system.syncall by its name
    emitters={"system.syncall": _emit},
    abi=ABI,
    isa_file="sync.cpp",
)
