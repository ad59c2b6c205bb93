"""Running a sweep's points: in this process, on the sweep's own process pool, or on any
``concurrent.futures.Executor`` (a Dask client's, say).

Two promises hold on every executor. Ctrl-C (any exception in the caller) cancels the points
not yet started and returns at once: the own pool's workers are killed, a foreign executor's
futures cancelled. A point whose worker process dies is a row with the error, and every other
point still gets its row: on the own pool the points the dead worker may have been running
are run again one at a time to find the one that kills its worker; on Dask a ``KilledWorker``
(Dask's own retries exhausted) is that point's row.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import shutil
import tempfile
from collections.abc import Callable
from concurrent.futures import Executor, Future, ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

from pypto.errors import PyptoError
from pypto.tune import _worker

Row = dict[str, Any]
Tick = Callable[[], None]

NO_MAIN_GUARD = (
    "the sweep's worker processes could not start. Workers are spawned and import your "
    "__main__ module again: a script that calls sweep() at top level must do so under "
    "`if __name__ == '__main__':` (or pass executor='serial')"
)
# Failures of the executor rather than of the point: the row says so, the sweep goes on.
_WORKER_DEATHS = ("KilledWorker", "BrokenProcessPool", "BrokenExecutor")


def crash_row(why: str) -> Row:
    return {"cycles": None, "error": f"KernelCrashError: the worker process running this point died ({why})"}


def run_serial(payloads: list[bytes], tick: Tick) -> list[Row]:
    out = []
    for p in payloads:
        out.append(_worker.evaluate(p))
        tick()
    return out


def run_foreign(executor: Executor, payloads: list[bytes], tick: Tick) -> list[Row]:
    """On the caller's executor; on any exception here every future is cancelled first."""
    futures: dict[Future, int] = {}
    out: list[Row] = [{} for _ in payloads]
    try:
        for i, p in enumerate(payloads):
            futures[executor.submit(_worker.evaluate, p)] = i
        for fut in as_completed(futures):
            try:
                out[futures[fut]] = fut.result()
            except Exception as e:
                if type(e).__name__ not in _WORKER_DEATHS:
                    raise
                out[futures[fut]] = crash_row(f"{type(e).__name__}: {e}".splitlines()[0])
            tick()
    except BaseException:
        for fut in futures:
            fut.cancel()
        raise
    return out


def run_pool(payloads: list[bytes], tick: Tick) -> list[Row]:
    """On a pool of spawned processes, one per CPU at most (see the module's promises)."""
    out: list[Row | None] = [None for _ in payloads]
    markers = Path(tempfile.mkdtemp(prefix="pypto-sweep-"))
    try:
        todo = list(range(len(payloads)))
        while todo:
            workers = min(len(todo), os.cpu_count() or 1)
            finished, suspects, _ = _round(payloads, todo, workers, markers, out, tick)
            if not finished and not suspects:
                raise PyptoError(NO_MAIN_GUARD)  # the workers died before running anything
            for i in suspects:  # each alone: the one whose worker dies again is the culprit
                _run_alone(payloads, i, markers, out, tick)
            todo = [i for i in todo if out[i] is None]
    finally:
        shutil.rmtree(markers, ignore_errors=True)
    return out  # type: ignore[return-value]


def _run_alone(payloads: list[bytes], i: int, markers: Path, out: list[Row | None], tick: Tick) -> None:
    _, _, deaths = _round(payloads, [i], 1, markers, out, tick)
    if out[i] is None:
        out[i] = crash_row(deaths.get(i, "it was killed"))
        tick()


def _round(
    payloads: list[bytes], todo: list[int], workers: int, markers: Path, out: list[Row | None], tick: Tick
) -> tuple[int, list[int], dict[int, str]]:
    """Runs ``todo`` on a fresh pool until it ends or breaks: (points finished, the broken
    points that had started, why their worker died when known)."""
    pool = ProcessPoolExecutor(
        workers,
        mp_context=multiprocessing.get_context("spawn"),  # a fork would copy the parent's threads mid-state
        initializer=_worker.pool_worker_init,
        initargs=(workers > 1,),
    )
    futures: dict[Future, int] = {}
    finished, broken = 0, []
    try:
        for i in todo:
            futures[pool.submit(_worker.evaluate, payloads[i], str(markers / str(i)))] = i
        procs = list(getattr(pool, "_processes", {}).values())  # for the dead one's exit code
        for fut in as_completed(futures):
            try:
                out[futures[fut]] = fut.result()
            except BrokenProcessPool:
                broken.append(futures[fut])
                continue
            finished += 1
            tick()
    except BaseException:
        _stop(pool, futures)
        raise
    pool.shutdown(wait=True)
    suspects = [i for i in broken if (markers / str(i)).exists()]
    for i in suspects:
        (markers / str(i)).unlink(missing_ok=True)
    return finished, suspects, _deaths(procs, suspects) if broken else {}


def _deaths(procs: list[Any], suspects: list[int]) -> dict[int, str]:
    """With one suspect and one dead worker, how that worker died."""
    codes = [p.exitcode for p in procs if p.exitcode not in (None, 0)]
    if len(suspects) != 1 or len(codes) != 1:
        return {}
    code = codes[0]
    if code < 0:
        import signal

        with contextlib.suppress(ValueError):
            return {suspects[0]: f"killed by {signal.Signals(-code).name}"}
    return {suspects[0]: f"exit code {code}"}


def _stop(pool: ProcessPoolExecutor, futures: dict[Future, int]) -> None:
    """Ctrl-C or another error in the caller: no queued point starts, the running ones die."""
    for fut in futures:
        fut.cancel()
    kill = getattr(pool, "kill_workers", None)  # Python 3.14
    if kill is not None:
        kill()
    else:
        for proc in list(getattr(pool, "_processes", {}).values()):
            with contextlib.suppress(OSError):
                proc.kill()
    pool.shutdown(wait=False, cancel_futures=True)
