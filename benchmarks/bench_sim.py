"""Functional simulation against the host's compute limit: one line per real kernel.

Per workload it prints the simulator's wall time for a warm run (kernel compiled, fastest of
--repeat), the BLAS bound beside it and their ratio, then how the run's host CPU time splits
between the simulator's two sides (thread CPU time, so a busy host's preemptions do not count):

- BLAS bound: the same matmul FLOPs as plain numpy fp32 matmuls (numpy's BLAS on every core
  of the host, fastest of --repeat) in the shapes BLAS likes best — a whole head's Q K^T and
  P V for FlashAttention, one N^3 product for the GEMM and for the int8 GEMM (its integer
  products as fp32 ones), one [1, K] x [K, N] product for the gemv. The simulator does those
  FLOPs in fp32 too (fp16 and int8 operands widened), so no simulator of the kernel can beat
  this time on this host.
- timing: the run's thread's own work — the timing model, the cores' control flow, operand
  checks and the few ops done in place — without its spinning for the data thread.
- data: the queued data work (matmuls, copies, vector math) on the data thread, plus the
  pieces of it the run's thread took over while it would otherwise have waited.
- timing share: timing / (timing + data). The two sides overlap, so on two otherwise idle
  cores the run needs at least max(timing, (timing + data) / 2) — printed as "2-core floor";
  the wall approaches it on a quiet host.

First, one line per matmul the workloads issue (their tile shapes, then the column pieces the
simulator splits each into), then two narrower tiles (16 and 48 columns): the simulator's fp32
kernel on one host core (the form this CPU runs, on operands widened from fp16) against
numpy's sgemm of the same shape on one BLAS thread, both in GFLOP per second of process CPU
time, each timed Python call a batch of the same matmul (TILE_BATCH) so the call's own
microseconds do not count — the per-core rate the
functional work can reach in cache, and BLAS's on the same tile.

After the FlashAttention line, its per-head cost at 24 heads against 2 (the same work per
head; 24 clusters' buffers and K/V share the host's caches) and the 24-head time at the 2-head
rate.

Run: python benchmarks/bench_sim.py [--repeat 3] [--only kernel|fa|gemm|int8|gemv]
Targets: FlashAttention forward [24, 2048, 128] <= 0.6 s wall; the 3072^3 GEMM <= 0.5 s.
The host is shared in CI and development: read the wall figures as best-of, and the busy
shares as the split of work between the threads. Never asserts.
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples"))
import flash_attention as fa  # noqa: E402
from _common import best_of, cpu_split, split_text  # noqa: E402

from pypto.runtime import RunConfig  # noqa: E402


def load_gemm():
    spec = importlib.util.spec_from_file_location("gemm_example", ROOT / "examples" / "gemm.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def timed(run, repeat: int) -> tuple[float, dict[str, float]]:
    """(wall of the fastest run, that run's CPU split: _common.cpu_split)."""
    return min((cpu_split(run) for _ in range(repeat)), key=lambda r: r[0])


def line(name: str, gflop: float, wall: float, blas: float, split: dict[str, float]) -> None:
    print(
        f"{name:<34} {wall:6.3f} s wall  BLAS bound {blas:6.3f} s ({gflop / blas:5.1f} GFLOP/s)  "
        f"ratio {wall / blas:5.2f}x | {split_text(split)}"
    )


# [m, k, n] of one matmul: FlashAttention's Q K^T and P V blocks, the GEMM's base block; then
# the column pieces the simulator runs them in (a quarter of the columns each, so the run's
# thread can take some: chip/isa/cube.cpp), which the kernel sees one at a time; then two
# tiles narrower than the kernel's 2-vector blocks (a user's 16- or 48-column tile).
TILE_SHAPES = ((64, 128, 128), (128, 64, 256), (64, 128, 32), (128, 64, 64), (64, 128, 16), (64, 128, 48))


def cpu_rate(fn, flop: float, calls: int = 200, rounds: int = 5) -> float:
    """GFLOP per process-CPU second of ``fn``, best of ``rounds`` batches of ``calls``."""
    best = float("inf")
    for _ in range(rounds):
        t0 = time.process_time()
        for _ in range(calls):
            fn()
        best = min(best, (time.process_time() - t0) / calls)
    return flop / best / 1e9


# Matmuls per timed call: one Python call costs microseconds, as long as the kernel on a
# FlashAttention piece, so each call runs a batch — the kernel in a native loop, BLAS over a
# stack of the same tile (its operands read in place, its outputs one tile apart).
TILE_BATCH = 32


def tile_kernel(m: int, k: int, n: int) -> None:
    from pypto import _native_testing

    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, (m, k)).astype(np.float16).astype(np.float32)
    b = rng.uniform(-1, 1, (k, n)).astype(np.float16).astype(np.float32)
    c = np.zeros((m, n), np.float32)
    form = _native_testing.matmul_f32_forms()[0]
    flop = 2 * m * k * n * TILE_BATCH
    ours = cpu_rate(
        lambda: _native_testing.matmul_f32_form(
            form, a, b, c, accumulate=True, exact_products=True, repeat=TILE_BATCH
        ),
        flop,
        calls=20,
    )
    stack_a = np.broadcast_to(a, (TILE_BATCH, m, k))
    stack_b = np.broadcast_to(b, (TILE_BATCH, k, n))
    stack_c = np.zeros((TILE_BATCH, m, n), np.float32)
    blas = cpu_rate(lambda: np.matmul(stack_a, stack_b, out=stack_c), flop, calls=20)
    print(
        f"matmul tile [{m}, {k}] x [{k}, {n}] ({form}): {ours:6.1f} GFLOP/s per core, "
        f"numpy sgemm {blas:6.1f} GFLOP/s ({ours / blas:4.2f}x)"
    )


def tile_kernels() -> None:
    """The tile lines, with BLAS on one thread: in a child process when this one's BLAS may
    use more (the thread count is fixed when numpy loads it)."""
    if os.environ.get("OPENBLAS_NUM_THREADS") == "1":
        for shape in TILE_SHAPES:
            tile_kernel(*shape)
        return
    env = os.environ | {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    subprocess.run([sys.executable, __file__, "--only", "kernel"], env=env, check=True)


def attention_run(heads: int, seq: int, dim: int) -> tuple[functools.partial, tuple]:
    """A warm FlashAttention call over ``heads`` heads (compiled, built and run once), and its
    arrays."""
    kernel = fa.make_attention(heads, seq, seq, dim, 64, 128, False)
    q, k, v = fa.inputs(heads, seq, seq, dim)
    mask, out = fa.causal_mask(64, 128), np.zeros((heads * seq, dim), np.float32)
    cfg = RunConfig(platform="a2a3sim")
    args = (q, k, v, mask, out)
    kernel(*args, config=cfg)  # compile, build, first run
    return functools.partial(kernel, *args, config=cfg), args


def flash_attention(repeat: int, heads: int = 24, seq: int = 2048, dim: int = 128) -> None:
    """The FlashAttention line, then the same per-head work at 2 heads: one cluster's work is
    the same at any head count, but 24 clusters' on-chip buffers and K/V stream through the
    host's caches together, so a head costs more at 24 than at 2 — the per-head figures and
    the 24-head time at the 2-head rate show that share of the wall."""
    call, (q, k, v, _, _) = attention_run(heads, seq, dim)
    wall, t = timed(call, repeat)
    qh = q.astype(np.float32).reshape(heads, seq, dim)
    kt = np.ascontiguousarray(k.astype(np.float32).reshape(heads, seq, dim).transpose(0, 2, 1))
    vh = v.astype(np.float32).reshape(heads, seq, dim)
    p = np.empty((seq, seq), np.float32)
    pv = np.empty((seq, dim), np.float32)

    def blas() -> None:
        for h in range(heads):
            np.matmul(qh[h], kt[h], out=p)
            np.matmul(p, vh[h], out=pv)

    gflop = 2 * 2 * heads * seq * seq * dim / 1e9
    line(f"FlashAttention fwd [{heads}, {seq}, {dim}]", gflop, wall, best_of(blas, repeat), t)
    few = 2
    few_wall, few_split = timed(attention_run(few, seq, dim)[0], 4 * repeat)
    per, few_per = wall / heads, few_wall / few
    print(
        f"  per head: {per * 1e3:.1f} ms at {heads} heads, {few_per * 1e3:.1f} ms at {few} "
        f"({per / few_per:.2f}x; timing {t['timing'] / heads * 1e3:.1f} vs "
        f"{few_split['timing'] / few * 1e3:.1f} ms, data {t['data'] / heads * 1e3:.1f} vs "
        f"{few_split['data'] / few * 1e3:.1f} ms); {heads} heads at the {few}-head rate: "
        f"{few_per * heads:.3f} s"
    )


def gemm(repeat: int, size: int = 3072) -> None:
    g = load_gemm()
    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, (size, size)).astype(np.float16)
    b = rng.uniform(-1, 1, (size, size)).astype(np.float16)
    c = np.zeros((size, size), np.float32)
    kernel = g.make_gemm(size, size, size)
    kernel(a, b, c)
    wall, t = timed(functools.partial(kernel, a, b, c), repeat)
    a32, b32, c32 = a.astype(np.float32), b.astype(np.float32), np.empty_like(c)
    blas = best_of(functools.partial(np.matmul, a32, b32, out=c32), repeat)
    line(f"GEMM {size}^3 fp16 -> fp32", 2 * size**3 / 1e9, wall, blas, t)


def int8_gemm(repeat: int, size: int = 1024, tm: int = 128, tk: int = 256) -> None:
    """A W8A8 GEMM at tensor level (int8 inputs, INT32 accumulator), against sgemm of the
    same shape in fp32: the cube's integer sums run on the fp32 kernel, exactly."""
    import pypto.language as pl

    @pl.jit
    def qgemm(x: pl.Tensor, w: pl.Tensor, out: pl.Out[pl.Tensor]):
        for i in pl.parallel(0, size // tm):
            for j in pl.parallel(0, size // tm):
                with pl.at(level=pl.Level.CORE_GROUP, name_hint="qgemm"):
                    r0, c0 = i * tm, j * tm
                    acc = pl.matmul(x[r0 : r0 + tm, 0:tk], w[0:tk, c0 : c0 + tm], out_dtype=pl.INT32)
                    for kk in pl.range(1, size // tk):
                        k0 = kk * tk
                        acc = pl.matmul_acc(acc, x[r0 : r0 + tm, k0 : k0 + tk], w[k0 : k0 + tk, c0 : c0 + tm])
                    out = pl.assemble(out, acc, [i * tm, j * tm])
        return out

    rng = np.random.default_rng(0)
    x, w = (rng.integers(-128, 128, (size, size)).astype(np.int8) for _ in range(2))
    out = np.zeros((size, size), np.int32)
    qgemm(x, w, out)
    exact = np.array_equal(out, x.astype(np.int64) @ w.astype(np.int64))
    wall, t = timed(functools.partial(qgemm, x, w, out), repeat)
    x32, w32 = x.astype(np.float32), w.astype(np.float32)
    blas = best_of(functools.partial(np.matmul, x32, w32, out=np.empty((size, size), np.float32)), repeat)
    line(
        f"GEMM {size}^3 int8 -> int32 ({'exact' if exact else 'NOT exact'})", 2 * size**3 / 1e9, wall, blas, t
    )


def gemv(repeat: int, k: int = 4096, n: int = 4096, tk: int = 256, tn: int = 128) -> None:
    """A decode step's projection, [1, k] x [k, n] fp16, as pl.gemv tiles (M = 1), against
    sgemv of the same shape in fp32."""
    import pypto.language as pl

    @pl.jit
    def proj(x: pl.Tensor, w: pl.Tensor, out: pl.Out[pl.Tensor]):
        for j in pl.parallel(0, n // tn):
            with pl.at(level=pl.Level.CORE_GROUP, name_hint="proj"):
                lv = pl.move(pl.load(x, [0, 0], [1, tk], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
                rb = pl.move(
                    pl.load(w, [0, j * tn], [tk, tn], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right
                )
                acc = pl.gemv(lv, rb)
                for kk in pl.range(1, k // tk):
                    xv = pl.load(x, [0, kk * tk], [1, tk], target_memory=pl.Mem.Mat)
                    wt = pl.load(w, [kk * tk, j * tn], [tk, tn], target_memory=pl.Mem.Mat)
                    acc = pl.gemv_acc(
                        acc, pl.move(xv, target_memory=pl.Mem.Left), pl.move(wt, target_memory=pl.Mem.Right)
                    )
                pl.store(acc, [0, j * tn], out)
        return out

    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, (1, k)).astype(np.float16)
    w = rng.uniform(-1, 1, (k, n)).astype(np.float16)
    out = np.zeros((1, n), np.float32)
    proj(x, w, out)
    wall, t = timed(functools.partial(proj, x, w, out), repeat)
    x32, w32 = x.astype(np.float32), w.astype(np.float32)
    blas = best_of(functools.partial(np.matmul, x32, w32, out=np.empty((1, n), np.float32)), repeat)
    line(f"gemv [1, {k}] x [{k}, {n}] fp16", 2 * k * n / 1e9, wall, blas, t)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3, help="runs per figure; the fastest is shown")
    ap.add_argument("--only", choices=("kernel", "fa", "gemm", "int8", "gemv"), help="one section")
    a = ap.parse_args(argv)
    if a.only in (None, "kernel"):
        tile_kernels()
    if a.only in (None, "fa"):
        flash_attention(a.repeat)
    if a.only in (None, "gemm"):
        gemm(a.repeat)
    if a.only in (None, "int8"):
        int8_gemm(a.repeat)
    if a.only in (None, "gemv"):
        gemv(a.repeat)


if __name__ == "__main__":
    main()
