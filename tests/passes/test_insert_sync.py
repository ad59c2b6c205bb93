"""InsertSync alone (on planned IR): the flags it inserts, where, and their event ids."""

from __future__ import annotations

from collections import Counter

from pass_util import CTX, apply, flags, kernel

from pypto import ir
from pypto.passes.allocate_memory_addr import allocate_memory_addr
from pypto.passes.context import PassContext
from pypto.passes.expand_pipeline_loops import expand_pipeline_loops
from pypto.passes.insert_sync import insert_sync
from pypto.passes.plan_pipeline_loops import plan_pipeline_loops

A = "a: pl.Tensor[[512, 128], pl.FP32], out: pl.Out[pl.Tensor[[512, 128], pl.FP32]]"


def synced(body: str, params: str = A, ctx: PassContext = CTX, plan: bool = True) -> ir.Function:
    p = kernel(params, body)
    if plan:
        p = apply(allocate_memory_addr, p, ctx)
    return apply(insert_sync, p, ctx).get("k")


def pairs(fn: ir.Function) -> list[tuple[str, str, str]]:
    return [(op, src, dst) for op, src, dst, _ in flags(fn)]


def balanced(fn: ir.Function) -> bool:
    count = Counter()
    for op, src, dst, eid in flags(fn):
        count[(src, dst, eid)] += 1 if op == "set" else -1
    return all(v == 0 for v in count.values())


def test_single_buffer_loop_gets_the_double_buffer_flag_pattern():
    fn = synced(
        """
        for i in pl.range(8):
            tile = pl.load(a, [i * 64, 0], [64, 128])
            e = pl.exp(tile)
            pl.store(e, [i * 64, 0], out)
        """
    )
    expected = kernel(
        A,
        """
        pl.system.set_flag(pl.Pipe.MTE3, pl.Pipe.MTE2, 0)
        for i in pl.range(8):
            pl.system.wait_flag(pl.Pipe.MTE3, pl.Pipe.MTE2, 0)
            tile: pl.Tile[[64, 128], pl.FP32, pl.MemRef(mem_vec_0, 0, 32768), pl.Mem.Vec] = pl.tile.load(a, [i * 64, 0], [64, 128])
            pl.system.set_flag(pl.Pipe.MTE2, pl.Pipe.VECTOR, 0)
            pl.system.wait_flag(pl.Pipe.MTE2, pl.Pipe.VECTOR, 0)
            e: pl.Tile[[64, 128], pl.FP32, pl.MemRef(mem_vec_0, 0, 32768), pl.Mem.Vec] = pl.tile.exp(tile)
            pl.system.set_flag(pl.Pipe.VECTOR, pl.Pipe.MTE3, 0)
            pl.system.wait_flag(pl.Pipe.VECTOR, pl.Pipe.MTE3, 0)
            pl.tile.store(e, [i * 64, 0], out)
            pl.system.set_flag(pl.Pipe.MTE3, pl.Pipe.MTE2, 0)
        pl.system.wait_flag(pl.Pipe.MTE3, pl.Pipe.MTE2, 0)
        """,  # noqa: E501
    ).get("k")
    # Pre-set before the loop, wait before the next trip's load (the store of this trip must
    # have read the buffer first), set at the end of the body, one drain after the loop. The
    # load -> exp hazard of the next trip is covered by transitivity: the store waited for exp.
    ir.assert_structural_equal(fn, expected, names=True)


def test_no_flags_between_ops_on_the_same_pipe():
    fn = synced(
        """
        x = pl.load(a, [0, 0], [16, 64])
        y = pl.exp(x)
        z = pl.add(y, x)
        w = pl.neg(z)
        v = pl.muls(w, 2.0)
        pl.store(v, [0, 0], out)
        """
    )
    assert pairs(fn) == [
        ("set", "MTE2", "VECTOR"),
        ("wait", "MTE2", "VECTOR"),
        ("set", "VECTOR", "MTE3"),
        ("wait", "VECTOR", "MTE3"),
    ]


def test_one_wait_covers_two_hazards_by_transitivity():
    fn = synced(
        """
        x = pl.load(a, [0, 0], [16, 64])
        y = pl.exp(x)
        pl.store(y, [0, 0], out)
        pl.store(x, [16, 0], out)
        """
    )
    # store(x) reads what MTE2 wrote, but MTE3 already waited for VECTOR, which had waited
    # for MTE2: no MTE2 -> MTE3 flag.
    assert ("set", "MTE2", "MTE3") not in pairs(fn) and len(flags(fn)) == 4


def test_set_right_after_each_producer_so_consumers_wait_only_for_their_own():
    fn = synced(
        """
        x = pl.load(a, [0, 0], [16, 64])
        y = pl.load(a, [16, 0], [16, 64])
        e = pl.exp(x)
        f = pl.exp(y)
        pl.store(e, [0, 0], out)
        pl.store(f, [16, 0], out)
        """
    )
    seq = [
        s.var.name if isinstance(s, ir.Assign) else tuple(a.value for a in s.value.args)
        for s in fn.body
        if isinstance(s, ir.Assign) or s.value.op.startswith("system.")
    ]
    mte2, vec = ir.Pipe.MTE2, ir.Pipe.VECTOR
    assert seq[:6] == ["x", (mte2, vec, 0), "y", (mte2, vec, 1), (mte2, vec, 0), "e"]
    assert seq[7:9] == [(mte2, vec, 1), "f"]
    # exp(x) does not wait for the load of y; two flags of one pipe pair are outstanding at
    # once, so they get distinct event ids


def test_a_wait_for_a_producer_before_a_loop_is_hoisted_out_of_it():
    fn = synced(
        """
        x = pl.load(a, [0, 0], [16, 64])
        for i in pl.range(4):
            y = pl.exp(x)
            pl.store(y, [i * 16, 0], out)
        """
    )
    loop = next(s for s in fn.body if isinstance(s, ir.For))
    head = fn.body[: fn.body.index(loop)]
    x_at = next(k for k, s in enumerate(head) if isinstance(s, ir.Assign) and s.var.name == "x")
    before = [(s.value.op, s.value.args[0].value.name) for s in head[x_at + 1 :]]
    assert before[:2] == [("system.set_flag", "MTE2"), ("system.wait_flag", "MTE2")]
    inside = [c.args[0].value.name for c in ir.nodes_of(loop.body, ir.Call) if c.op.startswith("system.")]
    assert "MTE2" not in inside  # waited for once, not on every trip


def _ops(body) -> list:
    """Assigned names and (op, src, dst) flags of a block, in order."""
    return [
        s.var.name
        if isinstance(s, ir.Assign)
        else (s.value.op[7:], s.value.args[0].value.name, s.value.args[1].value.name)
        for s in body
        if isinstance(s, ir.Assign) or (isinstance(s, ir.Eval) and s.value.op.startswith("system."))
    ]


def test_a_loop_that_runs_once_takes_the_wait_to_its_consumer():
    fn = synced(
        """
        x = pl.load(a, [0, 0], [16, 64])
        for i in pl.range(1):
            y = pl.load(a, [16, 0], [16, 64])
            e = pl.exp(x)
            f = pl.exp(y)
            pl.store(e, [0, 0], out)
            pl.store(f, [16, 0], out)
        """
    )
    loop = next(s for s in fn.body if isinstance(s, ir.For))
    # the set goes before the loop (MTE2 has loaded x there, not yet y), the wait into the
    # loop right before exp(x): what comes before it in the loop is not held back
    assert _ops(fn.body[: fn.body.index(loop)])[-1] == ("set_flag", "MTE2", "VECTOR")
    inside = _ops(loop.body)
    assert inside[inside.index("e") - 1] == ("wait_flag", "MTE2", "VECTOR")
    assert ("wait_flag", "MTE2", "VECTOR") not in _ops(fn.body[: fn.body.index(loop)])
    assert balanced(fn)


def test_nested_loops_put_carried_flags_at_the_level_of_the_hazard():
    fn = synced(
        """
        x = pl.load(a, [0, 0], [16, 64])
        for i in pl.range(4):
            y = pl.load(a, [i * 16, 0], [16, 64])
            for j in pl.range(2):
                z = pl.add(y, x)
                pl.store(z, [j * 16, 0], out)
        """
    )
    outer = next(s for s in fn.body if isinstance(s, ir.For))
    inner = next(s for s in outer.body if isinstance(s, ir.For))
    k = fn.body.index(outer)
    op = lambda s: (s.value.op, s.value.args[0].value.name, s.value.args[1].value.name)  # noqa: E731
    # inner trip j+1 overwrites z while the store of trip j may still read it. The first inner
    # trip of outer trip i+1 overwrites z after the last store of trip i: the flag is lifted
    # out of the outer loop too (opened once before it, closed once after it), so that first
    # trip waits for that store only, not for a drain at the end of every outer trip.
    assert op(fn.body[0]) == ("system.set_flag", "MTE3", "VECTOR")
    assert op(inner.body[0]) == ("system.wait_flag", "MTE3", "VECTOR")
    assert op(inner.body[-1]) == ("system.set_flag", "MTE3", "VECTOR")
    assert op(fn.body[k + 1]) == ("system.wait_flag", "MTE3", "VECTOR")
    assert ("MTE3", "VECTOR") not in {op(s)[1:] for s in outer.body if not isinstance(s, ir.For | ir.Assign)}
    # outer trip i+1 overwrites y while the inner loop of trip i may still read it
    assert op(outer.body[0]) == ("system.wait_flag", "VECTOR", "MTE2")
    assert op(outer.body[-1]) == ("system.set_flag", "VECTOR", "MTE2")
    assert balanced(fn)


def test_if_branches_sync_locally_and_the_merge_keeps_what_both_guarantee():
    fn = synced(
        """
        x = pl.load(a, [0, 0], [16, 64])
        for i in pl.range(2):
            if i == 0:
                y = pl.exp(x)
                r = pl.yield_(y)
            else:
                r = pl.yield_(x)
            pl.store(r, [i * 16, 0], out)
        """
    )
    loop = next(s for s in fn.body if isinstance(s, ir.For))
    branch = next(s for s in loop.body if isinstance(s, ir.If))
    then_ops = [s.value.op for s in branch.then_body if isinstance(s, ir.Eval)]
    assert then_ops[:2] == ["system.set_flag", "system.wait_flag"]  # only the path that reads waits
    assert balanced(fn)
    store = next(i for i, s in enumerate(loop.body) if isinstance(s, ir.Eval) and s.value.op == "tile.store")
    assert loop.body[store - 1].value.op == "system.wait_flag"  # either branch's producer


def test_a_branch_consumer_waits_before_the_if_when_its_producer_pipe_has_moved_on():
    fn = synced(
        """
        for i in pl.range(2):
            x = pl.load(a, [0, 0], [16, 64])
            z = pl.load(a, [16, 0], [16, 64])
            if i == 0:
                y = pl.exp(x)
                r = pl.yield_(y)
            else:
                r = pl.yield_(x)
            pl.store(r, [i * 16, 0], out)
            pl.store(z, [64 + i * 16, 0], out)
        """
    )
    loop = next(s for s in fn.body if isinstance(s, ir.For))
    body = list(loop.body)
    branch = next(i for i, s in enumerate(body) if isinstance(s, ir.If))
    load_x = next(i for i, s in enumerate(body) if isinstance(s, ir.Assign) and s.var.name == "x")
    ops = lambda stmts: [
        (s.value.op, *(a.value.name for a in s.value.args[:2])) for s in stmts if isinstance(s, ir.Eval)
    ]  # noqa: E731, E501
    # a set before exp would fire only after z's load too: set after x's load, wait before the if
    assert ops([body[load_x + 1]]) == [("system.set_flag", "MTE2", "VECTOR")]
    assert ("system.wait_flag", "MTE2", "VECTOR") in ops(body[load_x + 1 : branch])
    assert ("system.wait_flag", "MTE2", "VECTOR") not in ops(body[branch].then_body)
    assert balanced(fn)


def test_explicit_slots_let_the_load_run_one_trip_ahead():
    fn = synced(
        """
        for i in pl.range(8):
            tile: pl.Tile[[64, 128], pl.FP32, pl.MemRef("ub", slots=2)[i % 2], pl.Mem.Vec] = pl.load(a, [i * 64, 0], [64, 128])
            e = pl.exp(tile)
            pl.store(e, [i * 64, 0], out)
        """  # noqa: E501
    )
    loop = next(s for s in fn.body if isinstance(s, ir.For))
    head = [tuple(a.value.name for a in s.value.args[:2]) for s in fn.body[: fn.body.index(loop)]]
    tail = [tuple(a.value.name for a in s.value.args[:2]) for s in fn.body[fn.body.index(loop) + 1 :]]
    # the load of trip i+2 reuses the slot exp of trip i read: the flag is primed twice
    assert head.count(("VECTOR", "MTE2")) == 2 and tail.count(("VECTOR", "MTE2")) == 2
    assert balanced(fn)


def test_gm_read_after_write_through_an_alias():
    fn = synced(
        """
        x = pl.load(a, [0, 0], [16, 64])
        out_1 = pl.store(x, [0, 0], out)
        y = pl.load(out_1, [0, 0], [16, 64])
        pl.store(pl.exp(y), [16, 0], out_1)
        """
    )
    assert ("set", "MTE3", "MTE2") in pairs(fn)


def test_unplanned_tiles_are_assumed_to_overlap():
    body = """
        x = pl.load(a, [0, 0], [16, 64])
        e = pl.exp(x)
        y = pl.load(a, [16, 0], [16, 64])
        pl.store(e, [0, 0], out)
        pl.store(y, [16, 0], out)
        """
    planned = synced(body)  # y has its own buffer: its load need not wait for exp
    unplanned = synced(body, plan=False)  # PTOAS: addresses are chosen when the kernel starts
    assert ("set", "VECTOR", "MTE2") not in pairs(planned)
    assert ("set", "VECTOR", "MTE2") in pairs(unplanned)


def test_event_ids_stay_within_the_platform_limit():
    body = "\n".join(f"x{k} = pl.load(a, [{16 * k}, 0], [16, 64])" for k in range(6))
    body += "\n" + "\n".join(f"pl.store(pl.exp(x{k}), [{16 * k}, 0], out)" for k in range(6))
    default = synced(body)
    assert {eid for *_, eid in flags(default)} == set(range(6))  # six loads outstanding at once
    ctx = PassContext(CTX.platform.with_overrides(event_ids=2))
    small = synced(body, ctx=ctx)
    assert {eid for *_, eid in flags(small)} <= {0, 1}
    assert balanced(small)


def test_a_pipeline_deeper_than_the_event_ids_gives_way_rather_than_failing():
    """A stage-4 loop of unknown trip count with two event ids per pipe pair: the main loop's
    four loads and the remainder loop's copies want more ids than there are, and even a flag
    set right before its wait finds none free. The long-lived flags outstanding across it
    become short ones instead, until every pair fits its ids."""
    params = A.replace("out:", "n: pl.Scalar[pl.INDEX], out:")
    body = """
        for i in pl.pipeline(n, stage=4):
            t = pl.load(a, [i * 16, 0], [16, 128])
            pl.store(pl.exp(t), [i * 16, 0], out)
        """
    ctx = PassContext(CTX.platform.with_overrides(event_ids=2))
    p = kernel(params, body)
    for run in (plan_pipeline_loops, expand_pipeline_loops, allocate_memory_addr, insert_sync):
        p = apply(run, p, ctx)
    fn = p.get("k")
    assert {eid for *_, eid in flags(fn)} == {0, 1} and balanced(fn)


def test_dynamic_trip_count_keeps_flags_balanced():
    b = ir.Builder()
    with b.function("k", ir.FunctionType.AIV):
        a = b.param("a", ir.TensorType((512, 128), ir.FP32))
        n = b.param("n", ir.INDEX_TYPE)
        out = b.param("out", ir.TensorType((512, 128), ir.FP32), ir.Direction.Out)
        with b.loop("i", 0, n) as loop:
            t = b.op(
                "tile.load",
                a,
                [loop.var * 16, 0],
                [16, 64],
                type=ir.TileType((16, 64), ir.FP32, ir.MemorySpace.Vec),
            )
            b.eval("tile.store", b.op("tile.exp", t), [loop.var * 16, 0], out)
    p = apply(insert_sync, apply(allocate_memory_addr, b.program("p")))
    fn = p.get("k")
    assert balanced(fn) and flags(fn)


def test_functions_with_flags_already_are_left_alone():
    fn = synced(
        """
        x = pl.load(a, [0, 0], [16, 64])
        pl.system.set_flag(pl.Pipe.MTE2, pl.Pipe.MTE3, 3)
        pl.system.wait_flag(pl.Pipe.MTE2, pl.Pipe.MTE3, 3)
        pl.store(x, [0, 0], out)
        """
    )
    assert flags(fn) == [("set", "MTE2", "MTE3", 3), ("wait", "MTE2", "MTE3", 3)]
