"""Running a sweep's points: in this process, on the sweep's own process pool, or on any
``concurrent.futures.Executor`` (a Dask client's, say).

Two promises hold on every executor. Ctrl-C (any exception in the caller) cancels the points
not yet started and returns at once: the own pool's workers are killed, a foreign executor's
futures cancelled. A point whose worker process dies is a row with the error, and every other
point still gets its row: on the own pool the points the dead worker may have been running
are run again one at a time to find the one that kills its worker; on another executor (Dask)
a point whose worker died (``KilledWorker``: Dask's own retries exhausted) is run once more,
alone, after the others, and is a crash row only if its worker dies again. On Dask the sweep
waits on the client's own futures, never on the ``concurrent.futures`` wrappers of
``client.get_executor()``: a wrapper is never resolved when its point's result is lost with a
dying worker and the point's recomputation then dies too (the coroutine that would resolve it
raises instead), and a sweep waiting on it would hang.

The job every point shares (``_worker.Job``: the factory, the arguments, ...) is pickled once
and shipped once per worker, not once per point: the own pool's workers read it in their
initializer (from a file in the sweep's temporary folder), on Dask every point's task depends
on one task holding it (each worker fetches it once), and this process uses the object itself.
Only another kind of executor gets it with each point. ``Shipment.sent`` counts the bytes
shipped to the workers.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import pickle
import shutil
import signal
import tempfile
from collections.abc import Callable
from concurrent.futures import Executor, Future, ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
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


@dataclass
class Shipment:
    """A sweep's job as bytes, its points with their folders, and the bytes sent so far."""

    blob: bytes
    points: list[tuple[dict[str, Any], str]]
    sent: int = 0

    @property
    def key(self) -> str:
        return _worker.job_key(self.blob)

    def point_bytes(self, i: int) -> int:
        """What submitting point ``i`` pickles besides the job: its parameters and folder."""
        return len(pickle.dumps(self.points[i]))


def run_serial(job: _worker.Job, todo: list[tuple[dict[str, Any], str]], tick: Tick) -> list[Row]:
    """In this process: the job object itself, nothing pickled."""
    out = []
    for point, folder in todo:
        out.append(_worker.evaluate(job, point, folder))
        tick()
    return out


def _dask_client(executor: Executor) -> Any:
    """The Dask client behind ``client.get_executor()``, or None for another executor."""
    client = getattr(executor, "_client", None)
    return client if type(client).__name__ == "Client" and hasattr(client, "scatter") else None


def _dask_job(client: Any, ship: Shipment) -> Any:
    """The job's bytes as a Dask future that every point's task depends on: a worker fetches it
    once (from the client or a peer) and keeps it. It is a task's result rather than a
    ``client.scatter``-ed value because a scattered value has no lineage: when every worker
    holding it dies (points that kill their worker), the points waiting on it would be
    cancelled; a task's result is computed again."""
    return client.submit(_worker.shipped, ship.blob, key=f"pypto-sweep-job-{ship.key}", pure=False)


def run_foreign(executor: Executor, ship: Shipment, tick: Tick) -> list[Row]:
    """On the caller's executor; on any exception here every future is cancelled first."""
    futures: dict[Any, int] = {}
    out: list[Row] = [{} for _ in ship.points]
    client = _dask_client(executor)
    job: Any = ship.blob
    submit: Callable[..., Any] = executor.submit
    completed: Callable[[dict[Any, int]], Any] = as_completed
    if client is not None:  # once per worker: each point's task depends on the job's
        job = _dask_job(client, ship)
        ship.sent += len(ship.blob) * max(1, len(client.nthreads()))
        submit, completed = _dask_submit(executor, client), _dask_completed
    try:
        for i, (point, folder) in enumerate(ship.points):
            futures[submit(_worker.evaluate, job, point, folder)] = i
            ship.sent += ship.point_bytes(i) + (len(ship.blob) if client is None else 0)
        dead = []
        for fut in completed(futures):
            row, why = _outcome(fut)
            if why is None:
                out[futures[fut]] = row
                tick()
            else:
                dead.append((futures[fut], why))
        # Alone, after the others: a point that only shared a worker with one that killed it
        # (Dask gives up on every task a dying worker held) runs now; the culprit dies again.
        for i, why in dead:
            point, folder = ship.points[i]
            try:  # on Dask a new key (submits are impure): the first one holds the error
                fut = submit(_worker.evaluate, job, point, folder)
            except Exception as e:  # a broken pool refuses new work: the first death stands
                if type(e).__name__ not in _WORKER_DEATHS:
                    raise
                out[i] = crash_row(why)
            else:
                futures[fut] = i
                row, again = _outcome(fut)
                out[i] = crash_row(why) if again is not None else row
            tick()
    except BaseException:
        for fut in futures:
            fut.cancel()
        raise
    return out


def _dask_submit(executor: Executor, client: Any) -> Callable[..., Any]:
    """``client.submit`` with the options the caller gave ``client.get_executor(...)``
    (workers, resources, retries), every point a task of its own key."""
    options = {**getattr(executor, "_kwargs", {}), "pure": False}
    return lambda fn, *args: client.submit(fn, *args, **options)


def _dask_completed(futures: dict[Any, int]) -> Any:
    """The Dask futures as they finish; the iteration polls, so Ctrl-C interrupts it."""
    import distributed

    return distributed.as_completed(list(futures))


def _outcome(fut: Any) -> tuple[Row, str | None]:
    """``fut``'s row, or why its worker process died under it; any other error is raised.
    The result is asked for once: a Dask future's each ask fetches it from a worker."""
    try:
        return fut.result(), None
    except Exception as e:
        if type(e).__name__ not in _WORKER_DEATHS:
            raise
        return {}, f"{type(e).__name__}: {e}".splitlines()[0]


def run_pool(ship: Shipment, tick: Tick) -> list[Row]:
    """On a pool of spawned processes, one per CPU at most (see the module's promises)."""
    out: list[Row | None] = [None for _ in ship.points]
    markers = Path(tempfile.mkdtemp(prefix="pypto-sweep-"))
    try:
        todo = list(range(len(ship.points)))
        while todo:
            workers = min(len(todo), os.cpu_count() or 1)
            finished, suspects, _ = _round(ship, todo, workers, markers, out, tick)
            if not finished and not suspects:
                raise PyptoError(NO_MAIN_GUARD)  # the workers died before running anything
            for i in suspects:  # each alone: the one whose worker dies again is the culprit
                _run_alone(ship, i, markers, out, tick)
            todo = [i for i in todo if out[i] is None]
    finally:
        shutil.rmtree(markers, ignore_errors=True)
    return [row for row in out if row is not None]  # every point has its row: todo ran empty


def _run_alone(ship: Shipment, i: int, markers: Path, out: list[Row | None], tick: Tick) -> None:
    _, _, deaths = _round(ship, [i], 1, markers, out, tick)
    if out[i] is None:
        out[i] = crash_row(deaths.get(i, "it was killed"))
        tick()


def _round(
    ship: Shipment, todo: list[int], workers: int, markers: Path, out: list[Row | None], tick: Tick
) -> tuple[int, list[int], dict[int, str]]:
    """Runs ``todo`` on a fresh pool until it ends or breaks: (points finished, the broken
    points that had started, why their worker died when known)."""
    pool = ProcessPoolExecutor(
        workers,
        mp_context=multiprocessing.get_context("spawn"),  # a fork would copy the parent's threads mid-state
        initializer=_worker.pool_worker_init,
        # the job, read once per worker from a file (bytes in initargs would be piped to each
        # child while the pool starts it, slowing the submits below)
        initargs=(workers > 1, ship.key, str(_job_file(ship, markers))),
    )
    ship.sent += len(ship.blob) * workers
    futures: dict[Future, int] = {}
    finished, broken = 0, []
    try:
        key = ship.key
        for i in todo:
            point, folder = ship.points[i]
            try:
                futures[pool.submit(_worker.evaluate, key, point, folder, str(markers / str(i)))] = i
            except BrokenProcessPool:  # a worker died already: the rest wait for the next round
                break
            ship.sent += ship.point_bytes(i)
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


def _job_file(ship: Shipment, markers: Path) -> Path:
    path = markers / f"job-{ship.key}.bin"
    if not path.exists():
        path.write_bytes(ship.blob)
    return path


def _deaths(procs: list[Any], suspects: list[int]) -> dict[int, str]:
    """With one suspect and one dead worker, how that worker died."""
    codes = [p.exitcode for p in procs if p.exitcode not in (None, 0)]
    if len(suspects) != 1 or len(codes) != 1:
        return {}
    code = codes[0]
    if code < 0:
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
