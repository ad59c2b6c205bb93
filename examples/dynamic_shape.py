"""Dynamic shapes: one compiled kernel for every row count.

``M = pl.dynamic("M")`` in the annotations keeps M out of the specialisation key, so calls
with 16, 40 and 100 rows share one compile and one kernel build. In the body ``M`` is the
size of the tensor the call passes (read from its descriptor); the loop runs
``ceil(M / BLOCK)`` blocks and the last one is a ragged tail: ``valid_shape`` limits the
load, and every op and the store act on the valid rows only. A window that runs past the
tensor is caught at run time with the kernel's source line.

    python examples/dynamic_shape.py [--rows 16 40 100]
"""

from __future__ import annotations

import argparse

import numpy as np

import pypto.language as pl

M = pl.dynamic("M")
C, BLOCK = 128, 32


@pl.jit
def rms_scale(x: pl.Tensor[[M, C], pl.FP32], out: pl.Out[pl.Tensor[[M, C], pl.FP32]]):
    """out = x / sqrt(mean(x^2) + 1e-6), row by row, for any number of rows."""
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="rms_rows"):
        for i in pl.range((M + BLOCK - 1) // BLOCK):
            rows = min(BLOCK, M - i * BLOCK)
            t = pl.load(x, [i * BLOCK, 0], [BLOCK, C], valid_shape=[rows, C])
            tmp = pl.create_tile([BLOCK, C], pl.FP32)
            ms = pl.muls(pl.row_sum(pl.mul(t, t), tmp), 1.0 / C)
            y = pl.row_expand_mul(t, pl.rsqrt(pl.adds(ms, 1e-6)))
            pl.store(y, [i * BLOCK, 0], out)
    return out


def reference(x: np.ndarray) -> np.ndarray:
    z = x.astype(np.float64)
    return z / np.sqrt((z * z).mean(axis=1, keepdims=True) + 1e-6)


def run(sizes=(16, 40, 100)) -> list[tuple[int, float, int]]:
    """(rows, max relative error, simulated cycles) per size; one compile serves all."""
    rows = []
    for m in sizes:
        x = np.random.default_rng(m).standard_normal((m, C)).astype(np.float32)
        out = np.zeros_like(x)
        rms_scale(x, out)
        err = float(np.abs(out - reference(x)).max() / np.abs(reference(x)).max())
        rows.append((m, err, rms_scale.last_report.cycles))
    return rows


if __name__ == "__main__":
    ap = argparse.ArgumentParser(prog="dynamic_shape.py", description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--rows", type=int, nargs="+", default=[16, 40, 100], help="row counts to run (default 16 40 100)"
    )
    for m, err, cycles in run(ap.parse_args().rows):
        print(f"M = {m:4d}: max relative error {err:.1e}, {cycles} cycles")
    x = np.zeros((40, C), np.float32)
    print("one compile for every size:", rms_scale.compile(x, x) is rms_scale.compile(x[:16], x[:16]))
