"""The offline timeline: one self-contained page per run, checked in a real headless Chromium
(it renders, lanes are drawn, no console errors, zoom/pan/hover/click work), and the command
that writes it from a traced run's folder."""

from __future__ import annotations

import base64
import html
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import seed_kernels as sk
from png_pixels import count_color, read_png

import pypto.language as pl
from pypto.runtime import PIPES, RunConfig, RunReport
from pypto.tools import timeline

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures"))
import gemm_kernels as gk  # noqa: E402

PIPE_RGB = {
    "MTE2": (0x4E, 0x79, 0xA7),
    "VECTOR": (0x59, 0xA1, 0x4F),
    "MTE3": (0xF2, 0x8E, 0x2B),
    "MTE1": (0x76, 0xB7, 0xB2),
    "CUBE": (0xE1, 0x57, 0x59),
    "FIXPIPE": (0xD4, 0xA0, 0x17),
}
SWATCH = 100  # the legend's 10 x 10 box of each colour


def _traced_pipelined(out: Path) -> RunReport:
    a = (np.arange(sk.ROWS * sk.TC) % 3 - 1).astype(np.float32).reshape(sk.ROWS, sk.TC)
    sk.pipelined(a, np.zeros_like(a), config=RunConfig(trace=True, output_dir=out))
    return sk.pipelined.last_report


def _traced_gemm(out: Path) -> RunReport:
    a = np.ones((gk.S, gk.S), np.float16)
    gk.gemm(a, a, np.zeros((gk.S, gk.S), np.float32), config=RunConfig(trace=True, output_dir=out))
    return gk.gemm.last_report


def _body(dom: str) -> dict[str, str]:
    tag = re.findall(r"<body([^>]*)>", dom)[0]  # the first: embedded sources may spell one
    return dict(re.findall(r'data-([\w-]+)="([^"]*)"', tag))


def _selftest(dom: str) -> dict:
    (text,) = re.findall(r'<pre id="tl-selftest"[^>]*>(.*?)</pre>', dom, re.S)
    return json.loads(html.unescape(text))


def _lanes(dom: str) -> list[tuple[str, str, int]]:
    found = re.findall(r'<div class="lane" data-core="(\w+)" data-pipe="(\w+)" data-events="(\d+)"', dom)
    return [(c, p, int(n)) for c, p, n in found]


def _check_page(chromium, page: Path, shot: Path, report: RunReport) -> tuple[dict, dict, np.ndarray]:
    shown = chromium(page, screenshot=shot, fragment="#selftest")
    assert shown.console == [] and 'id="tl-errors" data-count="0"' in shown.dom
    body = _body(shown.dom)
    records = sum(len(t.trace) for t in report.tasks)
    waits = sum(int((t.trace.raw["table"][:, 1] == 2).sum()) for t in report.tasks)
    assert body["rendered"] == "true" and int(body["events"]) == records
    assert int(body["tasks"]) == len(report.tasks) and int(body["flows"]) == waits > 0
    assert int(body["drawn"]) > 0
    test = _selftest(shown.dom)
    (lo, hi), (zlo, zhi) = test["full"], test["zoomed"]
    assert zhi - zlo < 0.5 * (hi - lo)  # the wheel zoomed in around the pointer
    assert test["panned_by"] == pytest.approx(test["pan_expected"], rel=1e-6) and test["panned_by"] > 0
    ev = test["event"]
    assert test["tip_shown"] and test["selected"]
    assert test["tip"].startswith(ev["name"]) and f"source {ev['source']}" in test["tip"]
    assert f"cycles {ev['cycles']} " in test["tip"] and f"bytes {ev['bytes']}" in test["tip"]
    file, line, _ = ev["source"].rsplit(":", 2)
    assert test["source_line"] == ev["source"]
    assert test["source_hit"].strip().startswith(f"{line} ")
    assert Path(file).read_text().splitlines()[int(line) - 1].strip() in test["source_hit"]
    assert test["task_tip"].startswith(f"task {report.tasks[0].name} on ")
    return body, test, read_png(shot)


def test_pipelined_kernel_timeline_in_chromium(chromium, tmp_path: Path):
    report = _traced_pipelined(tmp_path / "build")
    page = report.timeline_html(tmp_path / "pipelined.html")
    body, _, pixels = _check_page(chromium, page, tmp_path / "pipelined.png", report)
    shown = chromium(page)
    assert [(c, p) for c, p, _ in _lanes(shown.dom)] == [
        ("AIV0", "MTE2"),
        ("AIV0", "VECTOR"),
        ("AIV0", "MTE3"),
    ]
    assert body["lanes"] == "3" and body["cores"] == "1"
    for pipe in ("MTE2", "VECTOR", "MTE3"):  # the lanes are drawn, not only the legend
        assert count_color(pixels, PIPE_RGB[pipe]) > 20 * SWATCH, pipe
    assert count_color(pixels, PIPE_RGB["CUBE"]) <= SWATCH


def test_24_core_gemm_timeline_in_chromium(chromium, tmp_path: Path):
    report = _traced_gemm(tmp_path / "build")
    page = report.timeline_html(tmp_path / "gemm.html")
    body, _, pixels = _check_page(chromium, page, tmp_path / "gemm.png", report)
    assert body["cores"] == "24" and body["tasks"] == "24"
    lanes = _lanes(chromium(page).dom)
    assert {c for c, _, _ in lanes} == {f"AIC{i}" for i in range(24)}
    assert {p for _, p, _ in lanes} == {"MTE2", "MTE1", "CUBE", "FIXPIPE"}
    assert sum(n for _, _, n in lanes) == int(body["events"])
    for pipe in ("MTE2", "MTE1", "CUBE", "FIXPIPE"):
        assert count_color(pixels, PIPE_RGB[pipe]) > 5 * SWATCH, pipe
    # each lane's busy cycles are its core's, as the report counts them (scalar work has no records)
    data = _page_meta(page)
    busy = {(c.name, p): c.busy[p] for c in report.cores() for p in PIPES if c.busy[p] and p != "SCALAR"}
    assert {(data["cores"][x["core"]], x["pipe"]): x["busy"] for x in data["lanes"]} == busy
    assert re.findall(r'data-pipe="(\w+)" data-events="\d+" data-busy="([\d.]+)"', chromium(page).dom)


_TYPES = {"u8": "<u1", "u16": "<u2", "u32": "<u4", "f64": "<f8"}


def _page_meta(page: Path) -> dict:
    (payload,) = re.findall(r'<script type="application/json" id="tl-data">(.*?)</script>', page.read_text())
    return json.loads(payload.replace("<\\/", "</"))


def _page_data(page: Path) -> dict:
    """The page's metadata, with its packed columns decoded: ``rows`` one per instruction
    (core, pipe, start, end, name, source, bytes, kind), ``arrows`` as (set row, wait row)."""
    text, data = page.read_text(), _page_meta(page)
    found = re.findall(
        r'<script type="application/octet-stream" id="c-(\w+)" data-type="(\w+)">([^<]*)<', text
    )
    cols = {
        name: np.frombuffer(base64.b64decode(b64), _TYPES[kind]).astype(np.int64) for name, kind, b64 in found
    }
    start = np.zeros(data["events"], np.int64)
    for lane in data["lanes"]:
        span = slice(lane["off"], lane["off"] + lane["n"])
        start[span] = np.cumsum(cols["dstart"][span])
    rows = []
    for lane in data["lanes"]:
        for i in range(lane["off"], lane["off"] + lane["n"]):
            name, source, kind = data["sites"][cols["site"][i]]
            end = int(start[i] + cols["dur"][i])
            rows.append(
                (
                    lane["core"],
                    lane["pipe"],
                    int(start[i]),
                    end,
                    name,
                    source,
                    data["byte_values"][cols["bytes"][i]],
                    kind,
                )
            )
    data["rows"] = rows
    data["arrows"] = sorted((rows[a], rows[b]) for a, b in cols["flows"].reshape(-1, 2).tolist())
    return data


def test_the_command_reads_a_traced_runs_folder_like_the_report(tmp_path: Path):
    report = _traced_pipelined(tmp_path / "build")
    direct = _page_data(report.timeline_html(tmp_path / "direct.html"))
    cmd = [
        sys.executable,
        "-m",
        "pypto.tools.timeline",
        str(tmp_path / "build"),
        "-o",
        str(tmp_path / "cli.html"),
    ]
    env = {**os.environ, "SKBUILD_EDITABLE_VERBOSE": "0"}  # an editable install rebuilds quietly
    done = subprocess.run(
        cmd, capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env
    )  # not the checkout
    assert done.returncode == 0 and done.stdout.strip() == f"wrote {tmp_path / 'cli.html'}", done.stderr
    assert (tmp_path / "cli.html").read_bytes() == (tmp_path / "direct.html").read_bytes()  # records.npz
    from_files = _page_data(tmp_path / "cli.html")
    for key in ("cores", "lanes", "tasks", "flows", "cycles", "hot"):
        assert from_files[key] == direct[key], key
    assert sorted(from_files["rows"]) == sorted(direct["rows"]) and from_files["arrows"] == direct["arrows"]
    (trace,) = (tmp_path / "build" / "trace").glob("*/OPPROF_*/simulator/visualize_data.bin")
    one = _page_data(timeline.write_page(timeline.load_model(trace), tmp_path / "one.html"))
    assert one["events"] == direct["events"] and one["flows"] == direct["flows"]  # times from its start


def test_the_page_needs_no_network(tmp_path: Path):
    page = _traced_pipelined(tmp_path / "build").timeline_html(tmp_path / "t.html").read_text()
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page)
    assert "http://" not in page and "https://" not in page and "@import" not in page


def test_the_command_says_what_is_missing(tmp_path: Path, capsys):
    assert timeline.main([str(tmp_path), "-o", str(tmp_path / "t.html")]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: {tmp_path} holds no report/run.json nor trace.json")
    assert "RunConfig(trace=True)" in err
    with pytest.raises(SystemExit) as stop:
        timeline.main(["--version"])
    assert stop.value.code == 0 and capsys.readouterr().out.startswith("pypto 0.1.0")


def test_a_cleaned_trace_draws_its_slices_and_arrows(tmp_path: Path):
    from pypto.tools.clean_sim_trace import clean_file

    report = _traced_pipelined(tmp_path / "build")
    direct = _page_data(report.timeline_html(tmp_path / "direct.html"))
    (bin_path,) = report.trace_paths
    clean_file(Path(bin_path), tmp_path / "clean")
    cleaned = json.loads((tmp_path / "clean" / "trace.clean.json").read_text())
    data = _page_data(timeline.write_page(timeline.load_model(tmp_path / "clean" / "trace.clean.json"),
                                          tmp_path / "clean.html"))  # fmt: skip

    # a launch's trace file holds each task's own times; the run's report places the task on the
    # chip's time axis (here after its core's cold head)
    t0 = report.tasks[0].start
    ops = sorted((r[0], r[1], r[2] - t0, r[3] - t0, *r[4:]) for r in direct["rows"] if not r[7])
    assert sorted(data["rows"]) == ops  # sync slices are arrows there: operations only
    assert data["flows"] == direct["flows"] - cleaned["otherData"]["skipped_flags"] > 0
    lane = lambda page: [(x["core"], x["pipe"], x["busy"]) for x in page["lanes"]]  # noqa: E731
    assert lane(data) == lane(direct) and data["cores"] == ["AIV0"] and data["hot"] == direct["hot"]


def test_task_dependencies_are_arrows_in_the_swimlane(chromium, tmp_path: Path):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "e2e"))
    import mixed_scope as ms

    a = np.ones((ms.M, ms.K), np.float16)
    b = np.ones((ms.K, ms.N), np.float16)
    ms.scaled_matmul(a, b, np.zeros((ms.M, ms.N), np.float32), 0.5, config=RunConfig(trace=True))
    report = ms.scaled_matmul.last_report
    assert [t.deps for t in report.tasks] == [(), (0,), (), (2,), (0, 1, 2, 3)]  # "after" waits for all
    assert RunReport.from_json(report.to_json()).tasks[4].deps == (0, 1, 2, 3)
    page = report.timeline_html(tmp_path / "deps.html")
    assert [t["deps"] for t in _page_data(page)["tasks"]] == [[], [0], [], [2], [0, 1, 2, 3]]
    shown = chromium(page)
    body = _body(shown.dom)
    assert shown.console == [] and body["task-deps"] == "6" and body["task-flows-drawn"] == "6"
    # five tasks on four cores: "after" is picked up on a core an earlier vector task warmed
    assert body["cores"] == "4" and body["tasks"] == "5"


LONG_CORES, LONG_TRIPS, LONG_ROWS = 8, 14_000, 8  # 9 records a trip: 1,008,032 instructions


@pl.jit
def long_loop(a: pl.Tensor, out: pl.Out[pl.Tensor]):  # a long loop of tiny load / add / store
    for blk in pl.parallel(0, LONG_CORES):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="long_loop"):
            for _ in pl.pipeline(LONG_TRIPS, stage=2):
                tile = pl.load(a, [blk * LONG_ROWS, 0], [LONG_ROWS, 8])
                pl.store(pl.add(tile, tile), [blk * LONG_ROWS, 0], out)
    return out


def test_a_million_instruction_run_opens_draws_and_zooms(chromium, tmp_path: Path):
    """A real traced run of over a million instructions (a kernel with a long loop of tiny
    instructions), its page opened in headless Chromium: no console error, every lane drawn
    (busy-density bars when zoomed out, pixels checked), the wheel narrows the visible range
    and then the lanes draw instructions, and the hot-spot table names the kernel's lines."""
    a = np.arange(LONG_CORES * LONG_ROWS * 8, dtype=np.float32).reshape(-1, 8)
    out = np.zeros_like(a)
    long_loop(a, out, config=RunConfig(trace=True, output_dir=tmp_path / "build"))
    np.testing.assert_array_equal(out, 2 * a)
    report = long_loop.last_report
    records = sum(len(t.trace) for t in report.tasks)
    assert records >= 1_000_000
    page = report.timeline_html(tmp_path / "long.html")
    shown = chromium(page, screenshot=tmp_path / "long.png", fragment="#selftest")
    assert shown.console == [] and 'id="tl-errors" data-count="0"' in shown.dom
    body = _body(shown.dom)
    assert body["rendered"] == "true" and int(body["events"]) == records
    assert body["lanes"] == body["dense-lanes"] == str(3 * LONG_CORES)  # zoomed out: densities
    test = _selftest(shown.dom)
    (lo, hi), (zlo, zhi) = test["full"], test["zoomed"]
    assert lo == 0 and hi >= report.cycles and zhi - zlo < 0.5 * (hi - lo)
    assert test["panned_by"] == pytest.approx(test["pan_expected"], rel=1e-6) and test["panned_by"] > 0
    assert test["dense_zoomed"] == 0 and test["selected"]  # zoomed in: one box per instruction
    assert test["collapsed_lanes"] == [3 * LONG_CORES, 0]  # folding the AIV cores hides their lanes
    pixels = read_png(tmp_path / "long.png")
    for pipe in ("MTE2", "VECTOR", "MTE3"):
        assert count_color(pixels, PIPE_RGB[pipe]) > 100 * SWATCH, pipe
    data = _page_meta(page)
    core = report.cores()[0]
    assert {(x["pipe"], x["busy"]) for x in data["lanes"] if x["core"] == 0} == {
        (p, core.busy[p]) for p in ("MTE2", "VECTOR", "MTE3")
    }
    assert data["hot"] == [r.to_dict() for r in report.hot_lines(top=len(data["hot"]))]
    loads = (
        Path(__file__)
        .read_text()
        .splitlines()
        .index("                tile = pl.load(a, [blk * LONG_ROWS, 0], [LONG_ROWS, 8])")
    )
    assert data["hot"][0]["source"] == f"{__file__}:{loads + 1}:16" and data["hot"][0]["pipe"] == "MTE2"


def test_a_copied_output_folder_keeps_its_instruction_lanes(tmp_path: Path, caplog):
    """run.json names the trace files relative to itself: a copied folder still draws every
    instruction; a trace file that went missing is a warning naming it, not silence."""
    import shutil

    report = _traced_pipelined(tmp_path / "build")
    saved = json.loads((tmp_path / "build" / "report" / "run.json").read_text())
    assert all(not Path(p).is_absolute() for p in saved["trace_paths"]) and saved["trace_paths"]
    shutil.copytree(tmp_path / "build", tmp_path / "copy")
    shutil.rmtree(tmp_path / "build")
    page = timeline.write_page(timeline.load_model(tmp_path / "copy"), tmp_path / "copy.html")
    assert _page_data(page)["events"] == sum(len(t.trace) for t in report.tasks) > 0
    loaded = RunReport.load(tmp_path / "copy" / "report" / "run.json")
    assert loaded.trace_paths == [
        str((tmp_path / "copy" / "report" / p).resolve()) for p in saved["trace_paths"]
    ]
    (trace,) = loaded.trace_paths
    Path(trace).unlink()
    with caplog.at_level("WARNING"):
        RunReport.load(tmp_path / "copy" / "report" / "run.json")
    assert f"names a trace file that is missing: {trace}" in caplog.text


def test_the_folder_page_reads_the_records_file_and_falls_back_to_the_traces(tmp_path: Path, caplog):
    """A traced run saves its records beside run.json (narrow columns, lossless); the folder's
    page is built from them. Without that file, or with one from another run (a warning names
    it), the page comes from the kernels' TRACE JSON and still draws every instruction."""
    from pypto.report.records_file import attach_records

    report = _traced_pipelined(tmp_path / "build")
    folder = tmp_path / "build" / "report"
    loaded = RunReport.load(folder / "run.json")
    assert attach_records(loaded, folder / "records.npz")
    for mine, back in zip(report.tasks, loaded.tasks):
        np.testing.assert_array_equal(back.trace.raw["table"], mine.trace.raw["table"])
        assert back.trace.columns["name"] == mine.trace.columns["name"]
        assert back.trace.columns["loc"] == mine.trace.columns["loc"]
    assert loaded.hot_lines() == report.hot_lines()
    direct = _page_data(report.timeline_html(tmp_path / "direct.html"))

    def from_folder() -> dict:
        return _page_data(timeline.write_page(timeline.load_model(tmp_path / "build"), tmp_path / "f.html"))

    (folder / "records.npz").rename(tmp_path / "records.npz")
    assert sorted(from_folder()["rows"]) == sorted(direct["rows"])  # from the TRACE JSON
    other = RunReport.load(folder / "run.json")
    other.tasks[0].start += 1  # the records of a run whose tasks started elsewhere
    other.tasks[0].trace = report.tasks[0].trace
    from pypto.report.records_file import save_records

    save_records(other, folder / "records.npz")
    with caplog.at_level("WARNING"):
        assert sorted(from_folder()["rows"]) == sorted(direct["rows"])
    assert "records.npz: not read (the tasks start at other cycles than in run.json)" in caplog.text
    (folder / "records.npz").write_bytes(b"not a zip")
    with caplog.at_level("WARNING"):
        assert sorted(from_folder()["rows"]) == sorted(direct["rows"])
    assert caplog.text.count("falls back to the kernels' traces") == 2


@pl.jit
def exp_three_times(out: pl.Out[pl.Tensor]):
    for _i in pl.range(3):  # one after another: three launches of one kernel, one container
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.store(pl.exp(pl.load(out, [0, 0], [16, 128])), [0, 0], out)
    return out


def test_the_folder_page_of_a_kernel_launched_again_places_each_launch_from_its_container(tmp_path: Path):
    """Without records.npz the page reads each kernel's container, which holds every launch of
    it from the earliest one's start: each instruction lands at its run cycle."""
    out = np.full((16, 128), 0.5, np.float32)
    exp_three_times(out, config=RunConfig(trace=True, output_dir=tmp_path / "build"))
    report = exp_three_times.last_report
    assert len(report.tasks) == 3 and len(report.trace_paths) == 1
    direct = _page_data(report.timeline_html(tmp_path / "direct.html"))
    (tmp_path / "build" / "report" / "records.npz").unlink()
    page = timeline.write_page(timeline.load_model(tmp_path / "build"), tmp_path / "f.html")
    rows = _page_data(page)["rows"]
    assert len(rows) == len(direct["rows"]) and sorted(rows) == sorted(direct["rows"])


def test_the_records_file_is_what_numpy_savez_writes_of_the_narrowest_columns(tmp_path: Path):
    """records.npz is written member by member without numpy's chunk copies: byte for byte the
    file ``np.savez`` makes of the same arrays, each column in the first signed type that holds
    its smallest and largest value."""
    from unittest import mock

    from pypto import _native
    from pypto.report.records_file import save_records

    report = _traced_pipelined(tmp_path / "build")
    with mock.patch("time.time", return_value=1.7e9):  # the zip members' timestamps
        save_records(report, tmp_path / "mine.npz")
        with np.load(tmp_path / "mine.npz") as data:
            arrays = {k: data[k] for k in data.files}
        np.savez(tmp_path / "numpy.npz", **arrays)  # type: ignore[arg-type]
    assert (tmp_path / "mine.npz").read_bytes() == (tmp_path / "numpy.npz").read_bytes()
    for bits in (8, 16, 32, 64):
        info = np.iinfo(f"int{bits}")
        for edge in (info.min, info.max):
            tables = [np.array([[0, 1]], np.int64), np.array([[edge, 2], [3, 4]], np.int64)]
            first, second = _native.narrow_record_tables(tables)
            assert first.dtype == np.dtype(f"int{bits}") and second.dtype == np.int8
            np.testing.assert_array_equal(first, [0, edge, 3])
            np.testing.assert_array_equal(second, [1, 2, 4])
    (empty,) = _native.narrow_record_tables([np.zeros((0, 1), np.int64)])
    assert empty.dtype == np.int8 and len(empty) == 0
    with mock.patch("time.time", return_value=1.7e9):  # again: into the block the first one kept
        save_records(report, tmp_path / "again.npz")
    assert (tmp_path / "again.npz").read_bytes() == (tmp_path / "numpy.npz").read_bytes()


@pytest.mark.parametrize("width", [1, 11, 16, 17, 23])  # widths up to 16 compiled each, then any
def test_narrowed_columns_of_several_tables_hold_every_value_in_the_narrowest_type(width):
    rng = np.random.default_rng(width)
    limits = [1 << 6, 1 << 14, 1 << 30, 1 << 62]  # column c's values fit int8, int16, ... in turn
    tables = []
    for rows in (37, 0, 1000):  # rows across several 16-row blocks, an empty table between
        table = np.stack([rng.integers(-limits[c % 4], limits[c % 4], rows) for c in range(width)], axis=1)
        tables.append(table.reshape(rows, width).astype(np.int64))
    from pypto import _native

    columns = _native.narrow_record_tables(tables)
    whole = np.concatenate(tables)
    for c, column in enumerate(columns):
        assert column.dtype == [np.int8, np.int16, np.int32, np.int64][c % 4]
        np.testing.assert_array_equal(column, whole[:, c])


def test_narrowed_columns_of_large_tables_take_every_value_the_row_sample_missed():
    """From 65,536 rows the types are chosen from a sample of rows (each table's first 4096, then
    every 61st, its last) and the narrowing checks them: a wider value between the sampled rows
    has its column narrowed again in the exact type, whatever other columns the sample got."""
    from pypto import _native

    rng = np.random.default_rng(5)
    first = np.stack([rng.integers(-100, 100, 40_000), rng.integers(0, 30_000, 40_000)], axis=1)
    second = np.stack([rng.integers(-100, 100, 30_000), rng.integers(0, 30_000, 30_000)], axis=1)
    tables = [first.astype(np.int64), second.astype(np.int64)]
    whole = np.concatenate(tables)
    columns = _native.narrow_record_tables(tables)  # the sample sees both types
    assert [c.dtype for c in columns] == [np.int8, np.int16]
    for column, want in zip(columns, whole.T):
        np.testing.assert_array_equal(column, want)
    for table, row, value in ((0, 4096 + 62, -129), (1, 4096 + 1, 1 << 40), (1, 29_998, -(1 << 20))):
        wider = [t.copy() for t in tables]
        wider[table][row, 0] = value  # in no sample: after the prefix, off the step, not last
        spare = np.zeros(4 * len(whole), np.uint8)  # large enough for the sample's types only
        columns = _native.narrow_record_tables(wider, spare)
        want = np.concatenate(wider)
        assert columns[0].dtype == np.min_scalar_type(-abs(value)) and columns[1].dtype == np.int16
        for column, values in zip(columns, want.T):
            np.testing.assert_array_equal(column, values)


def test_narrowed_columns_fill_a_spare_block_large_enough_and_only_then():
    """The columns are views of one block: the spare passed in when it holds them all (each
    column 8-byte aligned), else a new one; what the spare held before never shows."""
    from pypto import _native

    table = np.array([[1, -300, 70_000], [2, 5, 6]], np.int64)
    spare = np.full(64, 0x55, np.uint8)
    columns = _native.narrow_record_tables([table], spare)
    assert all(c.base is spare for c in columns)
    assert [c.dtype for c in columns] == [np.int8, np.int16, np.int32]
    assert [c.ctypes.data - spare.ctypes.data for c in columns] == [0, 8, 16]
    for column, want in zip(columns, table.T):
        np.testing.assert_array_equal(column, want)
    small = np.zeros(23, np.uint8)  # one byte short of the three columns
    assert all(c.base is not small for c in _native.narrow_record_tables([table], small))
    assert not small.any()


def _made_up_task(name: str, core: str, start: int, ops: list[tuple[str, str]]) -> SimpleNamespace:
    """A task whose records are ``ops`` (name, source line) on VECTOR, 3 cycles apart, its string
    table of its own (in order of first use)."""
    from pypto.report.run_report import RECORD_COLUMNS, InstrTrace

    col = {c: i for i, c in enumerate(RECORD_COLUMNS)}
    strings = list(dict.fromkeys(s for op in ops for s in op))
    table = np.zeros((len(ops), len(RECORD_COLUMNS)), np.int64)
    table[:, col["pipe"]] = PIPES.index("VECTOR")
    table[:, col["start"]] = np.arange(len(ops)) * 3
    table[:, col["end"]] = table[:, col["start"]] + 2
    table[:, col["flag_id"]] = -1
    raw = {"table": table, "strings": strings,
           "name_id": np.array([strings.index(n) for n, _ in ops], np.int32),
           "loc_id": np.array([strings.index(s) for _, s in ops], np.int32)}  # fmt: skip
    return SimpleNamespace(name=name, core_name=core, start=start, end=start + 3 * len(ops), deps=[],
                           trace=InstrTrace(raw))  # fmt: skip


def test_each_task_s_instructions_keep_their_names_lines_times_and_core():
    """Short tasks are read a batch at a time and a long one on its own: every instruction keeps
    its own task's name and source line (each task numbers its strings its own way), start and
    core, in task order."""
    from pypto.report.timeline import model_of_report

    tasks = [
        _made_up_task("k1", "AIV0", 100, [("TADD", "a.py:1:1"), ("TMUL", "a.py:2:1")]),
        _made_up_task(
            "k2", "AIV1", 200, [("TLOAD", "b.py:7:3"), ("TADD", "b.py:8:3"), ("TLOAD", "b.py:7:3")]
        ),
        _made_up_task("k3", "AIV0", 300, [("TEXP", "c.py:5:5")] * 1500),  # long: a part of its own
        _made_up_task("k1", "AIV1", 400, [("TADD", "a.py:1:1"), ("TMUL", "a.py:2:1")]),
    ]
    report = SimpleNamespace(bound=None, platform="a2a3sim", clock_hz=1e9, cycles=10_000, tasks=tasks)
    model = model_of_report(report, title="made up")  # type: ignore[arg-type]
    ev = model.columns()
    strings = list(model.strings)
    want = [(t.core_name, t.start + 3 * i, n, s) for t in tasks for i, (n, s) in
            enumerate(zip(t.trace.columns["name"], t.trace.columns["loc"]))]  # fmt: skip
    rows = zip(*(ev[k].tolist() for k in ("core", "start", "name", "source")))
    got = [(model.cores[c], start, strings[n], strings[s]) for c, start, n, s in rows]
    assert got == want


def test_a_record_naming_a_string_past_its_table_is_an_error_naming_its_task():
    """(Read back from a damaged records file, say.) Joined with the tasks after it, the id
    would read their strings: it is refused instead."""
    from pypto.report.timeline import TimelineError, model_of_report

    tasks = [
        _made_up_task("k1", "AIV0", 0, [("TADD", "a.py:1:1")]),
        _made_up_task("k2", "AIV1", 9, [("TMUL", "b.py:1:1")]),
    ]
    tasks[0].trace.raw["loc_id"][0] = 2  # k1's table holds two strings
    report = SimpleNamespace(bound=None, platform="a2a3sim", clock_hz=1e9, cycles=100, tasks=tasks)
    with pytest.raises(TimelineError, match="the records of k1 on AIV0 name a string past their table"):
        model_of_report(report, title="bad")  # type: ignore[arg-type]
