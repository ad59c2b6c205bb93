"""The chip in one simulated clock: shared HBM and L2, cluster kernels with tile pipes,
cross-core deadlocks and races, run limits and Ctrl-C. Cycle-exact where the model is."""

from __future__ import annotations

import math
import os
import re
import signal
import threading
import time
from pathlib import Path

import ml_dtypes  # noqa: F401  (fp16 views below)
import numpy as np
import pytest

from pypto import errors, platforms
from pypto.kernel_build import KernelSource, build_kernel
from pypto.runtime import run_kernel_file

BUCKET = 64  # MemorySystem::kBucketCycles
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "kernels"


def stream(fixture_kernel, a, *, tiles, block_rows, blocks, passes=1, platform="a2a3sim", record=True):
    return run_kernel_file(fixture_kernel("gm_stream"), [a, tiles, block_rows, passes], outputs=set(),
                           block_num=blocks, record=record, platform=platform)  # fmt: skip


def loads(rep, block):
    return [r for r in rep.tasks[block].trace.rows() if r["name"] == "TLOAD"]


def shared_ends(starts_bytes, port_bw, hbm_bw):
    """Reference model of the HBM calendar: transfers claim each bucket's budget in order."""
    used: dict[int, float] = {}
    ends = []
    for t0, nbytes in starts_bytes:
        t, left, stalled = float(t0), float(nbytes), False
        while left > 0:
            b = int(t // BUCKET)
            span = (b + 1) * BUCKET - t
            can = min(port_bw * span, max(hbm_bw * BUCKET - used.get(b, 0.0), 0.0))
            stalled |= can < port_bw * span
            moved = min(can, left)
            used[b] = used.get(b, 0.0) + moved
            left -= moved
            t = t + span if left > 0 else t + (span * moved / can if can else 0)
        ends.append(t if stalled else t0 + nbytes / port_bw)
    return ends


def test_one_core_alone_keeps_the_port_figures(fixture_kernel):
    plat = platforms.get("a2a3sim")
    a = np.zeros((16, 1024), np.float32)
    rep = stream(fixture_kernel, a, tiles=1, block_rows=0, blocks=1)
    (ld,) = loads(rep, 0)
    nbytes, requests = 16 * 4096, 16 * math.ceil(4096 / plat.gm_burst_bytes)
    assert requests * plat.gm_request_cycles < nbytes / plat.bw_gm_to_ub  # long rows: bandwidth-bound
    want = math.ceil(plat.transfer_setup_cycles + nbytes / plat.bw_gm_to_ub)
    assert ld["end"] - ld["start"] == want
    assert rep.memory["stalled_transfers"] == 0


def test_two_cores_share_hbm_exactly_as_the_calendar_says(fixture_kernel):
    # HBM as wide as one port: the second core gets what the first leaves, bucket by bucket.
    plat = platforms.get("a2a3sim").with_overrides(hbm_bytes_per_cycle=64, hbm_efficiency=1, bw_gm_to_ub=64)
    a = np.zeros((32, 1024), np.float32)
    alone = stream(fixture_kernel, a, tiles=1, block_rows=16, blocks=1, platform=plat)
    both = stream(fixture_kernel, a, tiles=1, block_rows=16, blocks=2, platform=plat)
    lead, nbytes = plat.transfer_setup_cycles, 16 * 4096
    (solo,) = loads(alone, 0)
    first, second = loads(both, 0)[0], loads(both, 1)[0]
    start = solo["start"]  # in the task's time; the calendar runs on the chip's
    t0 = both.tasks[0].start  # both blocks start after a cold head, together
    assert both.tasks[1].start == t0
    e1, e2 = shared_ends([(t0 + start + lead, nbytes), (t0 + start + lead, nbytes)], 64, 64)
    # one of them claims each bucket first and is not slowed; the other gets what is left
    ends = sorted([first["end"], second["end"]])
    assert ends == [start + math.ceil(e - t0 - start) for e in (e1, e2)]
    assert ends[0] == solo["end"] and ends[1] > ends[0] + 200
    assert both.memory["stalled_transfers"] == 1 and both.cycles > alone.cycles


def test_an_l2_hit_costs_the_hit_latency(fixture_kernel):
    plat = platforms.get("a2a3sim").with_overrides(l2_hit_latency_cycles=10)
    a = np.zeros((16, 1024), np.float32)
    rep = stream(fixture_kernel, a, tiles=1, block_rows=0, blocks=1, passes=2, platform=plat)
    miss, hit = loads(rep, 0)
    assert (miss["end"] - miss["start"]) - (hit["end"] - hit["start"]) == plat.transfer_setup_cycles - 10
    assert rep.memory["l2_hits"] == rep.memory["l2_misses"] == 16 * 4096 // 512


def test_tensors_over_the_same_bytes_share_their_l2_lines():
    """An argument passed twice, or two overlapping views, are one set of L2 lines: the second
    load of those bytes hits. tile_add loads a's tile, then b's, then stores c (64 lines each)."""
    so = build_kernel(KernelSource(name="tile_add", path=EXAMPLES / "tile_add.cpp"), platform="a2a3sim")
    big = np.arange(96 * 128, dtype=np.float32).reshape(96, 128)

    def l2(a, b):
        c = np.zeros_like(a)
        rep = run_kernel_file(so, [a, b, c], outputs={2}, platform="a2a3sim", isolate=False)
        np.testing.assert_array_equal(c, a + b)
        return rep.memory["l2_hits"], rep.memory["l2_misses"]

    assert l2(big[:64], big[:64].copy()) == (0, 192)  # apart: every line misses
    assert l2(big[:64], big[:64]) == (64, 128)  # the same array twice: b's loads all hit
    assert l2(big[32:], big[:64]) == (32, 160)  # b's rows 32..63 are a's rows 0..31, loaded before


def test_48_cores_streaming_share_hbm_and_reuse_the_l2(fixture_kernel):
    rows = 4 * 1024 * 1024 // 4096  # 4 MiB per core
    a = np.zeros((48 * rows, 1024), np.float32)
    tiles = rows // 16
    one = stream(fixture_kernel, a, tiles=tiles, block_rows=rows, blocks=1, record=False)
    distinct = stream(fixture_kernel, a, tiles=tiles, block_rows=rows, blocks=48, record=False)
    same = stream(fixture_kernel, a, tiles=tiles, block_rows=0, blocks=48, record=False)
    assert distinct.cycles >= 2 * one.cycles  # 48 x 59 B/cycle of demand on 865 B/cycle of HBM
    assert same.cycles < distinct.cycles  # one core's misses fill the L2; the others hit
    assert same.memory["l2_hits"] > 40 * same.memory["l2_misses"]


def test_ping_pong_through_tile_pipes(fixture_kernel):
    x = np.arange(256, dtype=np.float16).reshape(16, 16) / 64
    eye = np.eye(16, dtype=np.float16)
    out = np.zeros((16, 16), np.float32)
    rep = run_kernel_file(fixture_kernel("cluster_ping_pong"), [x, eye, out], outputs={2}, core="cluster",
                          record=True)  # fmt: skip
    np.testing.assert_array_equal(out, x.astype(np.float32) + 1)
    aic, aiv0, aiv1 = rep.tasks
    assert (aic.core_name, aiv0.core_name, aiv1.core_name) == ("AIC0", "AIV0", "AIV1")
    assert aic.start == aiv0.start == aiv1.start == platforms.get("a2a3sim").task_cold_head_cycles
    rows = {t.core_name: {r["name"]: r for r in t.trace.rows()} for t in (aic, aiv0)}
    push, pop = rows["AIC0"]["TPUSH"], rows["AIV0"]["TPOP"]
    assert pop["start"] == push["end"]  # the AIV waited for the AIC's transfer to land
    back_push, back_pop = rows["AIV0"]["TPUSH"], rows["AIC0"]["TPOP"]
    assert back_pop["start"] == back_push["end"]
    # a2a3 has no Acc -> Vec route: the ring is in GM, a FIXPIPE store and an MTE2 load
    assert (push["pipe"], pop["pipe"]) == (4, 0) and rep.memory["l2_misses"] > 0  # FIXPIPE, MTE2
    # the AIC's task ends with its last instruction: the free after the pop, a sync (no pipe time)
    assert aic.end - aic.start == max(r["end"] for r in aic.trace.rows()) == back_pop["end"]


def test_cross_core_deadlock_names_every_blocked_core(fixture_kernel):
    with pytest.raises(errors.DeadlockError) as e:
        run_kernel_file(fixture_kernel("cluster_misuse"), [0], core="cluster", name="cluster_misuse")
    msg = str(e.value)
    assert "deadlock across cores" in msg and "on AIV0 waits for TPOP from the AIC" in msg
    assert "misuse.py:20:5" in msg and "cluster_misuse" in msg


def test_a_full_ring_nobody_frees_is_a_deadlock_not_a_hang(fixture_kernel):
    with pytest.raises(
        errors.DeadlockError, match=r"AIC0 waits for TPUSH to AIV 0 \(ring full.*misuse.py:14:9"
    ):
        run_kernel_file(fixture_kernel("cluster_misuse"), [1], core="cluster")


def test_freeing_twice_and_a_mismatched_pop_are_typed_errors(fixture_kernel):
    with pytest.raises(errors.CrossCoreError, match=r"AIV0 frees .* freeing twice.*misuse.py:27:5"):
        run_kernel_file(fixture_kernel("cluster_misuse"), [2], core="cluster")
    with pytest.raises(
        errors.CrossCoreError, match=r"AIV0 pops a fp32 \[16, 32\] tile, but the AIC pushed a fp32 \[16, 16\]"
    ):
        run_kernel_file(fixture_kernel("cluster_misuse"), [3], core="cluster")


def test_a_ring_keeps_the_depth_of_its_first_push(fixture_kernel):
    with pytest.raises(
        errors.CrossCoreError, match=r"already rings 2 slots; it cannot change to 3.*misuse.py:9:5"
    ):
        run_kernel_file(fixture_kernel("cluster_misuse"), [4], core="cluster")
    with pytest.raises(errors.CrossCoreError, match=r"at least one slot, got -1"):
        run_kernel_file(fixture_kernel("cluster_misuse"), [5], core="cluster")


def test_cross_core_ops_outside_a_cluster_are_refused(fixture_kernel):
    with pytest.raises(errors.CrossCoreError, match="need a cluster launch"):
        run_kernel_file(fixture_kernel("cluster_misuse"), [0], core="aiv")


def test_unsynchronised_tasks_writing_the_same_bytes_race(fixture_kernel):
    a = np.ones((64, 128), np.float32)
    with pytest.raises(
        errors.RaceError, match=r"kernel 'exp_double_buffer' \(block 0\) TSTORE writes GM bytes"
    ):
        run_kernel_file(fixture_kernel("exp_double_buffer"), [a, np.zeros_like(a)], outputs={1}, block_num=2,
                        name="exp_double_buffer")  # fmt: skip


def test_races_are_reported_pair_by_pair_in_block_order(fixture_kernel):
    a = np.ones((64, 128), np.float32)
    so = fixture_kernel("exp_double_buffer")
    rep = run_kernel_file(so, [a, np.zeros_like(a)], outputs={1}, block_num=4, hazards="report")
    races = [h for h in rep.hazards if h.startswith("race between tasks")]
    pairs = [tuple(int(b) for b in re.findall(r"\(block (\d+)\)", h)) for h in races]
    assert pairs == [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)]


def test_limits_stop_a_kernel_that_never_finishes(fixture_kernel):
    with pytest.raises(
        errors.SimulationLimitError, match=r"instruction budget of 10000 at TADDS \(spin.py:9:9\)"
    ):
        run_kernel_file(fixture_kernel("spin"), [], max_instructions=10_000)
    with pytest.raises(errors.SimulationLimitError, match=r"max_cycles=5000"):
        run_kernel_file(fixture_kernel("spin"), [], max_cycles=5000)


def test_ctrl_c_stops_a_long_simulation_and_the_process_stays_usable(fixture_kernel):
    so = fixture_kernel("spin")
    timer = threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    t0 = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        run_kernel_file(so, [])
    assert time.monotonic() - t0 < 5
    a = np.ones((64, 128), np.float32)
    out = np.zeros_like(a)
    run_kernel_file(fixture_kernel("exp_double_buffer"), [a, out], outputs={1})
    np.testing.assert_allclose(out, np.exp(a), rtol=1e-6)


def test_an_absurdly_slow_gm_port_finishes_with_bounded_work(fixture_kernel):
    # 0.01 B/cycle (the slowest override allowed): one 64 KiB load lasts ~6.6e6 cycles; the memory
    # system bounds the buckets it walks and keeps, and the run ends with ordered cycles.
    plat = platforms.get("a2a3sim").with_overrides(bw_gm_to_ub=0.01)
    a = np.zeros((64, 1024), np.float32)
    t0 = time.monotonic()
    rep = stream(fixture_kernel, a, tiles=2, block_rows=32, blocks=2, platform=plat, record=False)
    assert time.monotonic() - t0 < 30 and rep.cycles > 2 * 6.5e6


@pytest.mark.parametrize("limit", [{"max_cycles": -5}, {"max_instructions": 2.5}, {"max_cycles": True}])
def test_bad_limits_are_typed_errors_before_anything_runs(fixture_kernel, limit):
    from pypto.errors import ArgumentValueError, ConfigError
    from pypto.runtime import RunConfig

    (name,) = limit
    with pytest.raises(ConfigError, match=f"RunConfig.{name} must be None or an integer"):
        RunConfig(**limit)
    with pytest.raises(ArgumentValueError, match=f"{name} must be None or an integer"):
        run_kernel_file(fixture_kernel("spin"), [], **limit)
