"""The files of a traced run (pypto.report.run_files.write_run_files, what RunConfig(trace=True)
writes), their writers on threads of their own (or, for a small run, one after another on the
calling thread): the same bytes as writing them one by one, a writer's failure raised only
once the others have finished their files, and files written over longer ones from an earlier
run holding only the new bytes."""

from __future__ import annotations

import json
import os
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from pypto.report import run_files
from pypto.report.file_blocks import rewritten
from pypto.report.hotspots import chunk_of, hot_lines
from pypto.report.perfetto import write_run_trace
from pypto.report.records_file import save_records
from pypto.report.run_files import write_run_files
from pypto.report.trace import write_traces
from pypto.runtime import RunConfig

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures"))
import seed_kernels as sk  # noqa: E402

A = (np.arange(sk.ROWS * sk.TC) % 3 - 1).astype(np.float32).reshape(sk.ROWS, sk.TC)


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory):
    sk.pipelined(A, np.zeros_like(A), config=RunConfig(trace=True, output_dir=tmp_path_factory.mktemp("run")))
    return sk.pipelined.last_report


@pytest.fixture(params=["threads", "in turn"])
def writers(request, monkeypatch: pytest.MonkeyPatch) -> str:
    """Both ways of writing: the writers on threads, or in turn (a run below THREADED_FROM)."""
    monkeypatch.setattr(run_files, "THREADED_FROM", 0 if request.param == "threads" else 10**12)
    return request.param


def test_the_concurrent_files_equal_the_files_written_one_by_one(report, writers, tmp_path: Path):
    times = {w.name: w for w in write_run_files(report, tmp_path / "together")}
    assert sorted(times) == ["containers", "hot lines", "records.npz", "run.json", "run.pftrace"]
    assert all(0 <= w.began <= w.ended and w.cpu >= 0 for w in times.values())
    assert times["run.json"].began >= times["containers"].ended  # it names the containers
    (one,) = write_traces(report, tmp_path / "apart" / "trace")
    write_run_trace(report, tmp_path / "apart" / "trace" / "run.pftrace")
    save_records(report, tmp_path / "apart" / "report" / "records.npz")
    (both,) = (tmp_path / "together" / "trace").rglob("visualize_data.bin")
    assert both.read_bytes() == Path(one).read_bytes()
    for name in ("trace/run.pftrace", "report/records.npz"):
        assert (tmp_path / "together" / name).read_bytes() == (tmp_path / "apart" / name).read_bytes(), name
    saved = json.loads((tmp_path / "together" / "report" / "run.json").read_text())
    assert (tmp_path / "together" / "report" / saved["trace_paths"][-1]).resolve() == both.resolve()
    summed = hot_lines([chunk_of(t.trace.raw) for t in report.tasks if t.trace is not None])
    assert saved["hot_lines"] == [r.to_dict() for r in summed] != []  # summed beside the containers


def test_a_failing_writer_is_raised_after_the_others_finish(report, writers, tmp_path: Path):
    (tmp_path / "report").write_text("a file where the report folder goes")
    with pytest.raises(OSError):
        write_run_files(report, tmp_path)
    apart = tmp_path / "apart.pftrace"
    write_run_trace(report, apart)
    assert (tmp_path / "trace" / "run.pftrace").read_bytes() == apart.read_bytes()  # complete
    (container,) = (tmp_path / "trace").rglob("visualize_data.bin")
    assert container.stat().st_size > 0


def test_files_written_over_longer_ones_hold_only_the_new_bytes(report, writers, tmp_path: Path):
    # A folder traced before by a longer run: each file is written over, not emptied first, and
    # must end where the new bytes end.
    old = tmp_path / "again"
    for name in ("trace/run.pftrace", "report/records.npz", "report/run.json"):
        (old / name).parent.mkdir(parents=True, exist_ok=True)
        (old / name).write_bytes(b"an older, longer run's bytes " * 40_000)
    write_run_files(report, old)
    write_run_files(report, tmp_path / "fresh")
    for name in ("trace/run.pftrace", "report/records.npz"):
        assert (old / name).read_bytes() == (tmp_path / "fresh" / name).read_bytes(), name
    again, fresh = (json.loads((d / "report" / "run.json").read_text()) for d in (old, tmp_path / "fresh"))
    assert again.pop("trace_paths") != fresh.pop("trace_paths")  # each names its own containers
    assert again == fresh


def test_a_failed_rewrite_keeps_none_of_the_old_bytes(tmp_path: Path):
    path = tmp_path / "f.bin"
    path.write_bytes(b"o" * 10_000)
    with pytest.raises(RuntimeError), rewritten(path) as f:
        f.write(b"new")
        raise RuntimeError("the writer failed")
    assert path.read_bytes() == b"new"  # what was written, not followed by the old tail


def test_a_report_saves_to_a_path_that_is_not_a_regular_file(report, tmp_path: Path):
    # Written over and cut at its end only when it is a regular file: a pipe or /dev/null has
    # no length to cut (truncating one is an error).
    report.save(Path(os.devnull))
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    report.save(fifo)
    reader.join(timeout=60)
    assert json.loads(got[0]) == json.loads(report.save(tmp_path / "plain.json").read_text())
