"""pypto.tune benchmarks: one 16-point sweep of the tutorial's exp kernel (tile rows x depth) on
each executor, an empty kernel cache (cold) then the same sweep again (warm), and the best point each finds;
then the bytes each executor ships to its workers (the job every point shares, once per worker)
against pickling the job into every point (what a sweep shipped before).

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

from pypto.tune import _worker, sweep  # noqa: E402

SPACE = {"rows": [16, 32, 64, 128], "depth": [1, 2, 3, 4]}


def fresh_cache() -> None:
    """An empty kernel cache; set before an executor starts its workers (they inherit it)."""
    os.environ["PYPTO_CACHE_DIR"] = tempfile.mkdtemp(prefix="pypto-bench-")


SHIPPED: list[tuple[str, int]] = []


def timed(label: str, executor) -> None:
    a = tk.seed_input()
    sent = 0
    for phase in ("cold", "warm"):
        start = time.perf_counter()
        result = sweep(tk.exp_kernel, SPACE, (a, np.zeros_like(a)), executor=executor, check=tk.check)
        wall = time.perf_counter() - start
        best = result.best_row
        print(f"{label:<22}{phase:<6}{wall:>8.2f} s  {wall / len(result.rows) * 1e3:>8.0f} ms/point  "
              f"best rows={best['rows']} depth={best['depth']} ({best['cycles']} cycles)")  # fmt: skip
        sent = result.sent_bytes
    SHIPPED.append((label, sent))


def shipped_table(points: int) -> None:
    """Bytes to the workers: the job (factory, arguments, check) pickled into every point, as
    before, against once per worker."""
    a = tk.seed_input()
    job = len(_worker.dumps(_worker.Job(tk.exp_kernel, (a, np.zeros_like(a)), None, tk.check)))
    print(f"\nshipped to the workers per sweep (the job is {job / 1e6:.2f} MB; arguments "
          f"{2 * a.nbytes / 1e6:.2f} MB)")  # fmt: skip
    print(f"{'pickled into every point':<26}{job * points / 1e6:>8.2f} MB  ({points} x the job)")
    for label, sent in SHIPPED:
        print(f"{label:<26}{sent / 1e6:>8.2f} MB  ({job * points / max(sent, 1):.1f}x less)"
              if sent else f"{label:<26}{0:>8.2f} MB  (in this process: nothing pickled)")  # fmt: skip


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
        shipped_table(len(SPACE["rows"]) * len(SPACE["depth"]))
        return
    workers = os.cpu_count() or 1
    fresh_cache()
    with (
        LocalCluster(n_workers=workers, threads_per_worker=1, dashboard_address=None) as cl,
        Client(cl) as client,
    ):
        timed("dask LocalCluster", client.get_executor())
    shipped_table(len(SPACE["rows"]) * len(SPACE["depth"]))


if __name__ == "__main__":
    main()
