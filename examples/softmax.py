"""Row softmax: fp16 in, fp32 math, fp16 out, one row block per loop trip.

Each block is loaded to Vec, widened with pl.cast, reduced with pl.row_max, shifted with
pl.row_expand_sub, exponentiated, normalised with pl.row_sum / pl.row_expand_div and
narrowed back — the numerically stable softmax every attention kernel needs. Checked
against numpy in float64; prints the per-pipe cycles of the run.

    python examples/softmax.py [--rows 256] [--cols 256]
"""

from __future__ import annotations

import argparse

import numpy as np

import pypto.language as pl
from pypto.runtime import RunConfig

ROWS, COLS, BLOCK = 256, 256, 32


def make_softmax(rows: int = ROWS, cols: int = COLS, block: int = BLOCK):
    """The kernel for x [rows, cols] fp16 (rows a multiple of ``block``)."""
    if rows % block:
        raise ValueError(f"rows must be a multiple of {block}, got {rows}")

    @pl.jit
    def softmax(x: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="softmax_rows"):
            for i in pl.range(rows // block):
                t = pl.cast(pl.load(x, [i * block, 0], [block, cols]), target_type=pl.FP32)
                tmp = pl.create_tile([block, cols], pl.FP32)
                row_max = pl.row_max(t, tmp)
                e = pl.exp(pl.row_expand_sub(t, row_max))
                y = pl.row_expand_div(e, pl.row_sum(e, tmp))
                pl.store(pl.cast(y, target_type=pl.FP16, mode="rint"), [i * block, 0], out)
        return out

    return softmax


def reference(x: np.ndarray) -> np.ndarray:
    z = x.astype(np.float64)
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def run(seed: int = 0, rows: int = ROWS, cols: int = COLS) -> tuple[float, object]:
    """Runs the kernel once; returns the largest error against float64 and the report."""
    x = (np.random.default_rng(seed).standard_normal((rows, cols)) * 4).astype(np.float16)
    out = np.zeros_like(x)
    softmax = make_softmax(rows, cols)
    softmax(x, out, config=RunConfig(platform="a2a3sim"))
    return float(np.abs(out.astype(np.float64) - reference(x)).max()), softmax.last_report


if __name__ == "__main__":
    ap = argparse.ArgumentParser(prog="softmax.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=ROWS, help=f"rows, a multiple of {BLOCK} (default {ROWS})")
    ap.add_argument("--cols", type=int, default=COLS, help=f"columns (default {COLS})")
    opts = ap.parse_args()
    err, report = run(rows=opts.rows, cols=opts.cols)
    print(f"softmax {opts.rows}x{opts.cols} fp16: max |error| vs float64 = {err:.2e}")
    print(report)
