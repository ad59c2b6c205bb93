"""The task scheduler: independent tasks spread over cores, dependencies order them, atomic
adds commute and land in simulated completion order (perturbed by a seed)."""

from __future__ import annotations

import multicore_kernels as mk
import numpy as np

from pypto import platforms
from pypto.runtime import RunConfig

CFG = RunConfig(platform="a2a3sim")
DISPATCH = int(platforms.get("a2a3sim").task_dispatch_cycles)


def blocks(seed=0):
    return np.random.default_rng(seed).uniform(-1, 1, (mk.BLOCKS * mk.R, mk.C)).astype(np.float32)


def test_atomic_adds_sum_the_blocks():
    a = blocks()
    c = np.full((mk.R, mk.C), 9.0, np.float32)
    mk.atomic_block_sum(a, c, config=CFG)
    ref = a.reshape(mk.BLOCKS, mk.R, mk.C).sum(axis=0)
    np.testing.assert_allclose(c, ref, rtol=1e-5, atol=1e-6)


def test_independent_tasks_run_on_their_own_cores_after_their_dependency():
    a = blocks()
    mk.atomic_block_sum(a, np.zeros((mk.R, mk.C), np.float32), config=CFG)
    zero, *acc = mk.atomic_block_sum.last_report.tasks
    compiled = mk.atomic_block_sum.compile(a, np.zeros((mk.R, mk.C), np.float32), config=CFG)
    assert [t.deps for t in compiled.tasks] == [(), (0,), (0,), (0,), (0,)]  # atomic writers commute
    assert zero.start == 0 and all(t.start >= zero.end for t in acc)
    assert len({t.core_name for t in acc}) == mk.BLOCKS  # one AIV core each
    assert all(t.start == zero.end + DISPATCH for t in acc)  # launched together after zero_init
    rep = mk.atomic_block_sum.last_report
    assert rep.cycles == max(t.end for t in rep.tasks)
    assert rep.cycles < zero.cycles + sum(t.cycles for t in acc) + mk.BLOCKS * DISPATCH  # overlap


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
