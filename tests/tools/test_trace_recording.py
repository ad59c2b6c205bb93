"""RunConfig(trace=True): the raw op-simulator layout per launch, what its blocks hold, and
that recording changes nothing about the run."""

from __future__ import annotations

import gc
import json
import re
from pathlib import Path

import numpy as np
import pytest
import seed_kernels as tk

import pypto.language as pl
from pypto.errors import ConfigError
from pypto.report.opprof_format import API_INSTR, SOURCE, TRACE, iter_blocks, source_lines
from pypto.report.trace import write_traces
from pypto.runtime import RunConfig, run_kernel_file

DETAIL = re.compile(r"PIPE:(MTE2|MTE1|M|VEC|FIX|MTE3|S),TRIGGERPIPE:(MTE2|MTE1|M|VEC|FIX|MTE3|S),FLAGID:\d+,")
A = (np.arange(tk.ROWS * tk.TC) % 3 - 1).astype(np.float32).reshape(tk.ROWS, tk.TC)


def blocks(path: str | Path) -> dict[int, object]:
    found = {b.type: b for b in iter_blocks(Path(path).read_bytes())}
    return found


def events(path: str | Path) -> list[dict]:
    return json.loads(blocks(path)[TRACE].payload)["traceEvents"]


def lines_by_pc(path: str | Path) -> dict[str, str]:
    """Each static instruction's source line, by the pc_addr its events carry."""
    return source_lines(json.loads(blocks(path)[API_INSTR].payload))


def line_of(text: str) -> int:
    return next(i for i, line in enumerate(Path(tk.__file__).read_text().splitlines(), 1) if text in line)


def test_traced_run_writes_one_opprof_folder_per_kernel(tmp_path: Path):
    out = np.zeros_like(A)
    tk.single_buffer(A, out, config=RunConfig(trace=True, output_dir=tmp_path))
    rep = tk.single_buffer.last_report
    (path,) = map(Path, rep.trace_paths)
    assert path.name == "visualize_data.bin" and path.parent.name == "simulator"
    assert re.fullmatch(r"OPPROF_\d{17}_000", path.parent.parent.name)
    assert path.parent.parent.parent == tmp_path / "trace" / "single_buffer_incore_0"
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # every event once per form
    tk.single_buffer(A, out, config=RunConfig(trace=True, trace_json=True, output_dir=tmp_path / "j"))
    (with_json,) = map(Path, tk.single_buffer.last_report.trace_paths)
    assert json.loads((with_json.parent / "trace.json").read_text())["traceEvents"] == events(with_json)
    with pytest.raises(ConfigError, match="trace_json must be True or False, got 'yes'"):
        RunConfig(trace=True, trace_json="yes")  # type: ignore[arg-type]
    found = blocks(path)
    assert sorted(found) == [SOURCE, TRACE, API_INSTR]
    assert found[SOURCE].path == tk.__file__ and found[SOURCE].payload == Path(tk.__file__).read_bytes()
    np.testing.assert_allclose(out, np.exp(A), rtol=1e-6)


def test_recording_changes_no_cycle_and_off_keeps_nothing(tmp_path: Path):
    traced = tk.single_buffer.compile(A, A, config=RunConfig(trace=True, output_dir=tmp_path / "on"))
    plain = tk.single_buffer.compile(A, A, config=RunConfig(output_dir=tmp_path / "off"))
    on, off = traced.run(A, np.zeros_like(A)), plain.run(A, np.zeros_like(A))
    assert (on.cycles, on.pipe_busy, on.instructions) == (off.cycles, off.pipe_busy, off.instructions)
    assert off.trace_paths == [] and off.tasks[0].trace is None
    assert not (tmp_path / "off" / "trace").exists()
    assert len(on.tasks[0].trace) == on.instructions


def test_events_name_instruction_pipe_and_python_line(tmp_path: Path):
    tk.single_buffer(A, np.zeros_like(A), config=RunConfig(trace=True, output_dir=tmp_path))
    rep = tk.single_buffer.last_report
    evs = [e for e in events(rep.trace_paths[0]) if e["ph"] == "X"]
    assert {e["pid"] for e in evs} == {"core0.veccore0"}
    loads = [e for e in evs if e["name"] == "TLOAD"]
    assert len(loads) == tk.NT and {e["tid"] for e in loads} == {"MTE2"}
    load_line = line_of("tile = pl.load(a, [i * TR, 0], [TR, TC])")
    assert not any("source_line" in e["args"] for e in evs)  # the metrics block has it, once
    lines = lines_by_pc(rep.trace_paths[0])
    assert {lines[e["args"]["pc_addr"]] for e in loads} == {f"{tk.__file__}:{load_line}:12"}
    assert {e["tid"] for e in evs if e["name"] == "TEXP"} == {"VECTOR"}
    assert {e["tid"] for e in evs if e["name"] == "TSTORE"} == {"MTE3"}
    # One simulated cycle is one nanosecond of trace time, written exactly (ts is in us).
    records = [r for r in rep.tasks[0].trace.rows() if r["name"] == "TLOAD"]  # events keep their order
    for e, r in zip(loads, records, strict=True):
        assert round(e["ts"] * 1000) == r["start"] and round(e["dur"] * 1000) == r["end"] - r["start"]


def test_flag_slices_carry_matchable_details(tmp_path: Path):
    tk.single_buffer(A, np.zeros_like(A), config=RunConfig(trace=True, output_dir=tmp_path))
    evs = events(tk.single_buffer.last_report.trace_paths[0])
    flags = [e for e in evs if e["name"] in ("SET_FLAG", "WAIT_FLAG")]
    assert flags and all(DETAIL.fullmatch(e["args"]["detail"]) for e in flags)
    lane = {"MTE2": "MTE2", "VEC": "VECTOR", "MTE3": "MTE3"}
    for e in flags:  # a set sits on its source pipe's lane, a wait on its target's
        src, dst = DETAIL.fullmatch(e["args"]["detail"]).groups()
        assert e["tid"] == lane[src if e["name"] == "SET_FLAG" else dst]
    sets = sorted(e["args"]["detail"] for e in flags if e["name"] == "SET_FLAG")
    waits = sorted(e["args"]["detail"] for e in flags if e["name"] == "WAIT_FLAG")
    assert sets == waits  # every set is consumed by one wait: the pairs are matchable


def test_api_instr_block_counts_per_static_instruction(tmp_path: Path):
    tk.single_buffer(A, np.zeros_like(A), config=RunConfig(trace=True, output_dir=tmp_path))
    rep = tk.single_buffer.last_report
    api = json.loads(blocks(rep.trace_paths[0])[API_INSTR].payload)
    assert api["Cores"] == ["core0.veccore0"]
    by_name = {i["Source"]: i for i in api["Instructions"]}
    load, exp = by_name["TLOAD"], by_name["TEXP"]
    assert load["Pipe"] == "MTE2" and load["Instructions Executed"] == [tk.NT]
    assert load["Cycles"] == [sum(b - a for a, b in rep.intervals("MTE2"))]
    assert load["Process Bytes"] == [tk.NT * tk.TR * tk.TC * 4] and load["Buffer Address"] == ["0x0"]
    assert load["Vector Utilization Percentage"] == [-1.0] and exp["Vector Utilization Percentage"] == [100.0]
    assert load["AscendC Inner Code"].startswith(f"{tk.__file__}:")
    assert api["Instructions Dtype"]["Instructions"]["Cycles"] == 1


def test_hand_written_kernel_traces_one_core_per_block(fixture_kernel, tmp_path: Path):
    a = np.ones((tk.ROWS, tk.TC), np.float32)
    # Both blocks store the whole output at once: a race between two cores, reported.
    rep = run_kernel_file(fixture_kernel("exp_double_buffer"), [a, np.zeros_like(a)], outputs={1},
                          block_num=2, record=True, name="exp_double_buffer", hazards="report")  # fmt: skip
    assert any(h.startswith("race between tasks: kernel 'exp_double_buffer' (block 0)") for h in rep.hazards)
    (path,) = write_traces(rep, tmp_path)
    assert rep.trace_paths == [path]
    assert Path(path).parent.parent.parent == tmp_path / "exp_double_buffer"
    evs = events(path)
    assert {e["pid"] for e in evs if e["ph"] == "X"} == {"core0.veccore0", "core0.veccore1"}
    per_core = {
        p: sum(1 for e in evs if e["ph"] == "X" and e["pid"] == p)
        for p in ("core0.veccore0", "core0.veccore1")
    }
    assert per_core["core0.veccore0"] == per_core["core0.veccore1"] == rep.tasks[0].instructions
    assert lines_by_pc(path) == {}  # no PYPTO_LOC tags in it: no instruction has a line
    assert SOURCE not in blocks(path)


def test_a_long_trace_keeps_every_record_and_event(fixture_kernel, tmp_path: Path):
    """Many more records than the table's first buffer and an event payload of several write
    chunks: every record in order, every event once, trace.json equal to the TRACE block."""
    n = 40_000
    rep = run_kernel_file(fixture_kernel("vec_loop"), [n], record=True, name="vec_loop")
    trace = rep.tasks[0].trace
    assert len(trace) == rep.instructions == n + 1
    cols = trace.columns
    assert cols["index"].tolist() == list(range(n + 1))
    assert cols["name"] == ["TEXPANDS"] + ["TADDS"] * n
    assert cols["loc"][1:] == ["loop.py:10:5", "loop.py:12:5"] * (n // 2)
    assert (cols["start"][1:] >= cols["start"][:-1]).all()
    (path,) = write_traces(rep, tmp_path, json_copy=True)
    text = (Path(path).parent / "trace.json").read_bytes()
    assert len(text) > 3 * 2**20  # written in several chunks
    assert blocks(path)[TRACE].payload == text
    evs = [e for e in json.loads(text)["traceEvents"] if e["ph"] == "X"]
    lines = lines_by_pc(path)
    assert [lines[e["args"]["pc_addr"]] for e in evs[1:]] == cols["loc"][1:]
    assert [round(e["ts"] * 1000) for e in evs] == cols["start"].tolist()


@pytest.mark.parametrize("n", [1, 62, 63, 64, 200])
def test_every_record_is_kept_whether_the_table_stays_short_or_outgrows_its_first_block(fixture_kernel, n):
    """A short task's records sit in a small heap block (a decode's thousands of short tasks
    then map no memory each), copied once into a mapping when the task outgrows it (64 rows):
    every record kept, in order, either way."""
    rep = run_kernel_file(fixture_kernel("vec_loop"), [n], record=True, name="vec_loop", isolate=False)
    cols = rep.tasks[0].trace.columns
    assert cols["index"].tolist() == list(range(n + 1))
    assert cols["name"] == ["TEXPANDS"] + ["TADDS"] * n
    assert cols["loc"][1:] == ["loop.py:10:5", "loop.py:12:5"] * (n // 2) + ["loop.py:10:5"] * (n % 2)
    assert (np.diff(cols["start"]) >= 0).all()


def test_a_short_trace_is_the_same_container_and_trace_json(fixture_kernel, tmp_path: Path):
    """A payload of one write chunk (each file then written in one call at the end): the
    container's blocks in order, its TRACE block equal to trace.json."""
    rep = run_kernel_file(fixture_kernel("vec_loop"), [100], record=True, name="vec_loop")
    (path,) = write_traces(rep, tmp_path, json_copy=True)
    text = (Path(path).parent / "trace.json").read_bytes()
    assert len(text) < 2**20 and blocks(path)[TRACE].payload == text
    assert list(blocks(path)) == [TRACE, API_INSTR]  # in order (no source file: no SOURCE block)
    evs = [e for e in json.loads(text)["traceEvents"] if e["ph"] == "X"]
    assert len(evs) == rep.instructions == 101


def test_a_dropped_reports_record_memory_serves_the_next_run_and_never_a_live_one(fixture_kernel):
    """Record buffers of a report that is gone are reused (their pages are already in); those of
    a live report never are, and a reused buffer's older, longer contents never show."""
    kernel = fixture_kernel("vec_loop")

    def traced(n: int):
        return run_kernel_file(kernel, [n], record=True, name="vec_loop", isolate=False).tasks[0].trace

    def table_at(trace) -> int:
        return trace.raw["table"].__array_interface__["data"][0]

    dropped = traced(40_000)
    dropped_at = table_at(dropped)
    del dropped
    gc.collect()  # its buffers are spares now
    live = traced(30_000)
    assert table_at(live) == dropped_at  # started from the 40,000-row spare
    kept = {k: np.array(live.columns[k]) for k in ("index", "start", "end")}
    fresh = traced(40_000)
    assert len(live) == 30_001 and live.columns["index"].tolist() == list(range(30_001))
    for k, v in kept.items():
        np.testing.assert_array_equal(live.columns[k], v)
    assert fresh.columns["index"].tolist() == list(range(40_001))
    assert not np.shares_memory(live.columns["start"], fresh.columns["start"])


@pl.jit
def three_launches(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    for _i in pl.range(3):  # one after another: three launches of one kernel
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.store(pl.exp(pl.load(out, [0, 0], [16, 128])), [0, 0], out)
    return out


def test_a_kernel_s_launches_share_one_container_on_the_run_s_time_axis(tmp_path: Path):
    """One container per kernel, not per launch (a decode launches a kernel thousands of
    times): its sources once, every launch's instructions at that launch's offset from the
    earliest, one process per core with the launches' totals summed, and nothing after the
    blocks."""
    a = np.zeros((16, 128), np.float32)
    out = np.full((16, 128), 0.5, np.float32)
    three_launches(a, out, config=RunConfig(trace=True, output_dir=tmp_path))
    report = three_launches.last_report
    (path,) = report.trace_paths
    found = blocks(path)  # every byte of the file in a block
    assert sorted(found) == [SOURCE, TRACE, API_INSTR]
    assert found[SOURCE].payload == Path(__file__).read_bytes()
    exps = [e for e in events(path) if e["ph"] == "X" and e["name"] == "TEXP"]
    starts = [t.start for t in report.tasks]
    assert len(exps) == 3 and len(set(starts)) == 3
    own = [next(r["start"] for r in t.trace.rows() if r["name"] == "TEXP") for t in report.tasks]
    want = sorted(s - min(starts) + o for s, o in zip(starts, own))
    assert [round(e["ts"] * 1000) for e in exps] == want
    api = json.loads(found[API_INSTR].payload)
    (pid,) = {e["pid"] for e in exps}
    assert api["Cores"] == [pid]
    (texp,) = [i for i in api["Instructions"] if i["Source"] == "TEXP"]
    assert texp["Instructions Executed"] == [3]
    np.testing.assert_allclose(out, np.exp(np.exp(np.exp(0.5))), rtol=1e-5)
