"""Upstream's task-graph hints mean on the simulator what they mean on a device:
``no_dep_args=`` and ``pl.create_tensor(manual_dep=True)`` leave tensors out of dependency
inference (the tasks overlap, and a wrong claim is a race the simulator reports),
``allow_early_resolve=True`` lets consumers skip the pickup latency, ``init_value=`` fills a
``pl.create_tensor`` buffer; the hints are printed in pass dumps."""

from __future__ import annotations

import numpy as np

import pypto.language as pl
from pypto import platforms
from pypto.runtime import RunConfig

CFG = RunConfig(platform="a2a3sim")
N, TR, C = 4, 16, 64
PLAT = platforms.get("a2a3sim")
# a dependent task on the core its producer warmed: the runtime's pickup, then the steady head
DISPATCH = round(PLAT.task_dispatch_cycles + PLAT.task_head_cycles)


@pl.jit
def chained(a: pl.Tensor[[N * TR, C], pl.FP32], out: pl.Out[pl.Tensor[[N * TR, C], pl.FP32]]):
    for i in pl.range(N):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [i * TR, 0], [TR, C])
            pl.store(pl.muls(t, 2.0), [i * TR, 0], out)
    return out


@pl.jit
def claimed(a: pl.Tensor[[N * TR, C], pl.FP32], out: pl.Out[pl.Tensor[[N * TR, C], pl.FP32]]):
    for i in pl.range(N):
        with pl.at(level=pl.Level.CORE_GROUP, no_dep_args=[out]):
            t = pl.load(a, [i * TR, 0], [TR, C])
            pl.store(pl.muls(t, 2.0), [i * TR, 0], out)
    return out


def test_no_dep_args_lets_writers_of_disjoint_rows_overlap():
    a = np.arange(N * TR * C, dtype=np.float32).reshape(N * TR, C)
    out1, out2 = np.zeros_like(a), np.zeros_like(a)
    chained(a, out1, config=CFG)
    claimed(a, out2, config=CFG)
    np.testing.assert_array_equal(out1, 2 * a)
    np.testing.assert_array_equal(out2, out1)
    serial, overlapped = chained.last_report.tasks, claimed.last_report.tasks
    assert all(t.start >= serial[k].end for k, t in enumerate(serial[1:]))  # inferred: one by one
    assert len({t.start for t in overlapped}) == 1  # nothing inferred: all start together
    assert claimed.last_report.cycles < chained.last_report.cycles


@pl.jit.incore
def scale_rows(
    a: pl.Tensor[[N * TR, C], pl.FP32], i: pl.Scalar[pl.INDEX], out: pl.Out[pl.Tensor[[N * TR, C], pl.FP32]]
):
    pl.store(pl.muls(pl.load(a, [i * TR, 0], [TR, C]), 2.0), [i * TR, 0], out)
    return out


@pl.jit
def claimed_at_the_call(a: pl.Tensor[[N * TR, C], pl.FP32], out: pl.Out[pl.Tensor[[N * TR, C], pl.FP32]]):
    for i in pl.range(N):
        out = scale_rows(a, i, pl.no_dep(out))  # upstream's call-site form of no_dep_args=[out]
    return out


def test_pl_no_dep_at_a_kernel_call_is_no_dep_args():
    a = np.arange(N * TR * C, dtype=np.float32).reshape(N * TR, C)
    out = np.zeros_like(a)
    claimed_at_the_call(a, out, config=CFG)
    np.testing.assert_array_equal(out, 2 * a)
    tasks = claimed_at_the_call.last_report.tasks
    assert len(tasks) == N and len({t.start for t in tasks}) == 1 and all(not t.deps for t in tasks)


def test_pl_no_dep_takes_a_tensor_of_the_call():
    import pytest

    from pypto.errors import TypeCheckError

    @pl.jit
    def bad(a: pl.Tensor[[N * TR, C], pl.FP32], out: pl.Out[pl.Tensor[[N * TR, C], pl.FP32]]):
        out = scale_rows(a, pl.no_dep(0), out)
        return out

    with pytest.raises(TypeCheckError, match="pl.no_dep takes one tensor, got `pl.no_dep\\(0\\)`") as e:
        bad.compile()
    assert "test_task_hints.py" in str(e.value)


@pl.jit
def two_stages(
    a: pl.Tensor[[TR, C], pl.FP32],
    mid: pl.Out[pl.Tensor[[TR, C], pl.FP32]],
    out: pl.Out[pl.Tensor[[TR, C], pl.FP32]],
):
    with pl.at(level=pl.Level.CORE_GROUP):
        pl.store(pl.exp(pl.load(a, [0, 0], [TR, C])), [0, 0], mid)
    with pl.at(level=pl.Level.CORE_GROUP):
        pl.store(pl.adds(pl.load(mid, [0, 0], [TR, C]), 1.0), [0, 0], out)
    return mid, out


@pl.jit
def two_stages_early(
    a: pl.Tensor[[TR, C], pl.FP32],
    mid: pl.Out[pl.Tensor[[TR, C], pl.FP32]],
    out: pl.Out[pl.Tensor[[TR, C], pl.FP32]],
):
    with pl.at(level=pl.Level.CORE_GROUP, allow_early_resolve=True):
        pl.store(pl.exp(pl.load(a, [0, 0], [TR, C])), [0, 0], mid)
    with pl.at(level=pl.Level.CORE_GROUP):
        pl.store(pl.adds(pl.load(mid, [0, 0], [TR, C]), 1.0), [0, 0], out)
    return mid, out


def test_allow_early_resolve_removes_the_consumers_pickup_latency_exactly():
    a = np.linspace(-1, 1, TR * C, dtype=np.float32).reshape(TR, C)
    mid, out = np.zeros_like(a), np.zeros_like(a)
    two_stages(a, mid, out, config=CFG)
    plain = two_stages.last_report.tasks
    two_stages_early(a, mid, out, config=CFG)
    early = two_stages_early.last_report.tasks
    np.testing.assert_allclose(out, np.exp(a) + 1, rtol=1e-6)
    assert plain[1].start == plain[0].end + DISPATCH
    assert early[1].start == early[0].end
    assert early[1].end - early[1].start == plain[1].end - plain[1].start


@pl.jit
def scratch_chain(a: pl.Tensor[[TR, C], pl.FP32], out: pl.Out[pl.Tensor[[TR, C], pl.FP32]]):
    scratch = pl.create_tensor([TR, C], pl.FP32, manual_dep=True, init_value=1.5)
    with pl.at(level=pl.Level.CORE_GROUP) as first:
        t = pl.add(pl.load(a, [0, 0], [TR, C]), pl.load(scratch, [0, 0], [TR, C]))
        pl.store(t, [0, 0], scratch)
    with pl.at(level=pl.Level.CORE_GROUP, deps=[first]):
        pl.store(pl.muls(pl.load(scratch, [0, 0], [TR, C]), 2.0), [0, 0], out)
    return out


def test_a_manual_dep_tensor_is_ordered_only_by_deps_and_starts_from_its_init_value():
    a = np.ones((TR, C), np.float32)
    out = np.zeros_like(a)
    scratch_chain(a, out, config=CFG)
    np.testing.assert_array_equal(out, np.full_like(a, 5.0))  # (1 + 1.5) * 2
    first, second = scratch_chain.last_report.tasks
    assert second.start == first.end + DISPATCH  # deps=[first] still orders them


def test_hints_are_printed_in_the_pass_dump_and_read_back():
    a = np.ones((N * TR, C), np.float32)
    text = claimed.lower(a, np.zeros_like(a), config=CFG).as_python()
    assert "no_dep_args=[out" in text
    text = two_stages_early.lower(a[:TR], a[:TR].copy(), a[:TR].copy(), config=CFG).as_python()
    assert "allow_early_resolve=True" in text
    from pypto.frontend import parse_text

    assert parse_text(text).as_python() == text


@pl.jit
def gang(a: pl.Tensor[[N * TR, C], pl.FP32], out: pl.Out[pl.Tensor[[N * TR, C], pl.FP32]]):
    with pl.spmd(N, name_hint="gang", sync_start=True):
        i = pl.get_block_idx()
        pl.store(pl.exp(pl.load(a, [i * TR, 0], [TR, C])), [i * TR, 0], out)
    return out


def test_sync_start_blocks_start_on_one_cycle_and_the_hint_is_in_the_dump():
    """``pl.spmd(n, sync_start=True)``: the device admits all n blocks at once. Here the blocks
    are tasks that become ready together, each on its own idle core, so they start on one
    cycle; the keyword itself is a launch hint, carried to the kernel call in the dumps."""
    a = np.random.default_rng(1).standard_normal((N * TR, C)).astype(np.float32)
    out = np.zeros_like(a)
    gang(a, out, config=CFG)
    np.testing.assert_allclose(out, np.exp(a), rtol=1e-6)
    tasks = gang.last_report.tasks
    assert len(tasks) == N and len({t.start for t in tasks}) == 1
    text = gang.lower(a, out, config=CFG).as_python()
    assert "sync_start=True" in text
    from pypto.frontend import parse_text

    assert parse_text(text).as_python() == text
