"""The task family: TaskIds and arrays of orchestration code.

``with pl.at(...) as tid`` names a task; ``deps=[tid]`` waits for it. Model code keeps TaskIds in
``pl.array.create(n, pl.TASK_ID)`` arrays (one per producer of a fan-in), passes them between
helpers and joins several into one with ``pl.system.task_dummy(deps=[...])``. None of these
reach a kernel: the launch plan evaluates them (a TaskId to the set of tasks it names, an array
to a tuple of values), so the family has no emitters and no C entry points.
"""

from __future__ import annotations

from typing import Any

from pypto.ir.dtypes import TASK_ID
from pypto.ir.op_def import _REQUIRED, Kind, OpDef, ParamSpec
from pypto.ir.op_rules import Bound
from pypto.ir.types import ArrayType, ScalarType, Type, format_type
from pypto.ops.family import Family

TASK = ScalarType(TASK_ID)


def _p(name: str, kind: Kind, default: Any = _REQUIRED, **kw: Any) -> ParamSpec:
    return ParamSpec(name, kind, default, **kw)


def _none(_types: object) -> None:
    return None  # no instruction: evaluated by the launch plan


def _index(b: Bound, arr: ArrayType) -> None:
    i = b.literal("index")
    t = b.type("index")
    if not (isinstance(t, ScalarType) and t.dtype.is_integer):
        raise b.fail(f"an array index is an integer, got {format_type(t)}")
    if isinstance(i, int) and not 0 <= i < arr.size:
        raise b.fail(f"index {i} is outside the array of {arr.size}")


def create_rule(b: Bound) -> Type:
    size = b.literal("size")
    if not isinstance(size, int) or size < 1:
        raise b.fail(f"an array has a positive compile-time size, got {size!r}")
    return ArrayType(size, b.dtype("dtype"))


def get_rule(b: Bound) -> Type:
    arr = b.type("array")
    assert isinstance(arr, ArrayType)
    _index(b, arr)
    return ScalarType(arr.dtype)


def set_rule(b: Bound) -> Type:
    arr, value = b.type("array"), b.type("value")
    assert isinstance(arr, ArrayType)
    _index(b, arr)
    if not isinstance(value, ScalarType) or value.dtype != arr.dtype:
        raise b.fail(f"a {format_type(arr)} holds {arr.dtype} values, got {format_type(value)}")
    return arr


def task_rule(b: Bound) -> Type:
    return TASK


OPS = (
    OpDef("array.create", (_p("size", Kind.INT), _p("dtype", Kind.DTYPE)), create_rule, "orchestration",
          _none, doc="an array of `size` scalars of `dtype` (pl.TASK_ID for TaskIds)"),
    OpDef("array.get", (_p("array", Kind.SEQ), _p("index", Kind.SCALAR, dtype_of=None)), get_rule,
          "orchestration", _none, doc="one element (a[i])"),
    OpDef("array.set", (_p("array", Kind.SEQ), _p("index", Kind.SCALAR), _p("value", Kind.SCALAR)),
          set_rule, "orchestration", _none, doc="the array with element `index` replaced (a[i] = v)"),
    OpDef("system.task_of", (_p("handle", Kind.STR),), task_rule, "orchestration", _none,
          doc="the TaskId of the latest task of `with pl.at(...) as handle`"),
    OpDef("system.task_dummy", (_p("deps", Kind.TASKS, [], kw_only=True),), task_rule, "orchestration",
          _none, doc="a TaskId that stands for all of `deps` (a join point, no work)"),
    OpDef("system.task_invalid", (), task_rule, "orchestration", _none, doc="the TaskId of no task"),
)  # fmt: skip

FAMILY = Family("tasks", OPS, {}, {}, ())
