"""A program whose task list follows its inputs' values (pl.read in orchestration) plans again
only when a call's inputs differ where the last plan read them: the same values give the same
task list, which is kept with its loaded runner."""

from __future__ import annotations

import numpy as np
import pytest
from read_kernels import first_n

import pypto.compile.plan as plan_module


def _compiled(monkeypatch, lens: np.ndarray) -> tuple[object, list[int]]:
    """``first_n`` compiled and called with ``lens``, and the plans its calls make from then on
    (the program may have been compiled and called earlier with other values)."""
    compiled = first_n.compile(lens, np.zeros((8, 64), np.float32), np.zeros((8, 64), np.float32))
    _call(compiled, lens)
    made: list[int] = []
    real = plan_module.plan_orchestration

    def counted(*args, **kwargs):
        made.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(plan_module, "plan_orchestration", counted)
    return compiled, made


def _call(compiled, lens: np.ndarray) -> np.ndarray:
    x = np.arange(8 * 64, dtype=np.float32).reshape(8, 64)
    y = np.full_like(x, -1.0)
    compiled(lens, x, y)
    n = int(lens[0, 0])
    np.testing.assert_array_equal(y[:n], 2 * x[:n])
    np.testing.assert_array_equal(y[n:], -1.0)
    return y


def test_a_call_whose_inputs_hold_the_values_read_keeps_the_plan(monkeypatch):
    lens = np.full((1, 8), 3, np.int32)
    compiled, plans = _compiled(monkeypatch, lens)
    _call(compiled, lens)
    _call(compiled, np.full((1, 8), 3, np.int32))  # another array with the same values
    lens[0, 5] = 7  # a value no pl.read looked at
    _call(compiled, lens)
    assert not plans and len(compiled.last_report.tasks) == 3


def test_a_value_read_that_changed_plans_again(monkeypatch):
    lens = np.full((1, 8), 3, np.int32)
    compiled, plans = _compiled(monkeypatch, lens)
    lens[0, 0] = 5  # the same array, changed in place: compared by value, not by identity
    _call(compiled, lens)
    assert len(plans) == 1 and len(compiled.last_report.tasks) == 5
    _call(compiled, lens)
    assert len(plans) == 1
    lens[0, 0] = 0
    _call(compiled, lens)
    assert len(plans) == 2 and not compiled.last_report.tasks


def test_an_argument_numpy_cannot_read_plans_again_and_is_refused_there(monkeypatch):
    from pypto.errors import ArgumentError

    compiled, plans = _compiled(monkeypatch, np.full((1, 8), 3, np.int32))
    assert compiled.plan.read is not None and not compiled.plan.read.hold_in((object(),) * 3)
    with pytest.raises(ArgumentError, match="outside its shape"):
        compiled(object(), np.zeros((8, 64), np.float32), np.zeros((8, 64), np.float32))
    assert len(plans) == 1
