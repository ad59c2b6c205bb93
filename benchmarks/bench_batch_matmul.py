"""A batched small GEMM (pl.batch_matmul over a pl.dynamic batch count, G matrices per
pl.spmd block): what bounds it, and that one compile serves every batch count.

Per batch count it prints the simulated cycles, each pipe's busy cycles on the busiest core,
the ratio of total cycles to the CUBE-bound limit (the most TMATMUL cycles any one core issues)
and to the MTE2-bound limit, and the kernels built (one for every count).

Run: python benchmarks/bench_batch_matmul.py      (never asserts)
"""

from __future__ import annotations

import os
import tempfile
import time
from collections import defaultdict

os.environ.setdefault("PYPTO_CACHE_DIR", tempfile.mkdtemp(prefix="pypto-bench-"))

import numpy as np  # noqa: E402

import pypto.language as pl  # noqa: E402
from pypto.report.run_report import PIPES  # noqa: E402

NB = pl.dynamic("NB")
M, K, N, G = 64, 128, 64, 2  # G matrices per block: one TMATMUL each


@pl.jit
def batched_gemm(
    a: pl.Tensor[[NB, M, K], pl.FP16],
    b: pl.Tensor[[NB, K, N], pl.FP16],
    out: pl.Out[pl.Tensor[[NB, M, N], pl.FP32]],
):
    for blk in pl.spmd(NB // G, name_hint="bgemm"):
        la = pl.move(
            pl.load(a, [blk * G, 0, 0], [G, M, K], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left
        )
        rb = pl.move(
            pl.load(b, [blk * G, 0, 0], [G, K, N], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right
        )
        pl.store(pl.batch_matmul(la, rb), [blk * G, 0, 0], out)
    return out


def bench(batches: int) -> None:
    rng = np.random.default_rng(batches)
    a = rng.uniform(-1, 1, (batches, M, K)).astype(np.float16)
    b = rng.uniform(-1, 1, (batches, K, N)).astype(np.float16)
    out = np.zeros((batches, M, N), np.float32)
    batched_gemm(a, b, out)
    report = batched_gemm.last_report
    ref = np.matmul(a.astype(np.float64), b.astype(np.float64))
    busy: dict[int, dict[str, int]] = defaultdict(lambda: dict.fromkeys(PIPES, 0))
    for t in report.tasks:
        for pipe, cycles in t.pipe_busy.items():
            busy[t.core][pipe] += cycles
    top = {p: max(core[p] for core in busy.values()) for p in PIPES}
    print(
        f"\n{batches} x [{M}, {K}] x [{K}, {N}] fp16 -> fp32: {len(report.tasks)} blocks on {len(busy)} cores"
    )
    print(f"  simulated cycles      {report.cycles:>8}   max abs error {np.abs(out - ref).max():.1e}")
    print("  busiest core, busy cycles per pipe: " + ", ".join(f"{p} {top[p]}" for p in PIPES if top[p]))
    print(
        f"  cycles / CUBE-bound   {report.cycles / top['CUBE']:>8.2f}   (CUBE-bound = {top['CUBE']} cycles)"
    )
    print(
        f"  cycles / MTE2-bound   {report.cycles / top['MTE2']:>8.2f}   (MTE2-bound = {top['MTE2']} cycles)"
    )


if __name__ == "__main__":
    for n in (8, 48, 96):
        bench(n)

    def operands(n: int) -> tuple:
        return (
            np.zeros((n, M, K), np.float16),
            np.zeros((n, K, N), np.float16),
            np.zeros((n, M, N), np.float32),
        )

    programs = {id(batched_gemm.compile(*operands(n))) for n in (8, 48, 96)}
    print(f"\nprograms compiled for the three batch counts: {len(programs)}")
    args = {n: operands(n) for n in (8, 48)}
    for label, seq in (("same count", [8] * 20), ("alternating counts (a plan each)", [8, 48] * 10)):
        t0 = time.perf_counter()
        for n in seq:
            batched_gemm(*args[n])
        print(f"warm call, {label}: {(time.perf_counter() - t0) / len(seq) * 1e3:.2f} ms (wall, host)")
