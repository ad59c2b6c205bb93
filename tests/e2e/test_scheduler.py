"""The task scheduler: independent tasks spread over cores, dependencies order them, atomic
adds commute and land in simulated completion order (perturbed by a seed), and each task starts
a head after it is handed to a core (cold on the core's first task, steady after)."""

from __future__ import annotations

import multicore_kernels as mk
import numpy as np

import pypto.language as pl
from pypto import platforms
from pypto.runtime import RunConfig

CFG = RunConfig(platform="a2a3sim")
PLAT = platforms.get("a2a3sim")
COLD = int(PLAT.task_cold_head_cycles)  # a core's first task: dispatch to start
# a dependent task on a core that has run one: the runtime's pickup, then the steady head
DISPATCH = int(PLAT.task_dispatch_cycles + PLAT.task_head_cycles)


def blocks(seed=0):
    return np.random.default_rng(seed).uniform(-1, 1, (mk.BLOCKS * mk.R, mk.C)).astype(np.float32)


def test_atomic_adds_sum_the_blocks():
    a = blocks()
    c = np.full((mk.R, mk.C), 9.0, np.float32)
    mk.atomic_block_sum(a, c, config=CFG)
    ref = a.reshape(mk.BLOCKS, mk.R, mk.C).sum(axis=0)
    np.testing.assert_allclose(c, ref, rtol=1e-5, atol=1e-6)


def test_atomic_writers_start_at_launch_and_only_their_writes_wait_for_the_zero_init():
    a = blocks()
    c = np.zeros((mk.R, mk.C), np.float32)
    compiled = mk.atomic_block_sum.compile(a, c, config=CFG)
    assert [t.deps for t in compiled.tasks] == [(), (0,), (0,), (0,), (0,)]  # atomic writers commute
    assert [t.start_deps for t in compiled.tasks] == [()] * 5  # ... and wait only to write c
    assert [t.write_gates for t in compiled.tasks] == [()] + [((0, 1),)] * mk.BLOCKS
    rep = compiled.run(a, c, trace=True)
    zero, *acc = rep.tasks
    assert all(t.start == COLD for t in rep.tasks)  # dispatched together at launch, each to a cold core
    assert len({t.core_name for t in acc}) == mk.BLOCKS  # one AIV core each
    for t in acc:
        (load,) = t.trace.intervals("MTE2")
        (store,) = t.trace.intervals("MTE3")
        assert load[0] < zero.end  # the load of a needs nothing from zero_init
        assert t.start + store[0] == zero.end  # the atomic add waits for c's zeros, exactly
    assert rep.cycles == max(t.end for t in rep.tasks)
    np.testing.assert_allclose(c, a.reshape(mk.BLOCKS, mk.R, mk.C).sum(axis=0), rtol=1e-5, atol=1e-6)


def test_a_task_that_reads_its_dependency_starts_a_dispatch_after_it():
    a = blocks()[: mk.R]
    compiled = mk.chain.compile(a, np.zeros_like(a), config=CFG)
    first, second = compiled.run(a, np.zeros_like(a)).tasks
    assert compiled.tasks[1].start_deps == (0,) and compiled.tasks[1].write_gates == ()
    assert second.start == first.end + DISPATCH


def test_seed_changes_only_the_order_of_the_adds():
    a = blocks(seed=5) * 1e4
    base = np.zeros((mk.R, mk.C), np.float32)
    mk.atomic_block_sum(a, base, config=CFG)
    for seed in (1, 2, 3):
        c = np.zeros_like(base)
        mk.atomic_block_sum(a, c, config=RunConfig(seed=seed))
        np.testing.assert_allclose(c, base, rtol=1e-6, atol=1e-2)  # last places only


def test_dependent_tasks_serialise_through_gm():
    a = blocks()[: mk.R]
    out = np.zeros_like(a)
    mk.chain(a, out, config=CFG)
    np.testing.assert_array_equal(out, np.maximum(-a, 0))
    first, second = mk.chain.last_report.tasks
    assert second.start >= first.end and (first.name, second.name) == ("negate", "relu")


def test_explicit_deps_order_tasks_that_share_no_tensor():
    a = blocks()[: mk.R]
    outs = [np.zeros_like(a) for _ in range(3)]
    compiled = mk.explicit_deps.compile(a, *outs, config=CFG)
    assert [t.deps for t in compiled.tasks] == [(), (0,), ()]
    first, second, third = compiled.run(a, *outs).tasks
    assert second.start == first.end + DISPATCH  # deps=[first], though no tensor joins them
    assert third.start == COLD  # nothing orders it: dispatched at launch
    np.testing.assert_allclose(outs[1], -a)
    np.testing.assert_allclose(outs[2], np.maximum(a, 0))


def test_deps_on_a_loop_handle_wait_for_every_iteration():
    a = blocks()
    x, y = np.zeros_like(a), np.zeros((mk.R, mk.C), np.float32)
    compiled = mk.deps_on_a_loop.compile(a, x, y, config=CFG)
    assert compiled.tasks[-1].deps == tuple(range(mk.BLOCKS))
    *rows, after = compiled.run(a, x, y).tasks
    assert after.start == max(t.end for t in rows) + DISPATCH
    np.testing.assert_allclose(x, np.exp(a), rtol=1e-5)


def test_parallel_iterations_writing_one_output_are_independent_tasks():
    a = blocks()
    x, y = np.zeros_like(a), np.zeros_like(a)
    compiled = mk.parallel_then_read.compile(a, x, y, config=CFG)
    assert [t.deps for t in compiled.tasks] == [()] * mk.BLOCKS + [tuple(range(mk.BLOCKS))]
    *rows, reader = compiled.run(a, x, y).tasks
    assert all(t.start == COLD for t in rows) and len({t.core_name for t in rows}) == mk.BLOCKS
    assert reader.start == max(t.end for t in rows) + DISPATCH
    np.testing.assert_allclose(y, -np.exp(a), rtol=1e-5)


def test_incore_helpers_run_as_ordered_tasks():
    a = blocks()
    out = np.zeros_like(a)
    mk.helper_chain(a, out, config=CFG)
    ref = 2 * a
    ref[: 2 * mk.R] *= 2
    np.testing.assert_allclose(out, ref, rtol=1e-6)
    first, second = mk.helper_chain.last_report.tasks
    assert [first.name, second.name] == ["scale_rows", "scale_rows_1"]
    assert second.start == first.end + DISPATCH  # reads what the first wrote


def test_deps_on_a_scope_that_did_not_run_order_nothing():
    a = blocks()[: mk.R]
    x, y = np.zeros_like(a), np.zeros_like(a)
    mk.deps_on_a_skipped_scope(a, x, y, 0, config=CFG)
    (always,) = mk.deps_on_a_skipped_scope.last_report.tasks
    assert always.start == COLD and not x.any()
    np.testing.assert_allclose(y, -a)
    mk.deps_on_a_skipped_scope(a, x, y, 1, config=CFG)
    first, second = mk.deps_on_a_skipped_scope.last_report.tasks
    assert second.start == first.end + DISPATCH


def test_a_missed_l2_line_draws_the_whole_line_from_hbm():
    # rows of 128 fp32 are 512 B, one L2 line each; each load asks for 256 B of every row
    a = np.random.default_rng(0).uniform(-1, 1, (mk.R, 2 * mk.C)).astype(np.float32)
    out = np.zeros((mk.R, mk.C), np.float32)
    mk.halves(a, out, config=CFG)
    rep = mk.halves.last_report
    np.testing.assert_array_equal(out, a[:, : mk.C] + a[:, mk.C :])
    line = platforms.get("a2a3sim").l2_line_bytes
    assert a.strides[0] == line
    # the left halves miss and fill whole lines; the right halves hit them; out's 256 B rows
    # pack two to a line
    assert rep.memory["l2_misses"] == mk.R + mk.R // 2 and rep.memory["l2_hits"] == mk.R
    assert rep.memory["hbm_bytes"] == (mk.R + mk.R // 2) * line  # whole lines, not the 256 B asked


@pl.jit
def three_steps(a: pl.Tensor, b: pl.Out[pl.Tensor], c: pl.Out[pl.Tensor], d: pl.Out[pl.Tensor]):
    for i in pl.parallel(2):
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.store(pl.exp(pl.load(a, [i * 16, 0], [16, 128])), [i * 16, 0], b)
    with pl.at(level=pl.Level.CORE_GROUP):
        pl.store(pl.adds(pl.load(b, [0, 0], [32, 128]), 1.0), [0, 0], c)
    with pl.at(level=pl.Level.CORE_GROUP):
        pl.store(pl.muls(pl.load(c, [0, 0], [32, 128]), 2.0), [0, 0], d)
    return b, c, d


def test_a_multi_task_program_pays_cold_heads_then_warm_pickups_exactly():
    a = np.linspace(-1, 1, 32 * 128, dtype=np.float32).reshape(32, 128)
    b, c, d = np.zeros_like(a), np.zeros_like(a), np.zeros_like(a)
    three_steps(a, b, c, d, config=CFG)
    np.testing.assert_allclose(d, (np.exp(a) + 1) * 2, rtol=1e-5)
    rep = three_steps.last_report
    # the two exp tasks start together, each on a cold core; the add and the mul follow on the
    # warm AIV0: its producers' end, the pickup (882) and the steady head (598), 1480 in all
    assert [(t.core_name, t.start, t.end) for t in rep.tasks] == [
        ("AIV0", 4829, 5200),
        ("AIV1", 4829, 5200),
        ("AIV0", 6680, 7242),
        ("AIV0", 8722, 9284),
    ]
    assert (COLD, DISPATCH) == (4829, 1480) and rep.cycles == 4829 + 371 + 2 * (1480 + 562)


WIDE = 49  # one task more than the AIV cores


@pl.jit
def one_too_many(a: pl.Tensor, b: pl.Out[pl.Tensor]):
    for i in pl.parallel(WIDE):
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.store(pl.exp(pl.load(a, [i * 16, 0], [16, 128])), [i * 16, 0], b)
    return b


def test_a_task_waiting_for_a_core_pays_the_steady_head_on_it():
    a = np.linspace(-1, 1, WIDE * 16 * 128, dtype=np.float32).reshape(WIDE * 16, 128)
    b = np.zeros_like(a)
    one_too_many(a, b, config=CFG)
    np.testing.assert_allclose(b, np.exp(a), rtol=1e-5)
    *wave, last = one_too_many.last_report.tasks
    assert len(wave) == PLAT.aiv_cores and all(t.start == COLD for t in wave)
    assert last.start == min(t.end for t in wave) + int(PLAT.task_head_cycles)


QUEUED = 150  # three AIV cores' worth of tasks over the 48, of two lengths


@pl.jit
def many_waiting(a: pl.Tensor, b: pl.Out[pl.Tensor]):
    for i in pl.parallel(QUEUED):
        with pl.at(level=pl.Level.CORE_GROUP):
            x = pl.load(a, [i * 16, 0], [16, 128])
            if i % 3 == 0:
                x = pl.exp(pl.exp(x))
            pl.store(pl.exp(x), [i * 16, 0], b)
    return b


def test_tasks_waiting_for_cores_take_them_in_submit_order_exactly():
    a = np.linspace(-1, 1, QUEUED * 16 * 128, dtype=np.float32).reshape(QUEUED * 16, 128)
    b = np.zeros_like(a)
    many_waiting(a, b, config=CFG)
    tasks = many_waiting.last_report.tasks
    starts = [t.start for t in tasks]
    assert starts[: PLAT.aiv_cores] == [COLD] * PLAT.aiv_cores
    # a task that waited for a core never starts before one submitted ahead of it
    assert starts == sorted(starts)
    # the whole schedule, pinned: a finish re-tries the waiting tasks in the order they waited,
    # and the first one to find a core idle takes it
    assert many_waiting.last_report.cycles == 9620 and sum(starts) == 988162
    assert [t.core_name for t in tasks[48:54]] == ["AIV47", "AIV1", "AIV2", "AIV4", "AIV5", "AIV7"]
    np.testing.assert_allclose(b[:: 3 * 16], np.exp(np.exp(np.exp(a[:: 3 * 16]))), rtol=1e-5)


MIXED = 90  # cube tasks for 24 AIC cores and vector tasks for 48 AIV cores, each waiting


@pl.jit
def mixed_waiting(a: pl.Tensor, w: pl.Tensor, s: pl.Out[pl.Tensor], b: pl.Out[pl.Tensor]):
    for i in pl.parallel(MIXED):
        with pl.at(level=pl.Level.CORE_GROUP):
            s[i * 16 : i * 16 + 16, :] = pl.matmul(a[i * 16 : i * 16 + 16, :], w)
        with pl.at(level=pl.Level.CORE_GROUP):
            b[i * 16 : i * 16 + 16, :] = pl.exp(s[i * 16 : i * 16 + 16, :])
    return b


def test_tasks_of_two_kinds_waiting_for_their_cores_keep_their_schedule_exactly():
    # AIC and AIV tasks queue for cores that free at different times; a finish re-tries them
    # (the waiting ones of a kind are re-queued together, in the order they waited): the whole
    # schedule, pinned
    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, (MIXED * 16, 64)).astype(np.float16)
    w = rng.uniform(-1, 1, (64, 64)).astype(np.float16)
    s, b = np.zeros((MIXED * 16, 64), np.float32), np.zeros((MIXED * 16, 64), np.float32)
    mixed_waiting(a, w, s, b, config=CFG)
    np.testing.assert_allclose(b, np.exp(a.astype(np.float32) @ w.astype(np.float32)), rtol=1e-4)
    rep = mixed_waiting.last_report
    tasks = rep.tasks
    assert rep.cycles == 13127 and sum(t.start for t in tasks) == 1673102
    assert [t.core_name for t in tasks[170:180]] == [
        "AIC13", "AIV15", "AIC15", "AIV12", "AIC14", "AIV14", "AIC23", "AIV17", "AIC16", "AIV16",
    ]  # fmt: skip
    cube = [t.start for t in tasks if t.core_name.startswith("AIC")]
    assert cube == sorted(cube)  # the cube tasks take their cores in submit order
