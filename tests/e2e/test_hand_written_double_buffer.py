"""A hand-written double-buffered exp kernel: right numbers, and MTE2 overlaps VECTOR —
while the single-buffer version serialises them."""

from __future__ import annotations

import numpy as np
import pytest

from pypto.report.run_report import overlap_cycles
from pypto.runtime import run_kernel_file

NT, TR, TC = 8, 64, 128


def run(fixture_kernel, name):
    rng = np.random.default_rng(0)
    a = rng.uniform(-5, 5, size=(NT * TR, TC)).astype(np.float32)
    out = np.zeros_like(a)
    rep = run_kernel_file(fixture_kernel(name), [a, out], outputs={1}, record=True)
    return a, out, rep


@pytest.mark.parametrize("name", ["exp_single_buffer", "exp_double_buffer"])
def test_exp_is_right(fixture_kernel, name):
    a, out, rep = run(fixture_kernel, name)
    np.testing.assert_allclose(out, np.exp(a), rtol=1e-6, atol=0)
    assert rep.hazards == []


def op_cycles(rep, name):
    return sum(r["end"] - r["start"] for r in rep.tasks[0].trace.rows() if r["name"] == name)


def test_double_buffer_overlaps_load_with_compute(fixture_kernel):
    _, _, single = run(fixture_kernel, "exp_single_buffer")
    _, _, double = run(fixture_kernel, "exp_double_buffer")
    assert overlap_cycles(single.intervals("MTE2"), single.intervals("VECTOR")) == 0
    assert overlap_cycles(double.intervals("MTE2"), double.intervals("VECTOR")) > 0
    # Same work on every pipe, less wall time: the loads hide the compute.
    for op in ("TLOAD", "TEXP", "TSTORE"):
        assert op_cycles(double, op) == op_cycles(single, op)
    assert double.cycles < 0.8 * single.cycles
    # Bounded by the busiest pipe (MTE2) plus one tile through the others.
    busiest = max(double.pipe_busy[p] for p in ("MTE2", "VECTOR", "MTE3"))
    assert double.cycles <= 1.10 * (busiest + 287 + 395)


def test_report_prints_a_pipe_table(fixture_kernel):
    _, _, rep = run(fixture_kernel, "exp_double_buffer")
    text = str(rep)
    for pipe in ("MTE2", "MTE1", "CUBE", "VECTOR", "FIXPIPE", "MTE3", "SCALAR"):
        assert pipe in text
    assert f"{rep.cycles} cycles" in text
