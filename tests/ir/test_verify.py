"""The verifier rejects malformed IR, naming the node's span."""

from __future__ import annotations

import dataclasses

import pytest

from pypto import ir
from pypto.errors import SourceSpan, VerifyError

T = ir.TensorType((128, 128), ir.FP32)
TILE = ir.TileType((64, 128), ir.FP32, ir.MemorySpace.Vec)
SPAN = SourceSpan("kernel.py", 7, 4)


def kernel(kind: ir.FunctionType = ir.FunctionType.InCore) -> ir.Function:
    b = ir.Builder()
    with b.function("k", kind):
        a = b.param("a", T)
        out = b.param("out", T, ir.Direction.Out)
        t = b.op("tile.load", a, [0, 0], [64, 128], name="t")
        e = b.op("tile.exp", t, name="e")
        b.eval("tile.store", e, [0, 0], out)
        b.ret(out)
    return b.functions[0]


def program(*functions: ir.Function) -> ir.Program:
    return ir.Program("p", functions)


def with_body(fn: ir.Function, *body: ir.Stmt) -> ir.Function:
    return dataclasses.replace(fn, body=tuple(body))


def expect(p: ir.Program, *fragments: str) -> VerifyError:
    with pytest.raises(VerifyError) as exc:
        ir.verify(p)
    for f in fragments:
        assert f in str(exc.value), str(exc.value)
    return exc.value


def test_valid_kernel_passes():
    p = program(kernel())
    assert ir.verify(p) is p


def test_use_before_definition_reports_the_span():
    fn = kernel()
    load, exp, store, ret = fn.body
    err = expect(
        program(with_body(fn, dataclasses.replace(exp, span=SPAN), load, store, ret)),
        "`t` is used before it is defined",
    )
    assert err.span == SPAN and "kernel.py:7:4" in str(err)


def test_names_are_single_assignment():
    fn = kernel()
    load, exp, store, ret = fn.body
    expect(program(with_body(fn, load, load, exp, store, ret)), "`t` is defined twice")


def test_use_must_repeat_the_definition_type():
    fn = kernel()
    load, exp, store, ret = fn.body
    wrong = ir.Var("t", ir.TileType((64, 128), ir.FP16, ir.MemorySpace.Vec))
    bad_exp = dataclasses.replace(exp, value=ir.Call("tile.exp", (wrong,), exp.value.type))
    expect(program(with_body(fn, load, bad_exp, store, ret)), "`t` is used as", "but defined as")


def test_declared_type_must_match_the_op_result():
    fn = kernel()
    load, exp, store, ret = fn.body
    bad = dataclasses.replace(exp, var=ir.Var("e", ir.TileType((64, 64), ir.FP32, ir.MemorySpace.Vec)))
    expect(program(with_body(fn, load, bad, store, ret)), "`e` is declared", "but the value is")


def test_unknown_op_and_nested_calls():
    fn = kernel()
    load, exp, store, ret = fn.body
    unknown = dataclasses.replace(exp, value=ir.Call("tile.frobnicate", (load.var,), exp.value.type))
    expect(program(with_body(fn, load, unknown, store, ret)), "unknown op `tile.frobnicate`")
    nested = dataclasses.replace(exp, value=ir.Call("tile.exp", (load.value,), exp.value.type))
    expect(program(with_body(fn, load, nested, store, ret)), "calls must not nest")


def test_call_arguments_in_normal_form():
    fn = kernel()
    load, exp, store, ret = fn.body
    short = dataclasses.replace(load, value=ir.Call("tile.load", load.value.args[:3], load.value.type))
    expect(program(with_body(fn, short, exp, store, ret)), "needs 5 arguments")


def test_call_records_the_result_type_its_arguments_give():
    fn = kernel()
    load, exp, store, ret = fn.body
    assert exp.value.type == ir.infer_call_type(exp.value) == exp.var.type
    stale = ir.TileType((64, 128), ir.FP16, ir.MemorySpace.Vec)
    bad = dataclasses.replace(exp, value=dataclasses.replace(exp.value, type=stale))
    expect(program(with_body(fn, load, bad, store, ret)), "records result type", "its arguments give")


def test_rewrite_recomputes_the_type_of_a_call_whose_arguments_change():
    fn = kernel()
    load, exp, store, ret = fn.body
    wider = ir.TileType((64, 128), ir.FP16, ir.MemorySpace.Vec)
    moved = ir.retype(exp, {load.var.name: wider})
    assert moved.value.type == ir.infer_call_type(moved.value)
    assert moved.value.type != exp.value.type


def test_tile_ops_in_orchestration_need_a_scope():
    expect(
        program(kernel(ir.FunctionType.Orchestration)),
        "Misplaced tensor op `pl.tile.load`",
        "should be inside InCore block",
    )
    fn = kernel(ir.FunctionType.Orchestration)
    scoped = with_body(fn, ir.Scope(ir.Level.CORE_GROUP, fn.body[:3]), fn.body[3])
    ir.verify(program(scoped))


def test_scopes_only_in_orchestration_and_not_nested():
    fn = kernel()
    expect(
        program(with_body(fn, ir.Scope(ir.Level.CORE_GROUP, fn.body[:3]), fn.body[3])),
        "pl.at scopes belong in orchestration functions",
    )
    orch = kernel(ir.FunctionType.Orchestration)
    inner = ir.Scope(ir.Level.CORE_GROUP, orch.body[:3])
    expect(
        program(with_body(orch, ir.Scope(ir.Level.CORE_GROUP, (inner,)), orch.body[3])), "cannot be nested"
    )
    dep = ir.Scope(ir.Level.CORE_GROUP, orch.body[:3], deps=("nope",))
    expect(program(with_body(orch, dep, orch.body[3])), "deps names `nope`")


def test_loop_carried_values():
    b = ir.Builder()
    with b.function("k", ir.FunctionType.InCore):
        a = b.param("a", T)
        init = b.op("tile.load", a, [0, 0], [64, 128])
        with b.loop("i", 8, init=[init]) as loop:
            b.yield_(b.op("tile.exp", loop.iters[0]))
    fn = b.functions[0]
    ir.verify(program(fn))
    loop_stmt = fn.body[1]
    no_yield = dataclasses.replace(loop_stmt, body=loop_stmt.body[:-1])
    expect(program(with_body(fn, fn.body[0], no_yield)), "must end with pl.yield_ of 1 values")
    drifting = dataclasses.replace(loop_stmt, results=(ir.Var("r", ir.TileType((64, 128), ir.FP16)),))
    expect(program(with_body(fn, fn.body[0], drifting)), "changes type around the loop")
    early = dataclasses.replace(loop_stmt, body=(loop_stmt.body[1], loop_stmt.body[0]))
    expect(program(with_body(fn, fn.body[0], early)), "pl.yield_ must be the last statement")


def test_names_do_not_leak_out_of_loops():
    b = ir.Builder()
    with b.function("k", ir.FunctionType.InCore):
        a = b.param("a", T)
        with b.loop("i", 8):
            t = b.op("tile.load", a, [0, 0], [64, 128])
        b.op("tile.exp", t)
    expect(program(b.functions[0]), "`load` is used before it is defined")


def test_memref_rules():
    fn = kernel()
    load, exp, store, ret = fn.body

    def typed(t: ir.TileType) -> ir.Function:
        return with_body(fn, dataclasses.replace(load, var=ir.Var("t", t)), exp, store, ret)

    no_space = ir.TileType((64, 128), ir.FP32, None, ir.MemRef("ub"))
    # without a space the load's Vec result does not refine, so name the memref rule directly
    bad = ir.TileType((64, 128), ir.FP32, ir.MemorySpace.Vec, ir.MemRef("ub", 1, None, 0, 1024))
    expect(program(typed(bad)), "slot is 1024 B but the tile needs 32768 B")
    assert no_space.memory is None
    ok = ir.TileType((64, 128), ir.FP32, ir.MemorySpace.Vec, ir.MemRef("ub", 1, None, 0, 32768))
    with pytest.raises(VerifyError, match="is used as"):  # uses still say the old type
        ir.verify(program(typed(ok)))
    ir.verify(program(ir.retype(typed(ok), {"t": ok})))


def test_function_calls_match_the_callee():
    k = kernel()
    b = ir.Builder()
    with b.function("main", ir.FunctionType.Orchestration):
        a = b.param("a", T)
        out = b.param("out", T, ir.Direction.Out)
        r = b.call_function(k, a, out)
        b.ret(r)
    main = b.functions[0]
    ir.verify(ir.Program("p", (main, k)))
    expect(ir.Program("p", (main,)), "call of unknown function `k`")
    wrong = dataclasses.replace(main.body[0], value=dataclasses.replace(main.body[0].value, args=(a,)))
    expect(ir.Program("p", (with_body(main, wrong, main.body[1]), k)), "`k` takes 2 arguments, got 1")


def test_return_rules():
    fn = kernel()
    expect(program(dataclasses.replace(fn, return_types=())), "return values do not match")
    expect(program(with_body(fn, *fn.body[:3])), "declares return types but does not end in return")
    expect(program(kernel(), kernel()), "function `k` is defined twice")
