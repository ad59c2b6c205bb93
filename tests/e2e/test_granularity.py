"""The granularity penalty comes out of the cost model (GM requests: one per started 512 B
burst of a row, one per gm_request_cycles), not a special case: 128 B weight rows make a
load-bound matmul 16-25% slower than 512 B rows, and PH001 flags the former only."""

from __future__ import annotations

import granularity_kernels as gk
import numpy as np

from pypto import platforms
from pypto.runtime import RunConfig

CFG = RunConfig(platform="a2a3sim")


def run_both(cfg: RunConfig = CFG):
    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, (gk.M, gk.K)).astype(np.float16)
    b = rng.uniform(-1, 1, (gk.K, gk.NB * gk.NT)).astype(np.float16)
    c128, c512 = (np.zeros((gk.M, gk.NB * gk.NT), np.float32) for _ in range(2))
    gk.rows_128b(a, b, c128, config=cfg)
    gk.rows_512b(a, np.ascontiguousarray(b.T), c512, config=cfg)
    return a, b, c128, c512


def test_same_result_in_both_layouts():
    a, b, c128, c512 = run_both()
    np.testing.assert_allclose(c128, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-3, atol=1e-2)
    np.testing.assert_allclose(c128, c512, rtol=1e-6, atol=1e-6)


def test_short_rows_cost_16_to_25_percent():
    run_both()
    slow, fast = gk.rows_128b.last_report, gk.rows_512b.last_report
    assert slow.pipe_busy["MTE2"] > fast.pipe_busy["MTE2"]
    assert 1.16 <= gk.kernel_cycles(slow) / gk.kernel_cycles(fast) <= 1.25


def weight_load_hints(kernel, *args) -> list[str]:
    compiled = kernel.compile(*args, config=CFG)
    return [h for h in compiled.hints if "tile.load" in h and "target_memory=Mat" in h and "fp16" in h]


def test_ph001_fires_on_the_128_byte_rows_only():
    a, b, c, _ = run_both()
    (hint,) = weight_load_hints(gk.rows_128b, a, b, c)
    assert "innermost dim = 128B" in hint and "moves 32768B as 256 x 128B rows" in hint
    assert weight_load_hints(gk.rows_512b, a, np.ascontiguousarray(b.T), c) == []


def weight_loads(report) -> list[int]:
    rows = report.tasks[0].trace.rows()
    return [r["end"] - r["start"] for r in rows if r["name"] == "TLOAD" and r["bytes"] == gk.K * gk.NB * 2]


def test_the_penalty_is_the_request_rate():
    p = platforms.get("a2a3sim")
    run_both(RunConfig(trace=True))
    leads = (
        p.transfer_setup_cycles,
        p.l2_hit_latency_cycles,
    )  # a block whose lines the last one fetched hits
    short, long = weight_loads(gk.rows_128b.last_report), weight_loads(gk.rows_512b.last_report)
    # 256 rows of 128 B: 256 requests x 2.4 cycles > 32 KiB / 78 B/cycle: request-bound
    assert len(short) == gk.NT and set(short) <= {
        int(np.ceil(lead + gk.K * p.gm_request_cycles)) for lead in leads
    }
    # 64 rows of 512 B: 64 requests carry 6.6 cycles of data each: bandwidth-bound
    assert len(long) == gk.NT and set(long) <= {
        int(np.ceil(lead + gk.K * gk.NB * 2 / p.bw_gm_to_l1)) for lead in leads
    }


def test_pto_isa_profile_has_no_short_row_penalty():
    run_both(RunConfig(cost_profile="pto-isa"))
    slow, fast = gk.rows_128b.last_report, gk.rows_512b.last_report
    assert slow.cycles == fast.cycles  # pto-isa prices a transfer by its bytes only
