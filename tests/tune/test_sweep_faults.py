"""A sweep under faults: Ctrl-C cancels the points not yet started and returns at once (the
default process pool, Dask); a point that kills its worker process is a row with the error
and every other point keeps its row (the pool, Dask). Run in fresh interpreters: a Ctrl-C and
a dying worker are process-level events."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"

FACTORIES = """
import os, signal, time
from pathlib import Path
import numpy as np
import tune_kernels as tk
from pypto.tune import sweep

def args():
    a = tk.seed_input()
    return (a, np.zeros_like(a))

def slow(rows, depth):  # every point records its start, then takes long
    Path(f"started-{rows}-{depth}").write_text(str(os.getpid()))
    time.sleep(60)
    return tk.exp_kernel(rows, depth)

def deadly(rows, depth):  # the 64-row points kill their worker
    if rows == 64:
        os.kill(os.getpid(), signal.SIGKILL)
    return tk.exp_kernel(rows, depth)
"""

SLOW_SWEEP = """
from factories import *
if __name__ == "__main__":
    EXECUTOR
    sweep(slow, {"rows": [32, 64, 128, 256], "depth": [1, 2]}, args(), executor=executor)
"""

DEADLY_SWEEP = """
from factories import *
if __name__ == "__main__":
    EXECUTOR
    space = {"rows": [32, 64, 128], "depth": [1, 2]}
    result = sweep(deadly, space, args(), executor=executor, check=tk.check)
    for row in result.rows:
        print(row["rows"], row["depth"], row["cycles"] is not None, row["error"])
"""

POOL = "executor = None"
# A LocalCluster closes a worker slot for good when no worker of that name is back within
# `lost-worker-timeout` (15 s) of a death, and the scheduler retries a task whose worker died
# (`allowed-failures`, 3) before its KilledWorker: each retry kills a worker again. With no
# retries a deadly point kills two workers (its run, then pypto's run alone) instead of five,
# and a slow restart cannot leave the cluster without workers.
DASK = (
    "import dask, distributed\n"
    "    dask.config.set({'distributed.deploy.lost-worker-timeout': '600s',"
    " 'distributed.scheduler.allowed-failures': 0})\n"
    "    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,"
    " dashboard_address=None)\n"
    "    executor = distributed.Client(cluster).get_executor()"
)


def script(tmp_path: Path, body: str, executor: str) -> list[str]:
    (tmp_path / "factories.py").write_text(FACTORIES)
    (tmp_path / "main.py").write_text(body.replace("EXECUTOR", executor))
    return [sys.executable, "main.py"]


def env(tmp_path: Path) -> dict[str, str]:
    return {
        **os.environ,
        "SKBUILD_EDITABLE_VERBOSE": "0",
        "PYTHONPATH": os.pathsep.join([str(tmp_path), str(FIXTURES)]),
        "PYPTO_CACHE_DIR": str(tmp_path / "cache"),
    }


def executors() -> list:
    import importlib.util

    missing = importlib.util.find_spec("distributed") is None
    skip = pytest.mark.skipif(missing, reason="dask.distributed is not installed")
    return [pytest.param(POOL, id="pool"), pytest.param(DASK, id="dask", marks=skip)]


@pytest.mark.parametrize("executor", executors())
def test_ctrl_c_cancels_the_queued_points_and_returns(tmp_path, executor):
    child = subprocess.Popen(script(tmp_path, SLOW_SWEEP, executor), cwd=tmp_path, env=env(tmp_path),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    deadline = time.monotonic() + 180
    while not list(tmp_path.glob("started-*")):
        assert time.monotonic() < deadline and child.poll() is None, child.communicate()
        time.sleep(0.05)
    time.sleep(0.5)  # every worker has picked a point by now
    child.send_signal(signal.SIGINT)
    sent = time.monotonic()
    _, err = child.communicate(timeout=60)
    latency = time.monotonic() - sent
    assert "KeyboardInterrupt" in err and latency < 20, (latency, err[-2000:])  # not the 60 s a point sleeps
    started = list(tmp_path.glob("started-*"))
    assert 1 <= len(started) <= 2, "the queued points never started (2 workers)"
    time.sleep(1)
    if executor == POOL:  # the pool's workers were killed; Dask's cluster is the user's to close
        for f in started:
            assert not Path(f"/proc/{f.read_text()}").exists(), "a worker outlived the sweep"


@pytest.mark.parametrize("executor", executors())
def test_a_point_that_kills_its_worker_is_a_row_and_the_others_survive(tmp_path, executor):
    done = subprocess.run(script(tmp_path, DEADLY_SWEEP, executor), cwd=tmp_path, env=env(tmp_path),
                          capture_output=True, text=True, timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    rows = [line.split(" ", 3) for line in done.stdout.splitlines()]
    assert [(r[0], r[1], r[2]) for r in rows] == [
        ("32", "1", "True"), ("32", "2", "True"), ("64", "1", "False"),
        ("64", "2", "False"), ("128", "1", "True"), ("128", "2", "True"),
    ]  # fmt: skip
    for r in rows:
        if r[0] == "64":
            assert r[3].startswith("KernelCrashError: the worker process running this point died")
            assert "__main__" not in r[3]
    if executor == POOL:
        assert "killed by SIGKILL" in rows[2][3]


def test_a_users_own_process_pool_broken_by_a_point_still_gives_every_row(tmp_path):
    """A caller's ProcessPoolExecutor is broken for good by a worker's death (it refuses new
    work): every point still gets a row, the deadly ones a crash row, and the sweep returns."""
    own_pool = "import concurrent.futures\n    executor = concurrent.futures.ProcessPoolExecutor(2)"
    done = subprocess.run(script(tmp_path, DEADLY_SWEEP, own_pool), cwd=tmp_path, env=env(tmp_path),
                          capture_output=True, text=True, timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    rows = [line.split(" ", 3) for line in done.stdout.splitlines()]
    assert [(r[0], r[1]) for r in rows] == [(str(r), str(d)) for r in (32, 64, 128) for d in (1, 2)]
    assert all(r[2] == "False" and r[3].startswith("KernelCrashError") for r in rows if r[0] == "64")
