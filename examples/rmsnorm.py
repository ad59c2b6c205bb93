"""RMSNorm: y = x / sqrt(mean(x^2) + eps) * gamma, row blocks in a loop.

gamma ([1, COLS]) is loaded once; each block squares (pl.mul), reduces (pl.row_sum),
scales to the mean (pl.muls), takes pl.rsqrt of mean + eps, and applies it per row
(pl.row_expand_mul) and gamma per column (pl.col_expand_mul). Checked against numpy in
float64; prints the per-pipe cycles of the run.

    python examples/rmsnorm.py [--rows 256] [--cols 512]
"""

from __future__ import annotations

import argparse

import numpy as np

import pypto.language as pl
from pypto.runtime import RunConfig

ROWS, COLS, BLOCK = 256, 512, 16
EPS = 1e-6


def make_rmsnorm(rows: int = ROWS, cols: int = COLS, block: int = BLOCK):
    """The kernel for x [rows, cols] (rows a multiple of ``block``), gamma [1, cols]."""
    if rows % block:
        raise ValueError(f"rows must be a multiple of {block}, got {rows}")

    @pl.jit
    def rmsnorm(x: pl.Tensor, gamma: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="rmsnorm_rows"):
            g = pl.load(gamma, [0, 0], [1, cols])
            for i in pl.range(rows // block):
                t = pl.load(x, [i * block, 0], [block, cols])
                tmp = pl.create_tile([block, cols], pl.FP32)
                mean_sq = pl.muls(pl.row_sum(pl.mul(t, t), tmp), 1.0 / cols)
                inv_rms = pl.rsqrt(pl.adds(mean_sq, EPS))
                y = pl.col_expand_mul(pl.row_expand_mul(t, inv_rms), g)
                pl.store(y, [i * block, 0], out)
        return out

    return rmsnorm


def reference(x: np.ndarray, gamma: np.ndarray) -> np.ndarray:
    z = x.astype(np.float64)
    return z / np.sqrt((z * z).mean(axis=1, keepdims=True) + EPS) * gamma


def run(seed: int = 0, rows: int = ROWS, cols: int = COLS) -> tuple[float, object]:
    """Runs the kernel once; returns the largest relative error against float64 and the report."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    gamma = rng.uniform(0.5, 1.5, (1, cols)).astype(np.float32)
    out = np.zeros_like(x)
    rmsnorm = make_rmsnorm(rows, cols)
    rmsnorm(x, gamma, out, config=RunConfig(platform="a2a3sim"))
    ref = reference(x, gamma)
    return float(np.abs(out - ref).max() / np.abs(ref).max()), rmsnorm.last_report


if __name__ == "__main__":
    ap = argparse.ArgumentParser(prog="rmsnorm.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=ROWS, help=f"rows, a multiple of {BLOCK} (default {ROWS})")
    ap.add_argument("--cols", type=int, default=COLS, help=f"columns (default {COLS})")
    opts = ap.parse_args()
    err, report = run(rows=opts.rows, cols=opts.cols)
    print(f"rmsnorm {opts.rows}x{opts.cols} fp32: max relative error vs float64 = {err:.2e}")
    print(report)
