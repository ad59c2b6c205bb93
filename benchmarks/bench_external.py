"""external_source kernels: cold build and warm (cache-hit) load of a hand-written kernel.

Run: python benchmarks/bench_external.py      (prints numbers; never asserts on time)
Targets: cold build <= 0.5 s for the example kernel, warm <= 5 ms to load.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

os.environ["PYPTO_CACHE_DIR"] = tempfile.mkdtemp(prefix="pypto-bench-")

import numpy as np  # noqa: E402

from pypto.kernel_build import KernelSource, build_kernel  # noqa: E402

KERNELS = Path(__file__).resolve().parents[1] / "tests" / "e2e" / "kernels"


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="pypto-ext-"))
    shutil.copy(KERNELS / "my_kernel.cpp", work / "my_kernel.cpp")
    src = KernelSource(name="my_kernel", path=work / "my_kernel.cpp")
    t0 = time.perf_counter()
    so = build_kernel(src, platform="a2a3sim")
    cold = time.perf_counter() - t0
    hits = []
    for _ in range(20):
        t0 = time.perf_counter()
        assert build_kernel(src, platform="a2a3sim") == so
        hits.append(time.perf_counter() - t0)
    (work / "my_kernel.cpp").write_text((work / "my_kernel.cpp").read_text() + "\n// edited\n")
    t0 = time.perf_counter()
    rebuilt = build_kernel(src, platform="a2a3sim")
    edit = time.perf_counter() - t0
    assert rebuilt != so
    print(
        f"external kernel my_kernel.cpp: cold build {cold * 1e3:.0f} ms (target <= 500), "
        f"cache hit {np.median(hits) * 1e3:.2f} ms (target <= 5), rebuild after edit {edit * 1e3:.0f} ms"
    )


if __name__ == "__main__":
    main()
