"""The native raw-trace writer (csrc/tools/trace_write.cpp, via pypto.report.trace): every
record becomes one event whose fields are the record's (its source line: the API_INSTR
block's, by its pc_addr), timestamps read back as exactly their
cycles (1 trace ns = 1 cycle) whether a reader truncates or rounds, the API_INSTR totals match
the records, and bad input or an unwritable folder is an error, not a crash."""

from __future__ import annotations

import json
import re
from decimal import Decimal
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import seed_kernels as tk

from pypto import _native
from pypto.report.opprof_format import API_INSTR, SOURCE, TRACE, iter_blocks, source_lines
from pypto.report.run_report import PIPES, RECORD_COLUMNS
from pypto.report.trace import CoreRecords, pipe_flows, write_container
from pypto.runtime import RunConfig

A = (np.arange(tk.ROWS * tk.TC) % 3 - 1).astype(np.float32).reshape(tk.ROWS, tk.TC)
SYNC = {1: "SET_FLAG", 2: "WAIT_FLAG", 3: "BAR"}


@pytest.fixture(scope="module")
def traced(tmp_path_factory: pytest.TempPathFactory):
    out = tmp_path_factory.mktemp("traced")
    tk.pipelined(A, np.zeros_like(A), config=RunConfig(trace=True, trace_json=True, output_dir=out))
    rep = tk.pipelined.last_report
    (path,) = map(Path, rep.trace_paths)
    return rep, path


def x_events(text: str) -> list[dict]:
    return [e for e in json.loads(text)["traceEvents"] if e["ph"] == "X"]


def test_each_record_is_one_event_with_its_fields(traced):
    rep, path = traced
    rows = rep.tasks[0].trace.rows()
    evs = x_events((path.parent / "trace.json").read_text())
    api = next(b.payload for b in iter_blocks(path.read_bytes()) if b.type == API_INSTR)
    lines = source_lines(json.loads(api))
    assert len(evs) == len(rows)
    for e, r in zip(evs, rows):  # in record (program) order
        assert e["tid"] == PIPES[r["pipe"]] and round(e["dur"] * 1000) == r["end"] - r["start"]
        if r["kind"] == 0:
            assert e["name"] == r["name"]
            assert set(e["args"]) == {"pc_addr", "bytes"}  # addr: in records.npz
            assert e["args"]["bytes"] == r["bytes"]
        else:
            assert e["name"] == SYNC[r["kind"]] and e["args"]["detail"].startswith("PIPE:")
            assert set(e["args"]) == {"detail", "pc_addr"}
        assert lines[e["args"]["pc_addr"]] == r["loc"]  # the source line: API_INSTR's, by address


def read_back(ts: str) -> tuple[int, int]:
    """A timestamp as integer nanoseconds, truncated (as Perfetto reads it) and rounded."""
    ns = float(ts) * 1000
    return int(ns), round(ns)


def test_timestamps_read_back_as_their_cycles(traced):
    rep, path = traced
    text = (path.parent / "trace.json").read_text()
    stamps = re.findall(r'"ts":([0-9.]+),"dur":([0-9.]+)', text)
    rows = rep.tasks[0].trace.rows()
    assert len(stamps) == len(rows)
    for (ts, dur), r in zip(stamps, rows):
        assert read_back(ts) == (r["start"], r["start"])
        assert read_back(dur) == (r["end"] - r["start"],) * 2
    other = json.loads(text)["otherData"]
    assert other["time_unit"] == "cycle" and other["clock_hz"] == rep.clock_hz


def test_no_timestamp_lands_early(traced, tmp_path: Path):
    """Every cycle count up to 20,000 and a few past a billion, as a start and as a duration:
    read back truncated or rounded, each is its cycle; the number written is the decimal
    cycles / 1000 itself unless that decimal's double falls a hair below it (then the next
    double up, never more than a millionth of a nanosecond late)."""
    rep, _ = traced
    col = {name: i for i, name in enumerate(RECORD_COLUMNS)}
    raw = dict(rep.tasks[0].trace.raw)
    op = int(np.nonzero(raw["table"][:, col["kind"]] == 0)[0][0])
    cycles = np.r_[np.arange(20_000), 10**9 + 997 * np.arange(2_000)]
    raw["table"] = raw["table"][np.full(len(cycles), op)].copy()
    raw["table"][:, col["start"]] = cycles
    durations = cycles[::-1]
    raw["table"][:, col["end"]] = cycles + durations
    raw["name_id"], raw["loc_id"] = (raw[k][np.full(len(cycles), op)] for k in ("name_id", "loc_id"))
    (tmp_path / "sim").mkdir()
    core = CoreRecords("core0.veccore0", SimpleNamespace(raw=raw))  # type: ignore[arg-type]
    bin_path = write_container([core], tmp_path / "sim", rep.clock_hz)
    text = next(b.payload for b in iter_blocks(bin_path.read_bytes()) if b.type == TRACE).decode()
    stamps = re.findall(r'"ts":([0-9.]+),"dur":([0-9.]+)', text)
    assert len(stamps) == len(cycles)
    nudged = 0
    for (ts, dur), c, d in zip(stamps, cycles.tolist(), durations.tolist()):
        for text_, value in ((ts, c), (dur, d)):
            assert read_back(text_) == (value, value), text_
            late = Decimal(text_) * 1000 - value
            assert 0 <= late < Decimal("1e-6")
            nudged += late > 0
            assert late > 0 or Decimal(text_) == Decimal(value) / 1000
    assert nudged > 0  # the encoding matters: some cycle decimals do read back low


def test_repeated_durations_and_bytes_read_back_per_event(traced, tmp_path: Path):
    """An operation's text after its timestamp is reused while its duration and bytes repeat
    the execution before: runs of repeats, changes, and returns to an earlier pair all read
    back as each event's own values."""
    rep, _ = traced
    col = {name: i for i, name in enumerate(RECORD_COLUMNS)}
    raw = dict(rep.tasks[0].trace.raw)
    op = int(np.nonzero(raw["table"][:, col["kind"]] == 0)[0][0])
    durations = [5, 5, 5, 7, 7, 5, 5, 1000, 1000, 1000, 7, 5, 5, 5]
    nbytes = [32, 32, 32, 32, 32, 32, 64, 64, 64, 32, 32, 32, 32, 64]
    raw["table"] = raw["table"][np.full(len(durations), op)].copy()
    raw["table"][:, col["start"]] = np.arange(len(durations)) * 2000
    raw["table"][:, col["end"]] = raw["table"][:, col["start"]] + durations
    raw["table"][:, col["bytes"]] = nbytes
    raw["name_id"], raw["loc_id"] = (raw[k][np.full(len(durations), op)] for k in ("name_id", "loc_id"))
    (tmp_path / "sim").mkdir()
    core = CoreRecords("core0.veccore0", SimpleNamespace(raw=raw))  # type: ignore[arg-type]
    bin_path = write_container([core], tmp_path / "sim", rep.clock_hz)
    evs = x_events(next(b.payload for b in iter_blocks(bin_path.read_bytes()) if b.type == TRACE).decode())
    assert [round(e["dur"] * 1000) for e in evs] == durations
    assert [e["args"]["bytes"] for e in evs] == nbytes
    assert [round(e["ts"] * 1000) for e in evs] == list(range(0, 2000 * len(durations), 2000))


def _pipe_core(pid: str, ends: list[tuple[str, int, int, int]], offset: int = 0) -> CoreRecords:
    """Made-up records of a core's tile pipe ops: (TPUSH or TPOP, from, to, start) each, on
    pipe 0, an add between each two (not an end of a pipe)."""
    col = {name: i for i, name in enumerate(RECORD_COLUMNS)}
    strings = ["TADD", "TPOP", "TPUSH", "k.py:1:1"]
    table = np.zeros((2 * len(ends), len(RECORD_COLUMNS)), np.int64)
    names = np.zeros(2 * len(ends), np.int32)
    for i, (op, src, dst, start) in enumerate(ends):
        row = table[2 * i]
        row[[col["flag_src"], col["flag_dst"], col["flag_id"]]] = src, dst, 0
        row[col["pipe"]] = PIPES.index("FIXPIPE" if op == "TPUSH" else "MTE2")
        row[col["start"]], row[col["end"]] = start, start + 5
        names[2 * i] = strings.index(op)
        table[2 * i + 1, [col["start"], col["end"], col["flag_id"]]] = start + 5, start + 6, -1
    raw = {"table": table, "strings": strings, "name_id": names, "loc_id": np.full_like(names, 3)}
    return CoreRecords(pid, SimpleNamespace(raw=raw), offset)  # type: ignore[arg-type]


def test_each_push_is_drawn_to_the_pop_of_its_own_cluster_and_launch(tmp_path: Path):
    """Two clusters' AICs push to their first AIV on tile pipe 0; cluster 0's last push is never
    popped (a run cut short), and a later launch uses cluster 0 again. The k-th push of a
    route of one cluster in one launch pairs with its k-th pop, so no arrow crosses to another
    cluster or launch; each end is drawn where its slice is, and a core of a launch without
    tile pipes (no place) is left out."""
    cores = [
        _pipe_core("core0.cubecore0", [("TPUSH", 0, 1, t) for t in (10, 20, 30)]),
        _pipe_core("core0.veccore0", [("TPOP", 0, 1, t) for t in (15, 1001)]),
        _pipe_core("core1.cubecore0", [("TPUSH", 0, 1, t) for t in (12, 22)], offset=1000),
        _pipe_core("core1.veccore0", [("TPOP", 0, 1, t) for t in (17, 27)], offset=1000),
        _pipe_core("core0.cubecore0", [("TPUSH", 0, 1, 5)], offset=5000),
        _pipe_core("core0.veccore0", [("TPOP", 0, 1, 8)], offset=5000),
        _pipe_core("core0.veccore0", [("TPOP", 0, 1, 9)], offset=9000),
    ]
    places = [(0, 0, 0), (0, 0, 1), (0, 1, 0), (0, 1, 1), (1, 0, 0), (1, 0, 1), None]
    path = write_container(cores, tmp_path, 1e9, flows=pipe_flows(cores, places))
    events = json.loads(next(b.payload for b in iter_blocks(path.read_bytes()) if b.type == TRACE))[
        "traceEvents"
    ]
    arrows: dict[int, dict[str, tuple]] = {}
    for e in events:
        if e.get("cat") == "tpipe":
            assert e["name"] == "tile pipe 0" and (e["ph"] == "s") != (e.get("bp") == "e")
            arrows.setdefault(e["id"], {})[e["ph"]] = (e["pid"], e["tid"], round(e["ts"] * 1000))
    assert [arrows[i]["s"][2] for i in sorted(arrows)] == [10, 20, 1012, 1022, 5005]  # launch by launch
    assert sorted((a["s"], a["f"]) for a in arrows.values()) == [
        (("core0.cubecore0", "FIXPIPE", 10), ("core0.veccore0", "MTE2", 15)),
        (("core0.cubecore0", "FIXPIPE", 20), ("core0.veccore0", "MTE2", 1001)),
        (("core0.cubecore0", "FIXPIPE", 5005), ("core0.veccore0", "MTE2", 5008)),
        (("core1.cubecore0", "FIXPIPE", 1012), ("core1.veccore0", "MTE2", 1017)),
        (("core1.cubecore0", "FIXPIPE", 1022), ("core1.veccore0", "MTE2", 1027)),
    ]


def test_flow_timestamps_read_back_as_their_cycles(tmp_path: Path):
    """The arrows' ends are written as the records' events are: truncated or rounded to
    integer nanoseconds, each reads back as its cycle."""
    cycles = [*range(20_000), 10**12 + 1]
    core = _pipe_core("core0.cubecore0", [("TPUSH", 0, 1, 0)])
    flows = np.array([[i, 0, 0, PIPES.index("MTE3"), c, i % 2] for i, c in enumerate(cycles)], np.int64)
    path = write_container([core], tmp_path, 1e9, flows=flows)
    events = json.loads(next(b.payload for b in iter_blocks(path.read_bytes()) if b.type == TRACE))[
        "traceEvents"
    ]
    got = [Decimal(str(e["ts"])) * 1000 for e in events if e.get("cat") == "tpipe"]
    assert [int(t) for t in got] == cycles and [round(t) for t in got] == cycles


def test_container_blocks_and_api_totals_match_the_records(traced):
    rep, path = traced
    blocks = {b.type: b for b in iter_blocks(path.read_bytes())}
    assert sorted(blocks) == [SOURCE, TRACE, API_INSTR]
    assert blocks[TRACE].payload == (path.parent / "trace.json").read_bytes()
    api = json.loads(blocks[API_INSTR].payload)
    rows = rep.tasks[0].trace.rows()
    pcs = {e["args"]["pc_addr"] for e in x_events(blocks[TRACE].payload)}
    assert {i["Address"] for i in api["Instructions"]} == pcs
    assert sum(i["Instructions Executed"][0] for i in api["Instructions"]) == len(rows)
    assert sum(i["Cycles"][0] for i in api["Instructions"]) == sum(r["end"] - r["start"] for r in rows)
    for instr in api["Instructions"]:
        mine = [r for r in rows if (r["name"], r["loc"], PIPES[r["pipe"]]) == (
            instr["Source"], instr["AscendC Inner Code"], instr["Pipe"])]  # fmt: skip
        assert instr["Instructions Executed"] == [len(mine)]
        assert instr["Process Bytes"] == [sum(r["bytes"] for r in mine)]
        first = mine[0]["addr"]
        assert instr["Buffer Address"] == [f"0x{first:x}" if first >= 0 else ""]


def test_bad_records_and_unwritable_folder_are_errors(traced, tmp_path: Path):
    rep, _ = traced
    trace = rep.tasks[0].trace
    with pytest.raises(OSError, match="cannot create"):
        write_container([CoreRecords("core0.veccore0", trace)], tmp_path / "missing" / "sim", rep.clock_hz)
    raw = dict(trace.raw)
    raw["name_id"] = np.full_like(raw["name_id"], 10_000)
    quoted = [json.dumps(s) for s in raw["strings"]]
    layout = {
        "columns": list(range(3, 12)),
        "lanes": list(PIPES),
        "flag_pipes": list(PIPES),
        "sync_names": ["", "S", "W", "B"],
        "repeat_bytes": 256,
        "pc_base": 0,
        "head": "[",
        "tail": "]",
    }
    with pytest.raises(ValueError, match="column position"):  # column 11 of an 11-column table
        _native.write_trace([("c", raw, quoted, 0, 0)], layout, b"", str(tmp_path / "a"), str(tmp_path / "b"))
    layout["columns"] = list(range(1, 10))
    with pytest.raises(ValueError, match="out-of-range"):
        _native.write_trace([("c", raw, quoted, 0, 0)], layout, b"", str(tmp_path / "a"), str(tmp_path / "b"))
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()  # nothing left behind
    # A write that fails on a writer thread (a full device) is the same error, naming the file.
    good = [("c", trace.raw, [json.dumps(s) for s in trace.raw["strings"]], 0, 0)]
    layout["columns"] = [1, 2, 4, 5, 6, 7, 8, 9, 10]  # RECORD_COLUMNS without index and issue
    with pytest.raises(OSError, match="cannot write /dev/full: No space left"):
        _native.write_trace(good, layout, b"", "/dev/full", str(tmp_path / "b"))
    # A tile pipe arrow drawn in a core that is not written, or on no lane: nothing written.
    for bad_flow in ([1, 0, 1, 0, 5, 0], [1, 0, 0, len(PIPES), 5, 0], [1, 0, 0, 0, 5, 2]):
        flows = np.array([bad_flow], np.int64)
        with pytest.raises(ValueError, match="tile pipe flow 1: no such core entry, lane or end"):
            _native.write_trace(
                good, {**layout, "flows": flows}, b"", str(tmp_path / "c"), str(tmp_path / "d")
            )
        assert not (tmp_path / "c").exists() and not (tmp_path / "d").exists()


@pytest.mark.parametrize("rows", [0, 1, 7, 8, 9, 1001])
def test_the_records_by_column_are_the_table_transposed(rows: int):
    """The writers read the records a column at a time from one native transpose (eight rows
    a step, the rest one by one): every value lands in its column, at its row."""
    table = np.arange(rows * len(RECORD_COLUMNS), dtype=np.int64).reshape(rows, len(RECORD_COLUMNS)) * 7 - 3
    by_column = _native.record_columns(table)
    assert by_column.shape == (len(RECORD_COLUMNS), rows) and by_column.flags.c_contiguous
    assert np.array_equal(by_column, table.T)


def test_a_run_s_records_by_column_match_its_rows(traced):
    rep, _ = traced
    for task in rep.tasks:
        assert np.array_equal(task.trace.by_column, task.trace.raw["table"].T)


def test_a_bad_record_anywhere_leaves_no_file_and_no_changed_file(tmp_path: Path):
    """Records are checked as they are formatted (new files: removed on a bad one, even after
    megabytes were written) or before a byte is written (a file that exists already)."""
    rows, cols = 200_000, len(RECORD_COLUMNS)
    table = np.zeros((rows, cols), np.int64)
    col = {name: i for i, name in enumerate(RECORD_COLUMNS)}
    table[:, col["start"]] = np.arange(rows) * 3
    table[:, col["end"]] = table[:, col["start"]] + 2
    table[:, col["pipe"]] = PIPES.index("VECTOR")
    raw = {"table": table, "name_id": np.zeros(rows, np.int32), "loc_id": np.zeros(rows, np.int32),
           "strings": ["TADD"]}  # fmt: skip
    layout = {"columns": [col[c] for c in ("kind", "pipe", "start", "end", "bytes", "addr", "flag_src",
                                           "flag_dst", "flag_id")],
              "lanes": list(PIPES), "flag_pipes": list(PIPES), "sync_names": ["", "S", "W", "B"],
              "repeat_bytes": 256, "pc_base": 0, "head": "[", "tail": "]"}  # fmt: skip
    good = ("core0.veccore0", raw, ['"TADD"'], 0, 0)
    for field, value, row in (("pipe", len(PIPES), 180_000), ("kind", 4, 199_999), ("loc_id", 1, 150_000)):
        bad = {**raw, "table": table.copy(), "loc_id": raw["loc_id"].copy()}
        if field == "loc_id":
            bad["loc_id"][row] = value
        else:
            bad["table"][row, col[field]] = value
        cores = [good, ("core0.veccore1", bad, ['"TADD"'], 0, 1)]  # the second core's row is bad
        paths = [tmp_path / f"{field}.json", tmp_path / f"{field}.bin"]
        message = f"trace record {row} of core0.veccore1 has an out-of-range"
        with pytest.raises(ValueError, match=message):
            _native.write_trace(cores, layout, b"", str(paths[0]), str(paths[1]))
        assert not any(p.exists() for p in paths)
        paths[1].write_bytes(b"mine")  # an existing file: checked first, left as it was
        with pytest.raises(ValueError, match=message):
            _native.write_trace(cores, layout, b"", "", str(paths[1]))
        assert paths[1].read_bytes() == b"mine"
    _native.write_trace([good, good], layout, b"", "", str(tmp_path / "ok.bin"))  # one core twice
    assert (tmp_path / "ok.bin").stat().st_size > 2 * rows * 80  # every event written


def _api_instr(tmp_path: Path, cores: dict[str, list[tuple]]) -> tuple[dict, str]:
    """The API_INSTR block write_container writes for made-up records: per core pid, rows of
    (name, source, pipe, bytes, addr, cycles). Returns it parsed, and as text."""
    col = {name: i for i, name in enumerate(RECORD_COLUMNS)}
    records = []
    for pid, rows in cores.items():
        strings = sorted({r[0] for r in rows} | {r[1] for r in rows})
        table = np.zeros((len(rows), len(RECORD_COLUMNS)), np.int64)
        for i, (_, _, pipe, nbytes, addr, cycles) in enumerate(rows):
            table[i, [col["pipe"], col["bytes"], col["addr"]]] = PIPES.index(pipe), nbytes, addr
            table[i, col["start"]], table[i, col["end"]] = 10 * i, 10 * i + cycles
        table[:, col["flag_id"]] = -1
        raw = {"table": table, "strings": strings,
               "name_id": np.array([strings.index(r[0]) for r in rows], np.int32),
               "loc_id": np.array([strings.index(r[1]) for r in rows], np.int32)}  # fmt: skip
        records.append(CoreRecords(pid, SimpleNamespace(raw=raw)))  # type: ignore[arg-type]
    path = write_container(records, tmp_path, 1e9)
    (payload,) = [b.payload for b in iter_blocks(path.read_bytes()) if b.type == API_INSTR]
    return json.loads(payload), bytes(payload).decode()


def test_the_api_instr_block_totals_each_instruction_per_core(tmp_path: Path):
    add, load = ("TADD", 'k "q".py:3:1'), ("TLOAD", "k\\é.py:2:5")
    doc, text = _api_instr(
        tmp_path,
        {
            "core0.veccore0": [
                (*add, "VECTOR", 300, 0x40, 4),
                (*load, "MTE2", 64, 0x100, 9),
                (*add, "VECTOR", 212, 0x50, 6),
            ],
            "core1.veccore0": [
                (*add, "VECTOR", 1, 0x80, 1),
                (*add, "VECTOR", 1, 0x90, 2),
                (*add, "VECTOR", 254, 0xA0, 2),
            ],
        },
    )
    assert doc["Cores"] == ["core0.veccore0", "core1.veccore0"]
    first, second = doc["Instructions"]
    assert (first["Source"], first["AscendC Inner Code"], first["Pipe"]) == ("TADD", 'k "q".py:3:1', "VECTOR")
    assert (first["Instructions Executed"], first["Cycles"], first["Process Bytes"]) == (
        [2, 3],
        [10, 5],
        [512, 256],
    )
    # bytes over whole 256-byte repeats: 512 of 768, 256 of 768
    assert first["Vector Utilization Percentage"] == [66.67, 33.33]
    assert first["Buffer Address"] == ["0x40", "0x80"]  # each core's first execution's
    assert (second["AscendC Inner Code"], second["Pipe"], second["Instructions Executed"]) == (
        "k\\é.py:2:5",
        "MTE2",
        [1, 0],
    )
    assert second["Vector Utilization Percentage"] == [-1.0, -1.0] and second["Buffer Address"] == [
        "0x100",
        "",
    ]
    assert int(second["Address"], 16) == int(first["Address"], 16) + 4
    assert set(doc["Instructions Dtype"]["Instructions"]) == set(first)
    assert (
        '"k\\\\\\u00e9.py:2:5"' in text and '"Vector Utilization Percentage":[-1.0,-1.0]' in text
    )  # as json writes


def test_vector_utilisation_is_numpy_s_round_to_two_places_written_as_python_does(tmp_path: Path):
    rng = np.random.default_rng(3)
    moved = [int(b) for b in rng.integers(1, 5000, 300)] + [256, 512, 1, 255]
    rows = [(f"T{i}", "k.py:1:1", "VECTOR", b, 0, 1) for i, b in enumerate(moved)]
    doc, text = _api_instr(tmp_path, {"core0.veccore0": rows})
    room = np.ceil(np.array(moved) / 256) * 256
    want = np.round(100.0 * np.array(moved) / room, 2).tolist()
    assert [site["Vector Utilization Percentage"] for site in doc["Instructions"]] == [[u] for u in want]
    written = re.findall(r'"Vector Utilization Percentage":\[([^\]]*)\]', text)
    assert written == [repr(u) for u in want]  # 100.0, not 100; 0.39, not 0.39000000000000001


def test_launches_of_one_core_with_their_own_string_tables_keep_their_names(tmp_path: Path):
    """Launches on one core share the text of each site they have in common, but not the ids:
    two launches numbering different names and lines alike each keep theirs; a third that
    repeats the first's table (another list, equal) shares its sites."""
    col = {name: i for i, name in enumerate(RECORD_COLUMNS)}

    def launch(strings: list[str], offset: int) -> CoreRecords:
        table = np.zeros((2, len(RECORD_COLUMNS)), np.int64)
        table[:, col["pipe"]] = PIPES.index("VECTOR")
        table[:, col["start"]], table[:, col["end"]] = [0, 10], [4, 14]
        table[:, col["flag_id"]] = -1
        raw = {"table": table, "strings": strings, "name_id": np.array([0, 0], np.int32),
               "loc_id": np.array([1, 1], np.int32)}  # fmt: skip
        return CoreRecords("core0.veccore0", SimpleNamespace(raw=raw), offset)  # type: ignore[arg-type]

    cores = [
        launch(["TADD", "a.py:1:1"], 0),
        launch(["TMUL", "b.py:2:2"], 100),
        launch(["TADD", "a.py:1:1"], 200),
    ]
    path = write_container(cores, tmp_path, 1e9)
    blocks = {b.type: b.payload for b in iter_blocks(path.read_bytes())}
    events = x_events(blocks[TRACE].decode())
    assert [(e["name"], round(e["ts"] * 1000)) for e in events] == [
        ("TADD", 0), ("TADD", 10), ("TMUL", 100), ("TMUL", 110), ("TADD", 200), ("TADD", 210)
    ]  # fmt: skip
    lines = source_lines(json.loads(blocks[API_INSTR]))
    assert [lines[e["args"]["pc_addr"]] for e in events] == ["a.py:1:1"] * 2 + ["b.py:2:2"] * 2 + [
        "a.py:1:1"
    ] * 2
    instrs = json.loads(blocks[API_INSTR])["Instructions"]
    assert [(i["Source"], i["Instructions Executed"]) for i in instrs] == [("TADD", [4]), ("TMUL", [2])]


@pytest.mark.parametrize("json_copy", [False, True])
def test_a_container_written_over_a_longer_file_holds_only_the_new_bytes(traced, tmp_path: Path, json_copy):
    # The native writer writes over a file (it is not emptied at the open) and cuts it at the
    # end of the new bytes: a folder written again ends up as one written fresh.
    rep, _ = traced
    core = CoreRecords("core0.veccore0", rep.tasks[0].trace)
    (tmp_path / "again").mkdir()
    for name in ("visualize_data.bin", "trace.json"):
        (tmp_path / "again" / name).write_bytes(b"an older, longer container " * 40_000)
    again = write_container([core], tmp_path / "again", rep.clock_hz, json_copy=json_copy)
    (tmp_path / "fresh").mkdir()
    fresh = write_container([core], tmp_path / "fresh", rep.clock_hz, json_copy=json_copy)
    assert again.read_bytes() == fresh.read_bytes()
    if json_copy:
        assert (again.parent / "trace.json").read_bytes() == (fresh.parent / "trace.json").read_bytes()


def test_a_failed_write_over_a_longer_file_keeps_none_of_its_old_bytes(traced, tmp_path: Path, run_python):
    # Writes past a file-size limit fail (EFBIG) partway: the file written over is cut to the
    # new bytes, as an emptied file would hold, with nothing of the older file after them.
    rep, _ = traced
    fresh = write_container([CoreRecords("core0.veccore0", rep.tasks[0].trace)], tmp_path, rep.clock_hz)
    size = fresh.stat().st_size
    limit = size // 2
    old = tmp_path / "again" / "visualize_data.bin"
    old.parent.mkdir()
    old.write_bytes(b"O" * (2 * size))
    out = run_python(f"""
        import resource, signal
        import numpy as np, seed_kernels as tk
        from pypto.report.trace import CoreRecords, write_container
        from pypto.runtime import RunConfig
        A = (np.arange(tk.ROWS * tk.TC) % 3 - 1).astype(np.float32).reshape(tk.ROWS, tk.TC)
        tk.pipelined(A, np.zeros_like(A), config=RunConfig(trace=True, output_dir={str(tmp_path / "run")!r}))
        rep = tk.pipelined.last_report
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, ({limit}, resource.RLIM_INFINITY))
        core = CoreRecords("core0.veccore0", rep.tasks[0].trace)
        try:
            write_container([core], {str(old.parent)!r}, rep.clock_hz)
        except OSError as e:
            print("failed:", e)
    """)
    assert "failed:" in out.stdout, out.stdout + out.stderr
    data = old.read_bytes()
    assert len(data) <= limit and b"O" * 64 not in data
    assert data == fresh.read_bytes()[: len(data)]  # the new bytes written before the failure
