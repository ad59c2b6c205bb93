"""A plan made at each call, and the report of thousands of tasks, are made with Python's cycle
collector held off, which is left as it was found: on after the call (also when the call fails),
off when the caller had turned it off."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import pypto.language as pl
from pypto import ir
from pypto._collector import collector_paused


def test_the_collector_is_off_inside_and_restored_after_an_error():
    assert gc.isenabled()
    with pytest.raises(ValueError), collector_paused():
        assert not gc.isenabled()
        raise ValueError("a failed plan")
    assert gc.isenabled()


def test_a_collector_the_caller_turned_off_stays_off():
    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_not_pausing_leaves_the_collector_running():
    with collector_paused(False):
        assert gc.isenabled()


class _Node:
    pass


def test_what_the_block_kept_is_old_and_its_cycles_are_still_collected():
    import weakref

    with collector_paused():
        kept = [(_Node(),) for _ in range(100)]
        ring = _Node()
        ring.self = ring  # a cycle, garbage once the block's name is dropped
        gone = weakref.ref(ring)
        del ring
    old = {id(o) for o in gc.get_objects(generation=2)}
    assert all(id(t) in old for t in kept)  # no pass of the young generations walks them
    assert gone() is not None
    gc.collect()  # a full collection still finds the cycle
    assert gone() is None


def test_objects_the_process_froze_stay_frozen():
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        with collector_paused():
            made = [_Node() for _ in range(10)]
        assert gc.get_freeze_count() == frozen and made
    finally:
        gc.unfreeze()


def test_the_callers_young_garbage_is_collected_not_kept_for_a_full_collection():
    import weakref

    ring = _Node()
    ring.self = ring
    gone = weakref.ref(ring)
    del ring  # garbage of the caller's, young when the block starts
    with collector_paused():
        pass
    assert gone() is None


@pl.function(type=pl.FunctionType.InCore)
def bump(
    x: pl.Tensor[[8, 64], pl.FP32], y: pl.Out[pl.Tensor[[8, 64], pl.FP32]]
) -> pl.Tensor[[8, 64], pl.FP32]:
    return pl.store(pl.adds(pl.load(x, [0, 0], [8, 64], target_memory=pl.MemorySpace.Vec), 1.0), [0, 0], y)


@pl.program
class ManyTasks:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(
        self, a: pl.Tensor[[8, 64], pl.FP32], out: pl.Out[pl.Tensor[[8, 64], pl.FP32]]
    ) -> pl.Tensor[[8, 64], pl.FP32]:
        for _ in pl.range(1100):
            out = bump(a, out)
        return out


def test_a_report_of_many_tasks_is_built_with_the_collector_held_off():
    # some ten objects a task: the collector's passes over a large heap would walk them all
    compiled = ir.compile(ManyTasks, platform="a2a3sim")
    a = np.ones((8, 64), np.float32)
    out = np.zeros_like(a)
    compiled(a, out)
    passes: list[int] = []

    def seen(phase: str, info: dict) -> None:
        if phase == "start":
            passes.append(info["generation"])

    gc.callbacks.append(seen)
    try:
        report = compiled.last_report
    finally:
        gc.callbacks.remove(seen)
    assert len(report.tasks) == 1100 and gc.isenabled()
    assert passes == [1]  # the young pass that starts the pause, and no other
    np.testing.assert_array_equal(out, a + 1)
