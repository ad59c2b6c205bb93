"""pypto.tune benchmarks: one 16-point sweep of the tutorial's exp kernel (tile rows x depth) on
each executor, an empty kernel cache (cold) then the same sweep again (warm), and the best point each finds.

Run: python benchmarks/bench_tune.py      (prints a table; never asserts on time)
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "fixtures"))

import numpy as np  # noqa: E402
import tune_kernels as tk  # noqa: E402

from pypto.tune import sweep  # noqa: E402

SPACE = {"rows": [16, 32, 64, 128], "depth": [1, 2, 3, 4]}


def fresh_cache() -> None:
    """An empty kernel cache; set before an executor starts its workers (they inherit it)."""
    os.environ["PYPTO_CACHE_DIR"] = tempfile.mkdtemp(prefix="pypto-bench-")


def timed(label: str, executor) -> None:
    a = tk.seed_input()
    for phase in ("cold", "warm"):
        start = time.perf_counter()
        result = sweep(tk.exp_kernel, SPACE, (a, np.zeros_like(a)), executor=executor, check=tk.check)
        wall = time.perf_counter() - start
        best = result.best_row
        print(f"{label:<22}{phase:<6}{wall:>8.2f} s  {wall / len(result.rows) * 1e3:>8.0f} ms/point  "
              f"best rows={best['rows']} depth={best['depth']} ({best['cycles']} cycles)")  # fmt: skip


def main() -> None:
    print(f"{len(SPACE['rows']) * len(SPACE['depth'])}-point sweep, {os.cpu_count()} CPUs")
    fresh_cache()
    timed("serial", "serial")
    fresh_cache()
    timed("process pool", None)
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        print("dask.distributed not installed: pip install '.[dask]'")
        return
    workers = os.cpu_count() or 1
    fresh_cache()
    with (
        LocalCluster(n_workers=workers, threads_per_worker=1, dashboard_address=None) as cl,
        Client(cl) as client,
    ):
        timed("dask LocalCluster", client.get_executor())


if __name__ == "__main__":
    main()
