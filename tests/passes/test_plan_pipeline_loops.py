"""PlanPipelineLoops: what a pl.pipeline loop must satisfy, and the plan it records on the
loop (printed as ``staged=``, read back only from the @pl.program form)."""

from __future__ import annotations

import numpy as np
import pytest

import pypto.language as pl
from pypto import ir, platforms
from pypto.errors import CompileError, SourceSpan, UnsupportedSyntaxError, VerifyError
from pypto.frontend import parse_text
from pypto.ir.builder import Builder
from pypto.ir.dtypes import FP32
from pypto.ir.enums import Direction, ForKind, FunctionType, MemorySpace
from pypto.ir.expr import Const
from pypto.ir.stmt import For
from pypto.ir.types import INDEX_TYPE, MemRef, TensorType, TileType
from pypto.passes.context import PassContext
from pypto.passes.plan_pipeline_loops import plan_pipeline_loops
from pypto.runtime import RunConfig

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


def test_records_the_staged_tiles_on_the_loop():
    program = _program(stage=3, step=2)
    assert program.functions[0].body[0].staged is None
    planned = plan_pipeline_loops(program, _ctx())
    loop = planned.functions[0].body[0]
    assert (loop.stage, loop.step, loop.staged) == (3, Const(2), ("t", "e"))
    text = ir.print_program(planned)
    assert 'in pl.pipeline(0, 8, 2, stage=3, staged=["t", "e"]):' in text
    ir.assert_structural_equal(parse_text(text), planned, names=True)
    assert plan_pipeline_loops(planned, _ctx()) == planned  # planning a planned loop changes nothing


@pl.jit
def writes_a_plan(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.pipeline(2, stage=2, staged=["t"]):
            t = pl.load(a, [i * 16, 0], [16, 128])
            pl.store(t, [i * 16, 0], out)
    return out


def test_a_kernel_may_not_write_the_plan():
    a = np.ones((32, 128), np.float32)
    with pytest.raises(
        UnsupportedSyntaxError, match="`staged=` is a compiler record printed in pass dumps"
    ) as e:
        writes_a_plan.compile(a, np.zeros_like(a), config=RunConfig(platform="a2a3sim"))
    assert e.value.span.file == __file__


def test_a_plan_naming_no_tile_of_the_body_is_refused():
    text = ir.print_program(plan_pipeline_loops(_program(), _ctx())).replace(
        'staged=["t", "e"]', 'staged=["t", "zz"]'
    )
    with pytest.raises(VerifyError, match="plan .staged=. names `zz`, which is not defined there"):
        parse_text(text)


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
