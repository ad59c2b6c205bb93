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
    bursts = rows * math.ceil(row_bytes / p.gm_burst_bytes)
    return math.ceil(p.transfer_setup_cycles + rows * row_bytes / bw + bursts * p.gm_burst_overhead_cycles)


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
    # 30 setup + 32768 B / 59 B/cycle + 64 rows x 1 burst x 1.0 = 649.4 -> 650
    # exp: 31 + 2 x 128 repeats = 287; store: 30 + 32768 / 109 + 64 = 394.6 -> 395
    a = np.ones((TR, TC), np.float32)
    rep = run_kernel_file(
        fixture_kernel("exp_single_buffer"), [a, np.zeros_like(a)], outputs={1}, record=True
    )
    assert durations(rep, "TLOAD") == {650}
    assert durations(rep, "TEXP") == {287}
    assert durations(rep, "TSTORE") == {395}
    # Serial chain: issue(1) + load 650 + set/wait 2 + exp 287 + set/wait 2 + store 395 + set/wait 2
    assert rep.cycles == 1 + 650 + 2 + 287 + 2 + 395 + 2


def test_short_rows_pay_per_burst(fixture_kernel):
    p = platforms.get("a2a3sim")
    # 128 B rows move the same bytes as 512 B rows in 4x the bursts
    long_rows = gm_transfer(p, p.bw_gm_to_ub, 64, 512)
    short_rows = gm_transfer(p, p.bw_gm_to_ub, 256, 128)
    assert short_rows > long_rows
    base = 30 + 32768 / 59
    assert short_rows - long_rows == math.ceil(base + 256 * 1.0) - math.ceil(base + 64 * 1.0)


def test_platform_overrides_change_the_simulated_cost(fixture_kernel):
    a = np.ones((TR, TC), np.float32)
    fast = platforms.get("a2a3sim").with_overrides(bw_gm_to_ub=118.0)
    rep = run_kernel_file(
        fixture_kernel("exp_single_buffer"), [a, np.zeros_like(a)], outputs={1}, platform=fast, record=True
    )
    assert durations(rep, "TLOAD") == {gm_transfer(fast, 118.0, TR, TC * 4)}
