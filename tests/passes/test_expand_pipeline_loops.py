"""ExpandPipelineLoops: before → expected programs, compared structurally (names ignored),
and the clone groups it records on the kernel."""

from __future__ import annotations

import dataclasses

from pypto import ir, platforms
from pypto.frontend import parse_text
from pypto.ir.builder import Builder
from pypto.ir.dtypes import FP32, INT32
from pypto.ir.enums import Direction, ForKind, FunctionType
from pypto.ir.equality import assert_structural_equal
from pypto.ir.expr import Const
from pypto.ir.stmt import Assign, For, If
from pypto.ir.types import INDEX_TYPE, ScalarType, TensorType
from pypto.passes.context import PassContext
from pypto.passes.expand_pipeline_loops import expand_pipeline_loops
from pypto.passes.plan_pipeline_loops import plan_pipeline_loops

T = TensorType((512, 128), FP32)


def _kernel(body, dynamic=False):
    b = Builder()
    with b.function("k", FunctionType.AIV):
        a = b.param("a", T)
        out = b.param("out", T, Direction.Out)
        n = b.param("n", INDEX_TYPE) if dynamic else None
        body(b, a, out, n)
    return b.program("k")


def _tile(b, a, out, i):
    t = b.op("tile.load", a, [i * 64, 0], [64, 128])
    b.eval("tile.store", b.op("tile.exp", t), [i * 64, 0], out)


def _pipelined(stage, trips=5, dynamic=False):
    def body(b, a, out, n):
        with b.loop("i", 0, n if dynamic else trips, kind=ForKind.pipeline, stage=stage) as lp:
            _tile(b, a, out, lp.var)

    return _kernel(body, dynamic)


def _expand(program):
    ctx = PassContext(platforms.get("a2a3sim"))
    return expand_pipeline_loops(plan_pipeline_loops(program, ctx), ctx)


def _without_groups(program):
    fns = tuple(dataclasses.replace(f, pipeline_groups=()) for f in program.functions)
    return dataclasses.replace(program, functions=fns)


def test_stage_one_is_a_plain_loop():
    def body(b, a, out, n):
        with b.loop("i", 0, 5) as lp:
            _tile(b, a, out, lp.var)

    got = _expand(_pipelined(1))
    assert_structural_equal(got, _kernel(body))
    assert got.functions[0].pipeline_groups == ()


def test_two_stages_loads_first_and_a_static_leftover():
    def body(b, a, out, n):
        with b.loop("i", 0, 4, 2) as lp:
            i = lp.var
            t0 = b.op("tile.load", a, [i * 64, 0], [64, 128])
            t1 = b.op("tile.load", a, [(i + 1) * 64, 0], [64, 128])
            b.eval("tile.store", b.op("tile.exp", t0), [i * 64, 0], out)
            b.eval("tile.store", b.op("tile.exp", t1), [(i + 1) * 64, 0], out)
        _tile(b, a, out, Const(4))

    got = _expand(_pipelined(2))
    assert_structural_equal(_without_groups(got), _kernel(body))
    (group,) = got.functions[0].pipeline_groups
    assert (group.name, group.depth, len(group.blocks)) == ("i", 2, 2)
    main, leftover = group.blocks
    assert [c.staged for c in main][0] != [c.staged for c in main][1]  # own tiles per clone
    assert len(leftover) == 1 and all(len(c.hoisted) == 1 for c in main)
    # the records name the program's own values: clone k's tiles are the ones it loads/computes
    loop = got.functions[0].body[0]
    loads = [s.var.name for s in loop.body[:2]]
    assert [c.hoisted for c in main] == [(loads[0],), (loads[1],)]
    assert [c.staged[0] for c in main] == loads


def test_the_records_print_in_the_decorator_and_parse_back():
    got = _expand(_pipelined(2))
    text = ir.print_program(got)
    assert "pipeline_groups=[" in text and 'pl.PipelineGroup("i", depth=2, blocks=[' in text
    again = parse_text(text)
    ir.assert_structural_equal(again, got, names=True)
    assert ir.print_program(again) == text
    # a group differing in one name is a different program
    g = got.functions[0].pipeline_groups[0]
    clone = dataclasses.replace(g.blocks[0][0], hoisted=g.blocks[0][1].hoisted)
    other = dataclasses.replace(g, blocks=((clone, g.blocks[0][1]), g.blocks[1]))
    fn = dataclasses.replace(got.functions[0], pipeline_groups=(other,))
    assert not ir.structural_equal(dataclasses.replace(got, functions=(fn,)), got)


def test_dynamic_bounds_get_a_computed_end_and_a_remainder_loop():
    got = _expand(_pipelined(3, dynamic=True))
    (branch,) = got.functions[0].body
    assert isinstance(branch, If)
    end, main, rest = branch.then_body
    assert isinstance(end, Assign) and isinstance(main, For) and isinstance(rest, For)
    assert main.stop == end.var and main.step == Const(3) and len(main.body) == 9
    assert rest.start == end.var and rest.step == Const(1) and rest.kind is ForKind.range
    assert [type(s).__name__ for s in main.body[:3]] == ["Assign"] * 3  # three loads first


def test_loop_carried_values_chain_through_the_clones():
    def body(b, a, out, n):
        acc = b.op("tile.load", a, [0, 0], [64, 128])
        with b.loop("i", 1, 5, kind=ForKind.pipeline, stage=2, init=(acc,)) as lp:
            t = b.op("tile.load", a, [lp.var * 64, 0], [64, 128])
            b.yield_(b.op("tile.add", lp.iters[0], t))
        b.eval("tile.store", lp.results[0], [0, 0], out)

    got = _expand(_kernel(body))
    loop = got.functions[0].body[1]
    assert isinstance(loop, For) and loop.step == Const(2)
    t0, t1, add0, add1, y = loop.body
    assert add0.value.args[0] == loop.iter_args[0].var and add1.value.args[0] == add0.var
    assert y.values == (add1.var,)


def test_dynamic_bounds_with_carried_values_yield_through_the_branch():
    def body(b, a, out, n):
        acc = b.op("tile.load", a, [0, 0], [64, 128])
        with b.loop("i", 0, n, kind=ForKind.pipeline, stage=2, init=(acc,)) as lp:
            t = b.op("tile.load", a, [lp.var * 64, 0], [64, 128])
            b.yield_(b.op("tile.add", lp.iters[0], t))
        b.eval("tile.store", lp.results[0], [0, 0], out)

    got = _expand(_kernel(body, dynamic=True))
    _, branch, _ = got.functions[0].body
    assert isinstance(branch, If) and branch.results
    end, main, rest, y = branch.then_body
    assert rest.iter_args[0].init == main.results[0] and y.values == rest.results
    assert rest.iter_args[0].var.name != main.iter_args[0].var.name  # each loop its own names
    (skipped,) = branch.else_body
    assert skipped.values == (main.iter_args[0].init,)  # no trip: the initial value


def test_an_int32_trip_count_keeps_its_type_in_the_computed_end():
    """`pl.pipeline(0, n)` with n an INT32 scalar (a pl.read of an INT32 tensor): the literal 0
    takes n's type, so the computed end is INT32 too and the program still verifies."""

    def body(b, a, out, _n):
        n32 = b.param("n32", ScalarType(INT32))
        with b.loop("i", 0, n32, kind=ForKind.pipeline, stage=2) as lp:
            _tile(b, a, out, lp.var)

    got = _expand(_kernel(body))
    ir.verify(got)
    (branch,) = got.functions[0].body
    end = branch.then_body[0]
    assert isinstance(end, Assign) and end.var.type == ScalarType(INT32)


def _nested_pipelines(start: int, stop: int):
    """A stage-2 loop over [start, stop) around a stage-2 loop of 4 trips, expanded (and
    verified: every group names tiles the program defines)."""

    def body(b, a, out, n):
        with (
            b.loop("o", start, stop, kind=ForKind.pipeline, stage=2) as outer,
            b.loop("i", 0, 4, kind=ForKind.pipeline, stage=2) as inner,
        ):
            _tile(b, a, out, outer.var * 4 + inner.var)

    got = _expand(_kernel(body))
    ir.verify(got)
    return got


def test_an_outer_loop_shorter_than_its_stages_keeps_the_inner_groups_names():
    """One trip of a stage-2 loop around a pipelined loop: no main loop, the one leftover clone
    is the body's only copy and keeps its names, which the inner loop's group (recorded first)
    names. Renamed, the group would name tiles the program no longer defines."""

    got = _nested_pipelines(0, 1)
    inner_group, outer_group = got.functions[0].pipeline_groups
    assert (inner_group.name, outer_group.name) == ("i", "o")
    (leftover,) = outer_group.blocks
    assert len(leftover) == 1 and leftover[0].staged == ()
    defined = {s.var.name for s in ir.nodes_of(got.functions[0].body, Assign)}
    assert {n for block in inner_group.blocks for c in block for n in c.staged} <= defined
    # the trip's loop value is substituted: the inner loop's loads index from 0 * 4
    loop = next(s for s in got.functions[0].body if isinstance(s, For))
    assert "o" not in {v.name for v in ir.nodes_of(loop, ir.Var)}


def test_an_outer_loop_of_no_trips_drops_the_groups_of_the_loops_in_it():
    """A stage-2 loop from 1 to 1 around a pipelined loop (a K walk with its first block peeled,
    at a K of one block): no copy of the body is left, so the inner loop's group, recorded
    first, goes too; kept, it would name tiles the program no longer defines."""

    got = _nested_pipelines(1, 1)
    assert got.functions[0].pipeline_groups == ()
    assert not ir.nodes_of(got.functions[0].body, For)


def test_a_loop_of_no_trips_keeps_the_groups_recorded_before_it():
    """Only the groups of the loops nested in the empty loop go: a pipelined loop before it
    keeps its group."""

    def body(b, a, out, n):
        with b.loop("p", 0, 4, kind=ForKind.pipeline, stage=2) as first:
            _tile(b, a, out, first.var)
        with (
            b.loop("o", 1, 1, kind=ForKind.pipeline, stage=2) as outer,
            b.loop("i", 0, 4, kind=ForKind.pipeline, stage=2) as inner,
        ):
            _tile(b, a, out, outer.var * 4 + inner.var)

    got = _expand(_kernel(body))
    ir.verify(got)
    assert [g.name for g in got.functions[0].pipeline_groups] == ["p"]
