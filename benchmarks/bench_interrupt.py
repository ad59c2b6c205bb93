"""Ctrl-C latency of a sweep: from SIGINT to the process's exit, with the queue still full.

Run: python benchmarks/bench_interrupt.py      (prints numbers; never asserts on time)
A sweep of 8 points, each sleeping 60 s in its factory, runs on the default process pool and
on a Dask LocalCluster (when dask.distributed is installed); once its workers are busy the
script gets SIGINT. Printed per executor: the seconds until ``sweep`` raised KeyboardInterrupt
and until the process exited (with Dask, exiting includes closing the LocalCluster, whose busy
workers the nanny stops), and how many points had started (the rest were cancelled queued).
"""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures"
MAIN = """
import os, time
from pathlib import Path
import numpy as np
import tune_kernels as tk
from pypto.tune import sweep

def slow(rows, depth):
    Path(f"started-{rows}-{depth}").touch()
    time.sleep(60)
    return tk.exp_kernel(rows, depth)

if __name__ == "__main__":
    EXECUTOR
    a = tk.seed_input()
    try:
        sweep(slow, {"rows": [32, 64, 128, 256], "depth": [1, 2]}, (a, np.zeros_like(a)), executor=executor)
    except KeyboardInterrupt:
        Path("returned").write_text(repr(time.time()))
"""
EXECUTORS = {
    "process pool": "executor = None",
    "dask": "import distributed\n    executor = distributed.Client(distributed.LocalCluster(n_workers=2, "
    "threads_per_worker=1, dashboard_address=None)).get_executor()",
}


def measure(executor: str) -> tuple[float, float, int]:
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "main.py").write_text(MAIN.replace("EXECUTOR", executor))
        env = {**os.environ, "SKBUILD_EDITABLE_VERBOSE": "0", "PYTHONPATH": str(FIXTURES)}
        child = subprocess.Popen([sys.executable, "main.py"], cwd=folder, env=env, stderr=subprocess.DEVNULL)
        while not list(Path(folder).glob("started-*")):
            time.sleep(0.02)
        time.sleep(0.5)
        child.send_signal(signal.SIGINT)
        sent, sent_wall = time.perf_counter(), time.time()
        child.wait()
        exited = time.perf_counter() - sent
        returned = float((Path(folder) / "returned").read_text()) - sent_wall
        return returned, exited, len(list(Path(folder).glob("started-*")))


def main() -> None:
    print(f"{'executor':<14}{'sweep raised (s)':>18}{'process exited (s)':>20}{'points started':>16}  of 8")
    for name, executor in EXECUTORS.items():
        if name == "dask" and importlib.util.find_spec("distributed") is None:
            continue
        returned, exited, started = measure(executor)
        print(f"{name:<14}{returned:>18.3f}{exited:>20.3f}{started:>16}")


if __name__ == "__main__":
    main()
