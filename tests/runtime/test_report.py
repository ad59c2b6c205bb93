"""The run report a user reads: utilisation per core and per core kind within [0, 100%], the
bounding pipe named, the task table longest first, and a JSON form that round-trips."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures"))
import gemm_kernels as gk  # noqa: E402
import seed_kernels as sk  # noqa: E402

from pypto import platforms  # noqa: E402
from pypto.runtime import PIPES, RunConfig, RunReport  # noqa: E402


@pytest.fixture(scope="module")
def gemm_report() -> RunReport:
    rng = np.random.default_rng(1)
    a = rng.uniform(-1, 1, (gk.S, gk.S)).astype(np.float16)
    b = rng.uniform(-1, 1, (gk.S, gk.S)).astype(np.float16)
    c = np.zeros((gk.S, gk.S), np.float32)
    gk.gemm(a, b, c)
    return gk.gemm.last_report


def test_gemm_utilisation_is_per_core_and_never_above_one(gemm_report: RunReport):
    cores = gemm_report.cores()
    assert len(cores) == 24 and {c.kind for c in cores} == {"AIC"}
    first = min(t.start for t in gemm_report.tasks)  # the launch's cold head: no core can work
    assert first == platforms.get("a2a3sim").task_cold_head_cycles
    for core in cores:
        for pipe in PIPES:
            assert 0.0 <= core.utilisation[pipe] <= 1.0
            assert core.utilisation[pipe] == core.busy[pipe] / (gemm_report.cycles - first)
    # the summed busy cycles over 24 cores are far above one run's cycles: no column shows that
    assert gemm_report.pipe_busy["MTE2"] > gemm_report.cycles
    (aic,) = gemm_report.kinds().values()
    assert (aic.kind, aic.cores_used, aic.cores_available) == ("AIC", 24, 24)
    mean_cube = sum(c.utilisation["CUBE"] for c in cores) / 24
    assert aic.utilisation["CUBE"] == pytest.approx(mean_cube) and 0 < mean_cube <= 1
    shown = [float(x) for x in re.findall(r"([\d.]+)%", str(gemm_report))]
    assert shown and max(shown) <= 100.0


def test_gemm_names_the_bounding_pipe(gemm_report: RunReport):
    bound = gemm_report.bound
    best = max((c.utilisation[p], p, c.name) for c in gemm_report.cores() for p in PIPES)
    assert (bound.utilisation, bound.pipe) == best[:2] and bound.core.startswith("AIC")
    assert f"bound: {bound.pipe} ({bound.utilisation:.1%} busy on {bound.core})" in str(gemm_report)


def test_gemm_task_table_longest_first(gemm_report: RunReport):
    rows = gemm_report.task_table()
    assert len(rows) == 24 and {r["kernel"] for r in rows} == {"gemm_block"}
    cycles = [r["cycles"] for r in rows]
    assert cycles == sorted(cycles, reverse=True)
    assert all(r["end"] - r["start"] == r["cycles"] for r in rows)
    text = str(gemm_report)
    assert "tasks, longest first (8 of 24):" in text
    first = text.split("longest first")[1].splitlines()[2].split()
    assert first == [
        rows[0]["core"],
        str(rows[0]["start"]),
        str(rows[0]["end"]),
        str(cycles[0]),
        "gemm_block",
    ]


def test_gemm_json_round_trips(gemm_report: RunReport, tmp_path: Path):
    data = gemm_report.to_dict()
    assert json.loads(gemm_report.to_json()) == data
    saved = gemm_report.save(tmp_path / "r" / "run.json")
    again = RunReport.load(saved)
    assert again.to_dict() == data and again.cycles == gemm_report.cycles
    # read by eye: a line per key, and per item of a list (each of the 24 tasks on its own)
    lines = saved.read_text().splitlines()
    assert sum(line.startswith('  {"kernel": "gemm_block", "core": ') for line in lines) == 24 and lines[
        1
    ].startswith(' "')
    assert data["core_kinds"]["AIC"]["cores_used"] == 24 and len(data["cores"]) == 24
    assert data["bound"]["pipe"] == gemm_report.bound.pipe
    assert [t["core_kind"] for t in data["tasks"]] == ["AIC"] * 24


def test_seed_kernels_name_mte2_and_device_names_say_they_are_simulated():
    a = np.ones((sk.ROWS, sk.TC), np.float32)
    sk.single_buffer(a, np.zeros_like(a), config=RunConfig(platform="a2a3"))
    serial = sk.single_buffer.last_report
    assert serial.bound.pipe == "MTE2" and serial.bound.latency_bound  # pipes take turns
    assert "no pipe is busy half the run" in str(serial)
    assert str(serial).startswith("pypto run on a2a3 (a device name: runs on its simulator, a2a3sim):")
    assert serial.to_dict()["simulator"] == "a2a3sim"
    sk.pipelined(a, np.zeros_like(a))
    overlapped = sk.pipelined.last_report
    assert overlapped.bound.pipe == "MTE2" and not overlapped.bound.latency_bound
    assert str(overlapped).startswith("pypto run on a2a3sim (simulator):")


def test_a_report_that_is_not_one_is_refused():
    with pytest.raises(ValueError, match="schema 1"):
        RunReport.from_dict({"schema": 99})


def _task(kind: str, core: int, busy: dict[str, int], end: int):
    from pypto.report.run_report import TaskReport

    full = {p: busy.get(p, 0) for p in PIPES}
    return TaskReport(
        name=f"k_{kind}", core=core, start=0, end=end, pipe_busy=full, instructions=1, core_type=kind
    )


def test_the_bound_is_named_per_core_kind_with_its_ratio():
    tasks = [
        _task("AIC", 0, {"CUBE": 400, "MTE2": 300}, 1000),
        _task("AIC", 1, {"CUBE": 500, "MTE2": 800}, 1000),
        _task("AIV", 0, {"VECTOR": 250, "MTE3": 100}, 900),
    ]
    rep = RunReport("a2a3sim", 1000, {p: sum(t.pipe_busy[p] for t in tasks) for p in PIPES}, 3, tasks)
    bounds = rep.bounds
    assert list(bounds) == ["AIC", "AIV"]
    aic, aiv = bounds["AIC"], bounds["AIV"]
    assert (aic.pipe, aic.core, aic.busy, aic.ratio) == ("MTE2", "AIC1", 800, 1000 / 800)
    assert (aiv.pipe, aiv.core, aiv.busy, aiv.ratio) == ("VECTOR", "AIV0", 250, 4.0)
    text = str(rep)
    assert "bound (AIC): MTE2 (80.0% busy on AIC1; run = 1.25 x its busy time)" in text
    assert "bound (AIV): VECTOR (25.0% busy on AIV0; run = 4.00 x its busy time)" in text
    data = rep.to_dict()["bounds"]
    assert data["AIC"]["ratio"] == 1.25 and data["AIV"]["pipe"] == "VECTOR"


@pytest.mark.parametrize(
    ("folder", "name"),
    [
        ("/o/report", "/o/trace/k/OPPROF_1_000/simulator/visualize_data.bin"),  # a sibling's file
        ("/o/report", "/o/report/x.bin"),
        ("/o/report", "/o/reports/x.bin"),  # a name that only starts like the folder
        ("/o/report", "/o/report/../trace/x.bin"),
        ("/o/report", "/o"),
        ("/o/report", "/o/report"),
        ("/o/report", "/"),
        ("/", "/x/y"),
        ("/o/report", "relative/x.bin"),
    ],
)
def test_a_saved_report_names_trace_files_as_relpath_would(folder, name):
    from pypto.report.run_report import _ancestors, _relative

    assert _relative(_ancestors(folder), name) == os.path.relpath(name, folder)
