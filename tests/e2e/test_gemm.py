"""The 24-core fp16 GEMM of the benchmark: right numbers, one AIC core per block task."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures"))
import gemm_kernels as gk  # noqa: E402

from pypto import platforms  # noqa: E402


def test_24_core_fp16_gemm_matches_numpy_with_one_aic_core_per_block():
    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, (gk.S, gk.S)).astype(np.float16)
    b = rng.uniform(-1, 1, (gk.S, gk.S)).astype(np.float16)
    c = np.zeros((gk.S, gk.S), np.float32)
    gk.gemm(a, b, c)
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-3, atol=1e-3)
    rep = gk.gemm.last_report
    assert len(rep.tasks) == 24 == platforms.get("a2a3sim").aic_cores
    assert {t.core_type for t in rep.tasks} == {"AIC"} and len({t.core_name for t in rep.tasks}) == 24
    cold = platforms.get("a2a3sim").task_cold_head_cycles  # each block the first task on its core
    assert all(t.start == cold for t in rep.tasks)  # independent blocks: all dispatched at launch
    assert rep.cycles == max(t.end for t in rep.tasks) and rep.hazards == []
