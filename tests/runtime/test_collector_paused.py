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
