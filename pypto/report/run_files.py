"""The files of a traced run (``RunConfig(trace=True)``), written at once.

``<output_dir>/trace/``: each launch's ``OPPROF_*/simulator/visualize_data.bin``
(:mod:`pypto.report.trace`) and the whole-run ``run.pftrace`` (:mod:`pypto.report.perfetto`);
``<output_dir>/report/``: ``records.npz`` (:mod:`pypto.report.records_file`) and, once the
launches' files are named, ``run.json``.

The three writers read the same record tables and write different files, so they run on
threads of their own: most of their work is native code that releases the GIL (formatting,
encoding, narrowing, the kernel's copies into the page cache), and on a machine with idle
cores the run waits for the slowest writer rather than for their sum. The CPU they spend is
the same either way.
"""

from __future__ import annotations

from collections.abc import Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from pypto.platforms import Platform
from pypto.report.run_report import RunReport


def write_run_files(
    report: RunReport,
    output_dir: str | Path,
    *,
    cube_kernels: Iterable[str] | None = None,
    platform: Platform | None = None,
    json_copy: bool = False,
) -> None:
    """Writes the trace files, ``records.npz`` and ``run.json`` of ``report`` under
    ``output_dir`` (``cube_kernels``, ``platform``, ``json_copy``: as ``write_traces`` takes
    them). A writer's error is raised once every writer has stopped (the calling thread's,
    the container's or run.json's, before the others')."""
    from pypto.report.perfetto import write_run_trace
    from pypto.report.records_file import NAME, save_records
    from pypto.report.trace import write_traces

    out = Path(output_dir)
    folder, reports = out / "trace", out / "report"
    folder.mkdir(parents=True, exist_ok=True)
    with ThreadPoolExecutor(max_workers=2, thread_name_prefix="pypto-trace") as pool:
        jobs: list[Future[Any]] = [
            pool.submit(write_run_trace, report, folder / "run.pftrace"),
            pool.submit(save_records, report, reports / NAME),
        ]
        try:  # the launches' files on this thread: run.json names them
            write_traces(report, folder, cube_kernels=cube_kernels, platform=platform, json_copy=json_copy)
            report.save(reports / "run.json")  # what pypto-timeline reads
        finally:
            errors = [job.exception() for job in jobs]  # waits for both
    for error in errors:
        if error is not None:
            raise error
