"""A plan made at each call runs with Python's cycle collector held off, and leaves it as it
found it: on after the call (also when the call fails), off when the caller had turned it off."""

from __future__ import annotations

import gc

import pytest

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
