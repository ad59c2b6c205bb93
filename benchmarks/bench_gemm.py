"""The tuned GEMM of examples/gemm.py: what bounds it, and how fast the simulator runs it.

Per size it prints the simulated cycles, each pipe's busy cycles on the busiest core, the
ratio of total cycles to the CUBE-bound limit (the most TMATMUL cycles any one core issues:
no schedule can beat it) and to the MTE2-bound limit likewise, and the simulator's wall time
for a warm run (kernel built, cache hit). A ratio near 1 for one pipe names the bound.

Run: python benchmarks/bench_gemm.py [sizes...]     (default: 1536 3072; never asserts)
Target: simulator wall time <= 1 s for 1536^3.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

os.environ.setdefault("PYPTO_CACHE_DIR", tempfile.mkdtemp(prefix="pypto-bench-"))

import numpy as np  # noqa: E402

from pypto.runtime.report import PIPES  # noqa: E402

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "gemm.py"


def load_example():
    spec = importlib.util.spec_from_file_location("gemm_example", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def per_core_busy(report) -> dict[int, dict[str, int]]:
    busy: dict[int, dict[str, int]] = defaultdict(lambda: dict.fromkeys(PIPES, 0))
    for t in report.tasks:
        for pipe, cycles in t.pipe_busy.items():
            busy[t.core][pipe] += cycles
    return busy


def bench(gemm, size: int) -> None:
    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, (size, size)).astype(np.float16)
    b = rng.uniform(-1, 1, (size, size)).astype(np.float16)
    c = np.zeros((size, size), np.float32)
    kernel = gemm.make_gemm(size, size, size)
    t0 = time.perf_counter()
    kernel(a, b, c)  # compile + build + run
    cold = time.perf_counter() - t0
    walls = []
    for _ in range(3):
        t0 = time.perf_counter()
        kernel(a, b, c)
        walls.append(time.perf_counter() - t0)
    report = kernel.last_report
    err = gemm.relative_error(c, gemm.reference(a, b)[0])
    busy = per_core_busy(report)
    top = {p: max(core[p] for core in busy.values()) for p in PIPES}
    print(f"\nGEMM {size}^3 fp16 -> fp32, {len(report.tasks)} tasks on {len(busy)} AIC cores")
    print(f"  simulated cycles      {report.cycles:>10}  ({report.cycles / report.clock_hz * 1e6:.1f} us)")
    print(f"  relative error        {err:>10.2e}")
    print("  busiest core, busy cycles per pipe:")
    for p in PIPES:
        print(f"    {p:<8}{top[p]:>12}  {top[p] / report.cycles:6.1%} of the run")
    print(
        f"  cycles / CUBE-bound   {report.cycles / top['CUBE']:>10.2f}   (CUBE-bound = {top['CUBE']} cycles)"
    )
    print(
        f"  cycles / MTE2-bound   {report.cycles / top['MTE2']:>10.2f}   (MTE2-bound = {top['MTE2']} cycles)"
    )
    print(f"  simulator wall time   {min(walls):>10.3f} s warm   ({cold:.2f} s with compile and build)")


def main(sizes: list[int]) -> None:
    gemm = load_example()
    for size in sizes:
        bench(gemm, size)


if __name__ == "__main__":
    main([int(s) for s in sys.argv[1:]] or [1536, 3072])
