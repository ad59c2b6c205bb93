"""PlanPipelineLoops: what a pl.pipeline loop must satisfy, and the plan it records."""

from __future__ import annotations

import pytest

from pypto import platforms
from pypto.errors import CompileError, SourceSpan
from pypto.ir.builder import Builder
from pypto.ir.dtypes import FP32
from pypto.ir.enums import Direction, ForKind, FunctionType, MemorySpace
from pypto.ir.stmt import For
from pypto.ir.types import INDEX_TYPE, MemRef, TensorType, TileType
from pypto.passes.context import PassContext
from pypto.passes.plan_pipeline_loops import plan_pipeline_loops

T = TensorType((512, 128), FP32)


def _program(stage=2, step=1, memref=None):
    b = Builder()
    with b.function("k", FunctionType.AIV):
        a = b.param("a", T)
        out = b.param("out", T, Direction.Out)
        n = b.param("n", INDEX_TYPE)
        with b.loop("i", 0, 8, n if step == "dynamic" else step, kind=ForKind.pipeline, stage=stage) as lp:
            t = b.op("tile.load", a, [lp.var * 64, 0], [64, 128], name="t")
            if memref is not None:
                t = b.assign("tm", t, TileType((64, 128), FP32, MemorySpace.Vec, memref))
            b.eval("tile.store", b.op("tile.exp", t, name="e"), [lp.var * 64, 0], out)
    return b.program("k")


def _ctx() -> PassContext:
    return PassContext(platforms.get("a2a3sim"))


def test_records_depth_step_and_staged_tiles():
    ctx = _ctx()
    program = _program(stage=3, step=2)
    assert plan_pipeline_loops(program, ctx) is program  # analysis only
    plan = ctx.pipeline_plans[("k", "i")]
    assert (plan.depth, plan.step, plan.staged) == (3, 2, ("t", "e"))


def _with_span(program, **changes):
    import dataclasses

    fn = program.functions[0]
    loop = fn.body[0]
    assert isinstance(loop, For)
    loop = dataclasses.replace(loop, span=SourceSpan("kernel.py", 7, 8), **changes)
    return dataclasses.replace(program, functions=(dataclasses.replace(fn, body=(loop,)),))


@pytest.mark.parametrize(
    ("changes", "message"),
    [({"stage": 0}, "stage must be a compile-time int >= 1"), ({"stage": None}, "stage must be")],
)
def test_rejects_bad_stage_at_the_loop(changes, message):
    with pytest.raises(CompileError, match=message) as e:
        plan_pipeline_loops(_with_span(_program(), **changes), _ctx())
    assert str(e.value.span) == "kernel.py:7:8"


def test_rejects_a_runtime_step():
    with pytest.raises(CompileError, match="compile-time constant step") as e:
        plan_pipeline_loops(_with_span(_program(step="dynamic")), _ctx())
    assert str(e.value.span) == "kernel.py:7:8"


def test_rejects_a_memref_declared_in_the_body():
    with pytest.raises(CompileError, match="pl.MemRef 'ub' is declared inside a pl.pipeline body"):
        plan_pipeline_loops(_program(memref=MemRef("ub", 2)), _ctx())
