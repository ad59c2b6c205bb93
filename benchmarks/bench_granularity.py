"""The GM granularity penalty in simulated cycles: one weight-load-bound matmul with 128 B
vs 512 B weight rows (tests/fixtures/granularity_kernels.py). Deterministic; printed.

Run: python benchmarks/bench_granularity.py      Target: 16-25% slower with 128 B rows (docs/hardware.md).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "fixtures"))
import granularity_kernels as gk  # noqa: E402

from pypto.runtime import RunConfig  # noqa: E402


def main() -> None:
    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, (gk.M, gk.K)).astype(np.float16)
    b = rng.uniform(-1, 1, (gk.K, gk.NB * gk.NT)).astype(np.float16)
    c = np.zeros((gk.M, gk.NB * gk.NT), np.float32)
    gk.rows_128b(a, b, c, config=RunConfig())
    gk.rows_512b(a, np.ascontiguousarray(b.T), c, config=RunConfig())
    slow, fast = gk.rows_128b.last_report, gk.rows_512b.last_report
    slow_t, fast_t = gk.kernel_cycles(slow), gk.kernel_cycles(fast)  # without the launch's dispatch
    print(f"128 B weight rows: {slow_t} cycles (MTE2 busy {slow.pipe_busy['MTE2']})")
    print(f"512 B weight rows: {fast_t} cycles (MTE2 busy {fast.pipe_busy['MTE2']})")
    print(f"penalty: {slow_t / fast_t - 1:.1%}   target 16-25%")


if __name__ == "__main__":
    main()
