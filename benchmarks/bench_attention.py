"""FlashAttention forward as fused cluster kernels: simulated cycles, per-pipe busy of the AIC
and AIV cores, the ratio of the run to its CUBE-bound limit, and the simulator's own time.

Run: python benchmarks/bench_attention.py [--heads 24 --seq 2048 --dim 128] [--variants]
Targets: [24, 2048, 128] simulates in <= 2 s of wall time (the simulator's time to run the
kernel once it is compiled; the fastest of --repeat runs, since a shared host is noisy). The
run is also timed on one host thread (PYPTO_SIM_THREADS=1) to show what the data thread gives;
with it, CPU time exceeds wall time.

The CUBE-bound limit is the busiest AIC's CUBE busy cycles: no schedule of this kernel can
finish sooner, so total / limit says how much of the run the cube waits on the rest (the
vector softmax, the pipes between the cores, the loads).
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
import time
from pathlib import Path
from unittest import mock

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
import flash_attention as fa  # noqa: E402
from _common import best_of  # noqa: E402

from pypto.runtime import RunConfig  # noqa: E402

PIPES = ("MTE2", "MTE1", "CUBE", "VECTOR", "FIXPIPE", "MTE3", "SCALAR")


def by_kind(report) -> dict[str, dict[str, float]]:
    """Per core kind: the mean busy cycles of each pipe over the cores of that kind that ran."""
    out: dict[str, dict[str, float]] = {}
    for kind in ("AIC", "AIV"):
        tasks = [t for t in report.tasks if t.core_type == kind and t.cycles > 0]
        out[kind] = {
            p: float(np.mean([t.pipe_busy.get(p, 0) for t in tasks])) if tasks else 0.0 for p in PIPES
        }
    return out


def measure(
    heads: int, sq: int, skv: int, d: int, causal: bool = False, platform: str = "a2a3sim", repeat: int = 3
) -> None:
    br, bc = (64, 64) if causal else (64, 128)
    kernel = fa.make_attention(heads, sq, skv, d, br, bc, causal)
    q, k, v = fa.inputs(heads, sq, skv, d)
    mask, out = fa.causal_mask(br, bc), np.zeros((heads * sq, d), np.float32)
    cfg = RunConfig(platform=platform)
    kernel.compile(q, k, v, mask, out, config=cfg)
    runs = {threads: timed_runs(kernel, (q, k, v, mask, out), cfg, threads, repeat) for threads in ("2", "1")}
    rep = kernel.last_report
    err = float(np.abs(out - fa.reference(q, k, v, heads, causal)).max())
    label = "causal" if causal else "decode" if sq < skv else "forward"
    print(f"{label} [heads={heads}, Sq={sq}, Skv={skv}, D={d}] on {platform}, split UP_DOWN, Br={br} Bc={bc}")
    print(f"  simulated: {rep.cycles} cycles ({rep.cycles / rep.clock_hz * 1e6:.1f} us), "
          f"{len(rep.tasks)} core tasks, max |error| vs SDPA {err:.1e}")  # fmt: skip
    kinds = by_kind(rep)
    print("  pipe      AIC busy (mean)   AIV busy (mean)")
    for p in PIPES:
        print(f"  {p:<8} {kinds['AIC'][p]:>10.0f} {kinds['AIC'][p] / rep.cycles:>5.1%} "
              f"{kinds['AIV'][p]:>11.0f} {kinds['AIV'][p] / rep.cycles:>5.1%}")  # fmt: skip
    bound = max(t.pipe_busy.get("CUBE", 0) for t in rep.tasks if t.core_type == "AIC")
    print(f"  CUBE-bound limit {bound} cycles; total / limit = {rep.cycles / bound:.2f}")
    (wall, cpu), (wall1, cpu1) = runs["2"], runs["1"]
    print(f"  simulator: {wall:.2f} s wall (fastest of {repeat}), {cpu:.2f} s CPU per run, data thread on   "
          "target <= 2 s wall for [24, 2048, 128]")  # fmt: skip
    print(f"  one host thread (PYPTO_SIM_THREADS=1): {wall1:.2f} s wall, {cpu1:.2f} s CPU per run; "
          f"speed-up of the data thread {wall1 / wall:.2f}x")  # fmt: skip


def timed_runs(kernel, args, cfg, threads: str, repeat: int) -> tuple[float, float]:
    """(wall of the fastest, mean CPU) seconds of `repeat` runs with PYPTO_SIM_THREADS=`threads`."""
    with mock.patch.dict(os.environ, {"PYPTO_SIM_THREADS": threads}):
        cpu0 = time.process_time()
        wall = best_of(functools.partial(kernel, config=cfg), repeat, *args)
        return wall, (time.process_time() - cpu0) / repeat


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--heads", type=int, default=24)
    ap.add_argument("--seq", type=int, default=2048)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--platform", default="a2a3sim", help="a2a3sim (pipes through GM) or a5sim (on chip)")
    ap.add_argument("--variants", action="store_true", help="also the causal and decode shapes")
    ap.add_argument("--repeat", type=int, default=3, help="runs per setting; the fastest is shown")
    a = ap.parse_args()
    measure(a.heads, a.seq, a.seq, a.dim, platform=a.platform, repeat=a.repeat)
    if a.variants:
        measure(a.heads, a.seq, a.seq, a.dim, causal=True, platform=a.platform, repeat=a.repeat)
        measure(a.heads, 64, 4 * a.seq, a.dim, platform=a.platform, repeat=a.repeat)


if __name__ == "__main__":
    main()
