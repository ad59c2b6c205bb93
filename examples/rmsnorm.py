"""RMSNorm: y = x / sqrt(mean(x^2) + eps) * gamma, row blocks in a loop.

gamma ([1, COLS]) is loaded once; each block squares (pl.mul), reduces (pl.row_sum),
scales to the mean (pl.muls), takes pl.rsqrt of mean + eps, and applies it per row
(pl.row_expand_mul) and gamma per column (pl.col_expand_mul). Checked against numpy in
float64; prints the per-pipe cycles of the run.

    python examples/rmsnorm.py
"""

from __future__ import annotations

import numpy as np

import pypto.language as pl
from pypto.runtime import RunConfig

ROWS, COLS, BLOCK = 256, 512, 16
EPS = 1e-6


@pl.jit
def rmsnorm(x: pl.Tensor, gamma: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="rmsnorm_rows"):
        g = pl.load(gamma, [0, 0], [1, COLS])
        for i in pl.range(ROWS // BLOCK):
            t = pl.load(x, [i * BLOCK, 0], [BLOCK, COLS])
            tmp = pl.create_tile([BLOCK, COLS], pl.FP32)
            mean_sq = pl.muls(pl.row_sum(pl.mul(t, t), tmp), 1.0 / COLS)
            inv_rms = pl.rsqrt(pl.adds(mean_sq, EPS))
            y = pl.col_expand_mul(pl.row_expand_mul(t, inv_rms), g)
            pl.store(y, [i * BLOCK, 0], out)
    return out


def reference(x: np.ndarray, gamma: np.ndarray) -> np.ndarray:
    z = x.astype(np.float64)
    return z / np.sqrt((z * z).mean(axis=1, keepdims=True) + EPS) * gamma


def run(seed: int = 0) -> tuple[float, object]:
    """Runs the kernel once; returns the largest relative error against float64 and the report."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((ROWS, COLS)).astype(np.float32)
    gamma = rng.uniform(0.5, 1.5, (1, COLS)).astype(np.float32)
    out = np.zeros_like(x)
    rmsnorm(x, gamma, out, config=RunConfig(platform="a2a3sim"))
    ref = reference(x, gamma)
    return float(np.abs(out - ref).max() / np.abs(ref).max()), rmsnorm.last_report


if __name__ == "__main__":
    err, report = run()
    print(f"rmsnorm {ROWS}x{COLS} fp32: max relative error vs float64 = {err:.2e}")
    print(report)
