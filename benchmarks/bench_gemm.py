"""The tuned GEMM of examples/gemm.py: what bounds it, and how fast the simulator runs it.

Per size it prints the simulated cycles, each pipe's busy cycles on the busiest core, the
ratio of total cycles to the CUBE-bound limit (the most TMATMUL cycles any one core issues:
no schedule can beat it) and to the MTE2-bound limit likewise, and the simulator's wall time
for a warm run (kernel built, cache hit). A ratio near 1 for one pipe names the bound.

Then the two forms of the same GEMM (examples/gemm.py): ``matmul`` / ``matmul_acc`` chosen
inside the pipelined K loops, and the first K block peeled out of them. They do the same
loads and matmuls; on a device they differ by about one L1 K block's latency (the loads of
one [128, 256] x [256, 256] L1 block, its first L1 -> L0 feed and its four matmuls, from the
platform table), which is the bound printed beside them.

Run: python benchmarks/bench_gemm.py [sizes...] [--big]   (default: 1536 3072; --big adds
6144, a few minutes; never asserts)
Target: simulator wall time <= 1 s for 1536^3.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

os.environ.setdefault("PYPTO_CACHE_DIR", tempfile.mkdtemp(prefix="pypto-bench-"))

import numpy as np  # noqa: E402

from pypto.report.run_report import PIPES  # noqa: E402

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


def forms(gemm, size: int) -> None:
    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, (size, size)).astype(np.float16)
    b = rng.uniform(-1, 1, (size, size)).astype(np.float16)
    ref = gemm.reference(a, b)[0]
    cycles = {}
    for name, make in (
        ("matmul / matmul_acc inside", gemm.make_gemm),
        ("first K block peeled", gemm.make_gemm_peeled),
    ):
        c = np.zeros((size, size), np.float32)
        kernel = make(size, size, size)
        kernel(a, b, c)
        cycles[name] = kernel.last_report.cycles
        print(f"  {name:<28}{cycles[name]:>10} cycles   relative error {gemm.relative_error(c, ref):.2e}")
    diff = abs(cycles["first K block peeled"] - cycles["matmul / matmul_acc inside"])
    bound = gemm.k_block_cycles()
    verdict = "within" if diff <= bound else "OVER"
    print(
        f"  difference {diff} cycles; one L1 K block = {bound} cycles: "
        f"{verdict} the bound ({diff / bound:.2f}x)"
    )


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sizes", nargs="*", type=int, default=[1536, 3072])
    ap.add_argument("--big", action="store_true", help="also 6144^3 (a few minutes)")
    args = ap.parse_args(argv)
    sizes = args.sizes + ([6144] if args.big else [])
    gemm = load_example()
    for size in sizes:
        bench(gemm, size)
    print("\nTwo forms of the same GEMM")
    for size in sizes:
        print(f" {size}^3:")
        forms(gemm, size)


if __name__ == "__main__":
    main()
