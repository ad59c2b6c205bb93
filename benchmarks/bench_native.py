"""Native core benchmarks: ISA op speed vs numpy, core-model throughput, kernel build/load.

Run: python benchmarks/bench_native.py      (prints a table; never asserts on time)
Targets: each op <= 2x numpy at 1 MiB of work; core-model recording >= 30 M instructions/s
with tiny tiles (per second of the run's thread CPU time, which a busy host's preemptions do not
inflate; the wall figure beside it), its memory flat in the instruction count when untraced;
cold kernel build
<= 300 ms; cache-hit load <= 5 ms.
"""

from __future__ import annotations

import os
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
os.environ.setdefault("PYPTO_CACHE_DIR", tempfile.mkdtemp(prefix="pypto-bench-"))

from _common import best_of  # noqa: E402

from pypto import _native  # noqa: E402
from pypto.kernel_build import KernelSource, build_kernel  # noqa: E402
from pypto.runtime import run_kernel_file  # noqa: E402

ROWS, COLS = 64, 128  # one 32 KiB fp32 tile; 32 reps = 1 MiB of work
REPS = 32
ADD, MUL, DIV = 0, 2, 3
EXP, LOG, SQRT, RECIP, RELU = 0, 1, 2, 3, 4


def op_table(so: Path) -> list[tuple[str, float, float]]:
    rng = np.random.default_rng(0)
    a = rng.uniform(0.5, 2, (ROWS, COLS)).astype(np.float32)
    b = rng.uniform(0.5, 2, (ROWS, COLS)).astype(np.float32)
    big_a = np.tile(a, (REPS, 1))  # 1 MiB
    big_b = np.tile(b, (REPS, 1))
    cases = [
        ("TADD", 0, ADD, np.float32, lambda: np.add(big_a, big_b)),
        ("TMUL", 0, MUL, np.float32, lambda: np.multiply(big_a, big_b)),
        ("TDIV", 0, DIV, np.float32, lambda: np.divide(big_a, big_b)),
        ("TEXP", 1, EXP, np.float32, lambda: np.exp(big_a)),
        ("TLOG", 1, LOG, np.float32, lambda: np.log(big_a)),
        ("TSQRT", 1, SQRT, np.float32, lambda: np.sqrt(big_a)),
        ("TRECIP", 1, RECIP, np.float32, lambda: np.reciprocal(big_a)),
        ("TRELU", 1, RELU, np.float32, lambda: np.maximum(big_a, 0)),
        ("TMULS", 2, MUL, np.float32, lambda: np.multiply(big_a, np.float32(1.5))),
        ("TCVT f32->f16", 3, 0, np.float16, lambda: big_a.astype(np.float16)),
        ("TROWSUM", 4, 0, np.float32, lambda: big_a.sum(axis=1)),
    ]
    rows = []
    for name, kind, op, out_dtype, ref in cases:
        out = np.zeros((ROWS, COLS), out_dtype)

        def run(reps, out=out, kind=kind, op=op):
            return lambda: run_kernel_file(so, [a, b, out, kind, op, reps], outputs={2}, isolate=False)

        ours = best_of(run(REPS), 7) - best_of(run(0), 7)
        rows.append((name, ours, best_of(ref, 7)))
    return rows


def model_throughput(so: Path, n: int = 2_000_000, repeat: int = 5) -> tuple[float, float]:
    """Instructions per second of wall time and of the run's thread CPU time, fastest of
    ``repeat`` runs each (tiny ops do their data work in place, on the run's thread)."""
    wall = cpu = float("inf")
    for _ in range(repeat):
        c0, w0 = time.thread_time(), time.perf_counter()
        run_kernel_file(so, [n], isolate=False)
        wall = min(wall, time.perf_counter() - w0)
        cpu = min(cpu, time.thread_time() - c0)
    return (n + 1) / wall, (n + 1) / cpu


def model_memory(so: Path) -> tuple[float, float]:
    """Peak RSS growth (MiB) of untraced runs of 1 M and 4 M instructions, each in a fresh
    process: flat when the model keeps O(1) state per instruction."""
    import subprocess
    import sys

    code = (
        "import resource, sys; from pypto.runtime import run_kernel_file as r; "
        "b = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss; "
        f"r({str(so)!r}, [int(sys.argv[1])], isolate=False); "
        "print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - b) / 1024)"
    )
    grow = []
    for n in (1_000_000, 4_000_000):
        out = subprocess.run(
            [sys.executable, "-c", code, str(n)], capture_output=True, text=True, check=True, cwd=HERE
        )
        grow.append(float(out.stdout.split()[-1]))
    return grow[0], grow[1]


def build_times() -> tuple[float, float]:
    src = (HERE / "kernels" / "tiny_loop.cpp").read_text()
    code = src + f"\n// nonce {uuid.uuid4().hex}\n"  # a source never seen: a cold build
    t0 = time.perf_counter()
    so = build_kernel(KernelSource(name="cold", code=code), platform="a2a3sim")
    cold = time.perf_counter() - t0
    t0 = time.perf_counter()
    so2 = build_kernel(KernelSource(name="cold", code=code), platform="a2a3sim")
    _native.load_kernel(str(so2))
    hit = time.perf_counter() - t0
    assert so == so2
    return cold, hit


def main() -> None:
    ops = build_kernel(
        KernelSource(name="bench_ops", path=HERE / "kernels" / "bench_ops.cpp"), platform="a2a3sim"
    )
    tiny = build_kernel(
        KernelSource(name="tiny_loop", path=HERE / "kernels" / "tiny_loop.cpp"), platform="a2a3sim"
    )
    print(f"ISA op speed, 1 MiB of fp32 work ({REPS} x [{ROWS}, {COLS}] tiles), best of 7")
    print(f"  {'op':<16}{'pypto (us)':>12}{'numpy (us)':>12}{'ratio':>8}   target <= 2.0")
    for name, ours, ref in op_table(ops):
        print(f"  {name:<16}{ours * 1e6:>12.1f}{ref * 1e6:>12.1f}{ours / ref:>8.2f}")
    wall_ips, cpu_ips = model_throughput(tiny)
    print(
        f"core model, tiny [1, 8] tiles: {cpu_ips / 1e6:.2f} M instructions/s of thread CPU "
        f"({wall_ips / 1e6:.2f} per wall second)   target >= 30"
    )
    small, large = model_memory(tiny)
    print(f"core model memory, untraced: +{small:.1f} MiB at 1 M, +{large:.1f} MiB at 4 M instructions")
    cold, hit = build_times()
    print(f"kernel build, cold: {cold * 1e3:.0f} ms   target <= 300")
    print(f"kernel load, cache hit: {hit * 1e3:.2f} ms   target <= 5")


if __name__ == "__main__":
    main()
