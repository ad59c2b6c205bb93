"""Isolated runs: the per-call cost of ``isolate=True`` (a forked worker process per launch).

Run: python benchmarks/bench_isolate.py      (prints numbers; never asserts on time)
Per kernel size: the median wall time of one call in-process and isolated, the difference
(the cost of isolation: fork, the result through a pipe, each output copied in and back once)
and the ratio.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from pathlib import Path

os.environ.setdefault("PYPTO_CACHE_DIR", tempfile.mkdtemp(prefix="pypto-bench-"))

import numpy as np  # noqa: E402

from pypto.kernel_build import KernelSource, build_kernel  # noqa: E402
from pypto.runtime import run_kernel_file  # noqa: E402

KERNEL = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "kernels" / "exp_single_buffer.cpp"


def median_ms(fn, n: int) -> float:
    fn()  # warm: loads the kernel, faults the pages in
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def fork_floor() -> None:
    """A bare fork + exit + wait of this process: the floor under any fork-per-call isolation."""
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)


def main() -> None:
    floor, load = median_ms(fork_floor, 30), os.getloadavg()[0]
    print(f"bare fork + exit + wait of this process: {floor:.2f} ms (load average {load:.1f})")
    so = build_kernel(KernelSource(name="exp_single_buffer", path=KERNEL), platform="a2a3sim")
    print("run_kernel_file(exp 64-row tiles), median of 30 calls:")
    for rows in (64, 4096, 65536):
        a = np.random.default_rng(0).standard_normal((rows, 128)).astype(np.float32)
        out = np.zeros_like(a)
        inproc = median_ms(lambda a=a, out=out: run_kernel_file(so, [a, out], outputs={1}, isolate=False), 30)
        iso = median_ms(lambda a=a, out=out: run_kernel_file(so, [a, out], outputs={1}, isolate=True), 30)
        mib = a.nbytes / 2**20
        print(
            f"  [{rows:>5}, 128] fp32 ({mib:5.2f} MiB out): in-process {inproc:7.2f} ms, "
            f"isolated {iso:7.2f} ms, isolation costs {iso - inproc:5.2f} ms per call ({iso / inproc:4.1f}x)"
        )


if __name__ == "__main__":
    main()
