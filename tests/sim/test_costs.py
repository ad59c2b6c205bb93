"""Instruction costs come from the platform table by the formulas of cost_model.cpp, pinned
cycle-exactly on a real kernel run (exp_single_buffer: 64x128 fp32 tiles)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pypto import platforms
from pypto.runtime import run_kernel_file

TR, TC, NT = 64, 128, 4


def gm_transfer(p, bw, rows, row_bytes):
    """Lead, then the data at the route's bandwidth or one request per burst, whichever is slower."""
    requests = rows * math.ceil(row_bytes / p.gm_burst_bytes)
    return math.ceil(p.transfer_setup_cycles + max(rows * row_bytes / bw, requests * p.gm_request_cycles))


def vector(p, per_repeat, base, nbytes):
    return math.ceil(base + per_repeat * math.ceil(nbytes / p.vector_repeat_bytes))


@pytest.fixture(params=["a2a3sim", "a5sim"])
def single_run(request, fixture_kernel):
    a = np.ones((NT * TR, TC), np.float32)
    out = np.zeros_like(a)
    rep = run_kernel_file(
        fixture_kernel("exp_single_buffer"), [a, out], outputs={1}, platform=request.param, record=True
    )
    return platforms.get(request.param), rep


def durations(rep, name):
    return {r["end"] - r["start"] for r in rep.tasks[0].trace.rows() if r["name"] == name}


def test_transfer_and_vector_costs_follow_the_table(single_run):
    p, rep = single_run
    nbytes = TR * TC * 4
    assert durations(rep, "TLOAD") == {gm_transfer(p, p.bw_gm_to_ub, TR, TC * 4)}
    assert durations(rep, "TSTORE") == {gm_transfer(p, p.bw_ub_to_gm, TR, TC * 4)}
    assert durations(rep, "TEXP") == {vector(p, p.vec_exp_per_repeat, p.vec_exp_base, nbytes)}
    assert durations(rep, "SET_FLAG") == {p.sync_cycles}


def test_a2a3_numbers_pinned(fixture_kernel):
    # 30 lead + 32768 B / 59 B/cycle = 585.4 -> 586 (64 requests x 2.4 = 154 < 555: not request-bound)
    # exp: 31 + 2 x 128 repeats = 287 (a run of its own: it waits for the load); store: 30 + 32768 / 109
    # = 330.6 -> 331
    a = np.ones((TR, TC), np.float32)
    rep = run_kernel_file(
        fixture_kernel("exp_single_buffer"), [a, np.zeros_like(a)], outputs={1}, record=True
    )
    assert durations(rep, "TLOAD") == {586}
    assert durations(rep, "TEXP") == {287}
    assert durations(rep, "TSTORE") == {331}
    assert durations(rep, "SET_FLAG") == durations(rep, "WAIT_FLAG") == {0}  # no pipe time
    # Serial chain after the core's cold head: issue(1) + load 586 + exp 287 + store 331 (the
    # flags pass in no time)
    cold = platforms.get("a2a3sim").task_cold_head_cycles
    assert rep.tasks[0].start == cold == 4829 and rep.cycles == cold + 1 + 586 + 287 + 331


def test_short_rows_are_request_bound(fixture_kernel):
    p = platforms.get("a2a3sim")
    # 32 KiB in 128 B rows: 256 requests x 2.4 = 614 > 32768 / 59 = 555: request-bound
    long_rows = gm_transfer(p, p.bw_gm_to_ub, 64, 512)
    short_rows = gm_transfer(p, p.bw_gm_to_ub, 256, 128)
    assert (long_rows, short_rows) == (math.ceil(30 + 32768 / 59), math.ceil(30 + 256 * 2.4)) == (586, 645)


def test_platform_overrides_change_the_simulated_cost(fixture_kernel):
    a = np.ones((TR, TC), np.float32)
    fast = platforms.get("a2a3sim").with_overrides(bw_gm_to_ub=118.0)
    rep = run_kernel_file(
        fixture_kernel("exp_single_buffer"), [a, np.zeros_like(a)], outputs={1}, platform=fast, record=True
    )
    assert durations(rep, "TLOAD") == {gm_transfer(fast, 118.0, TR, TC * 4)}
