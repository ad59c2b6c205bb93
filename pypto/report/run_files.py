"""The files of a traced run (``RunConfig(trace=True)``), written at once.

``<output_dir>/trace/``: each launch's ``OPPROF_*/simulator/visualize_data.bin``
(:mod:`pypto.report.trace`) and the whole-run ``run.pftrace`` (:mod:`pypto.report.perfetto`);
``<output_dir>/report/``: ``records.npz`` (:mod:`pypto.report.records_file`) and, once the
launches' files are named, ``run.json``.

The three writers read the same record tables and write different files, so they run on
threads of their own: most of their work is native code that releases the GIL (formatting,
encoding, narrowing, the kernel's copies into the page cache), and on a machine with idle
cores the run waits for the slowest writer rather than for their sum. The CPU they spend is
the same either way. ``run.json``'s hot-spot table (a pass over every record, kept by the
report) is summed on a thread of its own too, so all that waits for the launches' names is
writing the JSON. Each writer's span and CPU are returned (and logged at debug level), so
the critical path is visible: ``benchmarks/bench_trace.py`` prints them. A small run (below
``THREADED_FROM`` instructions) writes its files in turn on the calling thread, where its
writers take less time than starting their threads would.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import time
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pypto.platforms import Platform
from pypto.report.run_report import RunReport

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class WriterTime:
    """One writer of ``write_run_files``: when it began and ended (seconds from the call) and
    the CPU seconds of its thread (native threads it starts, such as a container's file
    writer, are not in it)."""

    name: str
    began: float
    ended: float
    cpu: float


# Runs with fewer recorded instructions write their files one after another on the calling
# thread: starting the three writer threads and joining them took 0.7 ms of a small kernel's
# 2.8 ms traced call, more than its writers could overlap.
THREADED_FROM = 20_000


def _done(fn: Callable[..., Any], *args: Any) -> Future[Any]:
    """``fn(*args)`` run now, as a finished future (its error kept in it, as a pool's is)."""
    future: Future[Any] = Future()
    try:
        future.set_result(fn(*args))
    except Exception as e:  # raised by the caller once every writer has run
        future.set_exception(e)
    return future


def _timed(name: str, t0: float, times: list[WriterTime], fn: Callable[..., Any], *args: Any) -> Any:
    began, cpu = time.perf_counter() - t0, time.thread_time()
    try:
        return fn(*args)
    finally:
        times.append(WriterTime(name, began, time.perf_counter() - t0, time.thread_time() - cpu))


def write_run_files(
    report: RunReport,
    output_dir: str | Path,
    *,
    cube_kernels: Iterable[str] | None = None,
    platform: Platform | None = None,
    json_copy: bool = False,
) -> list[WriterTime]:
    """Writes the trace files, ``records.npz`` and ``run.json`` of ``report`` under
    ``output_dir`` (``cube_kernels``, ``platform``, ``json_copy``: as ``write_traces`` takes
    them); returns each writer's time. A writer's error is raised once every writer has
    stopped (the calling thread's, the container's or run.json's, before the others')."""
    from pypto.report.perfetto import write_run_trace
    from pypto.report.records_file import NAME, save_records
    from pypto.report.trace import write_traces

    out = Path(output_dir)
    folder, reports = out / "trace", out / "report"
    folder.mkdir(parents=True, exist_ok=True)
    t0, times = time.perf_counter(), list[WriterTime]()
    threaded = report.instructions >= THREADED_FROM
    pool = ThreadPoolExecutor(max_workers=3, thread_name_prefix="pypto-trace") if threaded else None
    with pool or contextlib.nullcontext():
        submit = pool.submit if pool is not None else _done
        jobs: list[Future[Any]] = [
            submit(_timed, "run.pftrace", t0, times, write_run_trace, report, folder / "run.pftrace"),
            submit(_timed, "records.npz", t0, times, save_records, report, reports / NAME),
            # run.json's one pass over the records, kept by the report: only its writing
            # waits for the containers' names.
            submit(_timed, "hot lines", t0, times, report.hot_lines),
        ]
        try:  # the launches' files on this thread: run.json names them
            launches = functools.partial(
                write_traces, cube_kernels=cube_kernels, platform=platform, json_copy=json_copy
            )
            _timed("containers", t0, times, launches, report, folder)
            jobs[-1].result()  # (its error, if any, raised here: before the others')
            _timed("run.json", t0, times, report.save, reports / "run.json")  # what pypto-timeline reads
        finally:
            errors = [job.exception() for job in jobs]  # waits for them all
    for error in errors:
        if error is not None:
            raise error
    for w in times:
        log.debug("%s: %.1f-%.1f ms, CPU %.1f ms", w.name, 1e3 * w.began, 1e3 * w.ended, 1e3 * w.cpu)
    return times
