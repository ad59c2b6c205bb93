"""The warm call of a small kernel stays cheap, checked by the work it does rather than by its
time (which a loaded machine would make flaky): the Python functions a call runs are counted
against a budget, and the report is left to be built when read. benchmarks/bench_jit.py
prints the time, in pieces."""

from __future__ import annotations

import sys

import numpy as np

import pypto.language as pl
from pypto.report.run_report import RunReport
from pypto.runtime import RunConfig

# Python-level calls (functions and builtins) of one warm call today, plus a little slack: a
# change that adds work to every call fails here and says where the calls went.
CALL_BUDGET = 90
CONFIG = RunConfig(platform="a2a3sim")


@pl.jit
def add_one(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        x = pl.load(a, [0, 0], [8, 64])
        pl.store(pl.adds(x, 1.0), [0, 0], out)
    return out


def calls_of_one_call(a: np.ndarray, out: np.ndarray) -> list[str]:
    calls: list[str] = []

    def profile(frame, event, arg) -> None:
        if event == "call":
            calls.append(f"{frame.f_code.co_filename.rsplit('/', 1)[-1]}:{frame.f_code.co_name}")
        elif event == "c_call":
            calls.append(getattr(arg, "__qualname__", repr(arg)))

    sys.setprofile(profile)
    try:
        add_one(a, out, config=CONFIG)
    finally:
        sys.setprofile(None)
    return calls[:-1]  # sys.setprofile(None) itself


def test_a_warm_call_stays_within_its_python_call_budget():
    a = np.ones((8, 64), np.float32)
    out = np.zeros_like(a)
    add_one(a, out, config=CONFIG)  # compiles; the calls below are warm
    calls = calls_of_one_call(a, out)
    assert len(calls) <= CALL_BUDGET, "\n".join(calls)
    built = [c for c in calls if c.startswith(("report", "compiled.py:launch_report", "compiled.py:report"))]
    assert not built, "the report is built only when read"
    np.testing.assert_array_equal(out, a + 1)


def test_the_report_of_a_warm_call_is_built_when_read_and_matches_an_eager_one():
    a = np.ones((8, 64), np.float32)
    out = np.zeros_like(a)
    add_one(a, out, config=CONFIG)
    lazy = add_one.last_report
    eager = add_one.compile(a, out, config=CONFIG).run(a, out)
    assert isinstance(lazy, RunReport)
    assert lazy.to_dict() == eager.to_dict()
    assert add_one.last_report is lazy  # built once
