"""The whole-run Perfetto trace (``run.pftrace``), read back with a protobuf wire-format reader
written here from the format's rules: every instruction of every launch is one slice on its
core's pipe track, at its run cycle (1 ns = 1 cycle, integers), named by its interned
instruction name and source line; a few dozen bytes per instruction."""

from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from pypto.report.perfetto import varint
from pypto.report.run_report import PIPES
from pypto.runtime import RunConfig

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures"))
import gemm_kernels as gk  # noqa: E402
import seed_kernels as sk  # noqa: E402


def fields(data: bytes) -> list[tuple[int, int | bytes]]:
    """(field number, value) of one message: varints as ints, length-delimited as bytes."""
    out, i = [], 0
    while i < len(data):
        key, i = _varint(data, i)
        field, wire = key >> 3, key & 7
        if wire == 0:
            value, i = _varint(data, i)
            out.append((field, value))
        elif wire == 1:
            out.append((field, int.from_bytes(data[i : i + 8], "little")))
            i += 8
        elif wire == 2:
            n, i = _varint(data, i)
            out.append((field, data[i : i + n]))
            i += n
        else:
            raise AssertionError(f"unexpected wire type {wire}")
    return out


def _varint(data: bytes, i: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        b = data[i]
        value |= (b & 0x7F) << shift
        i, shift = i + 1, shift + 7
        if not b & 0x80:
            return value, i


def one(msg: bytes, field: int, default=None):
    return next((v for f, v in fields(msg) if f == field), default)


def read_slices(path: Path, flows: dict | None = None) -> tuple[dict, list[tuple]]:
    """Tracks (uuid -> (process name, thread name)) and slices (core, lane, start, end, name,
    source line), resolving each sequence's defaults and interned ids as a viewer does;
    ``flows`` gets, per flow id, the slices it starts (``s``) and ends (``f``) at."""
    names: dict[int, str] = {}
    threads: dict[int, tuple[int, str]] = {}
    track_of: dict[int, int] = {}
    interned: dict[int, tuple[dict, dict]] = {}
    open_: dict[int, list] = defaultdict(list)
    slices = []
    for field, packet in fields(path.read_bytes()):
        assert field == 1
        desc = one(packet, 60)
        if desc is not None:
            uuid = one(desc, 1)
            proc = one(desc, 3)
            if proc is not None:
                names[one(proc, 1)] = one(proc, 6).decode()
            thread = one(desc, 4)
            if thread is not None:
                threads[uuid] = (one(thread, 1), one(thread, 5).decode())
            continue
        seq = one(packet, 10)
        defaults = one(packet, 59)
        if defaults is not None:
            track_of[seq] = one(one(defaults, 11), 11)
            data = one(packet, 12)
            event_names = {one(m, 1): one(m, 2).decode() for f, m in fields(data) if f == 2}
            locations = {one(m, 1): one(m, 3).decode() for f, m in fields(data) if f == 4}
            interned[seq] = (event_names, locations)
            assert one(packet, 13) == 3 and one(packet, 87) == 1  # state cleared, first packet
            continue
        event = one(packet, 11)
        ts, kind = one(packet, 8), one(event, 9)
        if kind == 1:
            assert one(packet, 13) == 2  # uses the sequence's interned names
            event_names, locations = interned[seq]
            ends = [(f, v) for f, v in fields(event) if f in (47, 48)]
            open_[seq].append((ts, event_names[one(event, 10)], locations[one(event, 34)], ends))
        else:
            assert kind == 2
            start, name, loc, ends = open_[seq].pop()
            pid, lane = threads[track_of[seq]]
            slices.append((names[pid], lane, start, ts, name, loc))
            for f, flow in ends if flows is not None else ():
                flows.setdefault(flow, {}).setdefault("s" if f == 47 else "f", []).append(slices[-1])
    assert not any(open_.values())
    return threads, slices


def expected(report) -> list[tuple]:
    rows = []
    for t in report.tasks:
        c = t.trace.columns
        for k in range(len(t.trace)):
            rows.append(
                (
                    t.core_name,
                    PIPES[c["pipe"][k]],
                    t.start + int(c["start"][k]),
                    t.start + int(c["end"][k]),
                    c["name"][k],
                    c["loc"][k],
                )
            )
    return sorted(rows)


def test_every_launch_on_one_time_axis_with_exact_cycles(tmp_path: Path):
    a = np.ones((gk.S, gk.S), np.float16)
    gk.gemm(a, a, np.zeros((gk.S, gk.S), np.float32), config=RunConfig(trace=True, output_dir=tmp_path))
    report = gk.gemm.last_report
    path = tmp_path / "trace" / "run.pftrace"
    flows: dict = {}
    threads, slices = read_slices(path, flows)
    assert sorted(slices) == expected(report)  # every instruction, in run cycles, names and lines
    assert {lane for _, lane in threads.values()} == {"MTE2", "MTE1", "CUBE", "FIXPIPE"}
    assert len({core for core, *_ in slices}) == len(report.tasks) == 24
    n = sum(len(t.trace) for t in report.tasks)
    assert path.stat().st_size <= 40 * n
    # one arrow per set_flag -> wait_flag pair, as the timeline draws them, each from a set
    # on one core to a wait on the same core that starts no earlier than the set
    waits = sum(int((t.trace.raw["table"][:, 1] == 2).sum()) for t in report.tasks)
    assert len(flows) == waits > 0
    for ends in flows.values():
        ((set_,), (wait,)) = ends["s"], ends["f"]
        assert set_[4] == "SET_FLAG" and wait[4] == "WAIT_FLAG" and set_[0] == wait[0] and set_[2] <= wait[3]


def test_two_kernels_share_the_time_axis(tmp_path: Path):
    """A program of several launches: the later launch's slices start after the earlier's."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "e2e"))
    import mixed_scope as ms

    a = np.ones((ms.M, ms.K), np.float16)
    b = np.ones((ms.K, ms.N), np.float16)
    ms.scaled_matmul(
        a, b, np.zeros((ms.M, ms.N), np.float32), 0.5, config=RunConfig(trace=True, output_dir=tmp_path)
    )
    report = ms.scaled_matmul.last_report
    _, slices = read_slices(tmp_path / "trace" / "run.pftrace")
    assert sorted(slices) == expected(report)
    last = max(report.tasks, key=lambda t: t.start)
    mine = [s for s in slices if s[0] == last.core_name]  # an earlier task may have warmed its core
    assert last.start > 0 and any(s[2] >= last.start for s in mine)
    assert all(s[3] <= last.start or s[2] >= last.start for s in mine)


def test_trace_writing_and_the_timeline_report_progress(tmp_path: Path, caplog, capsys, monkeypatch):
    """Off a terminal: log lines at each tenth of the work; on one: a tqdm bar on stderr."""
    a = np.ones((sk.ROWS, sk.TC), np.float32)
    config = RunConfig(trace=True, timeline=True, output_dir=tmp_path / "b")
    with caplog.at_level("INFO", logger="pypto.progress"):
        sk.single_buffer(a, np.zeros_like(a), config=config)
    said = [r.getMessage() for r in caplog.records if r.name == "pypto.progress"]
    steps = (
        "writing traces: 1 of 1 kernel (100%)",
        "writing the run's trace: 1 of 1 core (100%)",
        "reading the records: 1 of 1 task (100%)",
        "building the timeline: 2 of 2 step (100%)",
    )
    assert all(step in said for step in steps), said
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    sk.single_buffer(a, np.zeros_like(a), config=config)
    err = capsys.readouterr().err
    assert "writing traces" in err and "building the timeline" in err and "it/s" not in err.split("kernel")[0]


def _one_pipe_report(start: np.ndarray, end: np.ndarray, pipe: str = "MTE2"):
    """A report of one task on one core whose records are slices on one pipe."""
    from pypto.report.run_report import RECORD_COLUMNS, InstrTrace, RunReport, TaskReport

    table = np.zeros((len(start), len(RECORD_COLUMNS)), np.int64)
    table[:, RECORD_COLUMNS.index("pipe")] = PIPES.index(pipe)
    table[:, RECORD_COLUMNS.index("start")], table[:, RECORD_COLUMNS.index("end")] = start, end
    table[:, RECORD_COLUMNS.index("flag_id")] = -1
    ids = np.zeros(len(start), np.int32)
    trace = InstrTrace({"table": table, "name_id": ids, "loc_id": ids, "strings": ["MOV"]})
    task = TaskReport("k", 0, 0, int(end.max()), dict.fromkeys(PIPES, 0), len(start), trace=trace)
    return RunReport("a2a3sim", task.end, dict.fromkeys(PIPES, 0), len(start), [task])


def test_overlapping_slices_of_one_pipe_go_to_sub_lanes(tmp_path: Path):
    """Perfetto needs properly nested slices per thread: overlaps move to MTE2#1, #2, ... and
    each sub-lane's slices are disjoint, using as few sub-lanes as the deepest overlap."""
    from pypto.report.perfetto import write_run_trace

    rng = np.random.default_rng(0)
    start = rng.integers(0, 1000, 400)  # not in start order: the writer orders each pipe
    end = start + rng.integers(0, 40, 400)
    threads, slices = read_slices(write_run_trace(_one_pipe_report(start, end), tmp_path / "a.pftrace"))
    assert sorted(s[2:4] for s in slices) == sorted(zip(start.tolist(), end.tolist()))
    lanes = defaultdict(list)
    for _, lane, s, e, *_ in slices:
        lanes[lane].append((s, e))
    for spans in lanes.values():
        spans.sort()
        assert all(e <= s for (_, e), (s, _) in zip(spans, spans[1:]))
    depth = max(int(((start <= t) & (t < end)).sum()) for t in range(1000))
    assert set(lanes) == {"MTE2", *(f"MTE2#{k}" for k in range(1, depth))}
    touching = _one_pipe_report(np.array([0, 5, 5]), np.array([5, 5, 9]))  # touching is not overlap
    threads, _ = read_slices(write_run_trace(touching, tmp_path / "b.pftrace"))
    assert [lane for _, lane in threads.values()] == ["MTE2"]


def test_the_native_lane_builder_refuses_bad_records(tmp_path: Path):
    import pytest

    from pypto.report.perfetto import write_run_trace

    ok = np.array([1, 2], np.int64)
    for message, start, end in [("negative", ok - 2, ok), ("negative", ok, ok - 3)]:
        with pytest.raises(ValueError, match=message):
            write_run_trace(_one_pipe_report(start, end), tmp_path / "bad.pftrace")
    report = _one_pipe_report(ok, ok + 1)
    report.tasks[0].trace.raw["name_id"][1] = 1  # one string only
    with pytest.raises(ValueError, match="string id outside its tables"):
        write_run_trace(report, tmp_path / "bad.pftrace")


def test_a_lane_of_many_chunks_is_written_whole(tmp_path: Path):
    """The encoder writes a chunk of slices at a time: a lane longer than one chunk comes out
    whole, every slice once, in order."""
    from pypto.report.perfetto import write_run_trace

    start = np.arange(10_000, dtype=np.int64) * 3
    _, slices = read_slices(write_run_trace(_one_pipe_report(start, start + 2), tmp_path / "a.pftrace"))
    assert [s[2:4] for s in slices] == list(zip(start.tolist(), (start + 2).tolist()))


def test_pipes_longer_than_a_block_of_kept_slices_keep_their_order_lanes_and_arrows(tmp_path: Path):
    """The lane scan keeps each pipe's slices in blocks of 87,381: a pipe of more (here in
    order, and one out of order with overlaps, interleaved in two tasks) comes out whole, on
    the right lanes, each flag arrow from its set to the wait it released, across blocks."""
    from pypto.report.perfetto import write_run_trace
    from pypto.report.run_report import RECORD_COLUMNS, InstrTrace, RunReport, TaskReport

    col = {
        c: RECORD_COLUMNS.index(c)
        for c in ("kind", "pipe", "start", "end", "flag_src", "flag_dst", "flag_id")
    }
    rng = np.random.default_rng(1)
    n = 190_000
    table = np.zeros((n, len(RECORD_COLUMNS)), np.int64)
    on_v = np.arange(n) % 2 == 0  # VECTOR: in order; MTE2: shuffled starts, overlapping
    table[:, col["pipe"]] = np.where(on_v, PIPES.index("VECTOR"), PIPES.index("MTE2"))
    starts = np.where(on_v, np.arange(n) * 10, rng.integers(0, n * 10, n))
    table[:, col["start"]] = starts
    table[:, col["end"]] = starts + np.where(on_v, 10, rng.integers(0, 60, n))
    table[:, col["flag_id"]] = -1
    sets = np.arange(0, n, 2)[::997]  # VECTOR sets flag 3 (to MTE2); MTE2 waits for it later
    table[sets, col["kind"]] = 1
    waits = sets + 1
    table[waits, col["kind"]] = 2
    table[waits, col["start"]] = table[sets, col["start"]] + 5  # after its set, in time
    table[waits, col["end"]] = table[waits, col["start"]] + 1
    for c, value in (("flag_src", PIPES.index("VECTOR")), ("flag_dst", PIPES.index("MTE2")), ("flag_id", 3)):
        table[np.r_[sets, waits], col[c]] = value
    names = (np.arange(n) % 5).astype(np.int32)
    tasks, half = [], n // 2
    for k, rows in enumerate((slice(0, half), slice(half, n))):
        trace = InstrTrace(
            {"table": table[rows], "name_id": names[rows], "loc_id": names[rows][::-1].copy(),
             "strings": [f"OP{i}" if k == 0 else f"OP{4 - i}" for i in range(5)]}
        )  # fmt: skip
        end = int(table[rows, col["end"]].max())
        tasks.append(TaskReport("k", 0, 0, end, dict.fromkeys(PIPES, 0), half, trace=trace))
    report = RunReport("a2a3sim", tasks[-1].end, dict.fromkeys(PIPES, 0), n, tasks)
    flows: dict = {}
    _, slices = read_slices(write_run_trace(report, tmp_path / "big.pftrace"), flows)
    assert sorted(s[2:] for s in slices) == sorted(e[2:] for e in expected(report))  # each once
    v_lane = [s[2:4] for s in slices if s[1] == "VECTOR"]
    assert v_lane == sorted(v_lane) and len(v_lane) == n // 2  # one lane, in order
    spans = defaultdict(list)
    for _, lane, start, end, *_ in slices:
        spans[lane].append((start, end))
    assert {lane for lane in spans if lane.startswith("MTE2#")}  # overlaps: sub-lanes
    for lane in spans.values():
        lane.sort()
        assert all(e <= s for (_, e), (s, _) in zip(lane, lane[1:]))
    assert len(flows) == len(sets)
    pairs = sorted((f["s"][0][2], f["f"][0][2]) for f in flows.values())
    assert pairs == sorted(zip(table[sets, col["start"]].tolist(), table[waits, col["start"]].tolist()))


def test_each_slice_is_the_bytes_of_its_two_packets_on_either_side_of_the_word_path(tmp_path: Path):
    """The encoder writes a common slice (times below 2^35, name and source-line iids and the
    sequence id below 128, no arrow) a word at a time and any other a byte at a time: both are
    the protobuf bytes of the two packets, built here with perfetto.py's field encoders, for
    times, ids and sequence ids on both sides of each of those limits."""
    from pypto import _native
    from pypto.report.perfetto import _LANE_COLUMNS, _int, _msg
    from pypto.report.run_report import RECORD_COLUMNS

    n, strings = 600, 300
    step = np.arange(n // 2) * 300  # apart by more than a slice: one lane
    start = np.r_[step, (1 << 35) - 300 * 150 + step].astype(np.int64)
    end = start + np.arange(n) % 4 * 70  # lengths 0, 70, 140, 210
    table = np.zeros((n, len(RECORD_COLUMNS)), np.int64)
    table[:, RECORD_COLUMNS.index("start")], table[:, RECORD_COLUMNS.index("end")] = start, end
    table[:, RECORD_COLUMNS.index("flag_id")] = -1
    names = (np.arange(n) % strings).astype(np.int32)  # 300 names: iids 1..300
    locs = (np.arange(n) * 7 % 50).astype(np.int32)  # 50 source lines: iids 1..50
    task = (table, names, locs, np.arange(strings, dtype=np.int64), 0)
    lanes = _native.PerfettoCoreLanes([task], _LANE_COLUMNS, strings, 0)
    ((_, _, lane_names, lane_locs),) = lanes.lanes
    name_iid = {s: i + 1 for i, s in enumerate(lane_names.tolist())}
    loc_iid = {s: i + 1 for i, s in enumerate(lane_locs.tolist())}
    for seq in (1, 127, 128, 300):
        path = tmp_path / f"seq{seq}.bin"
        with path.open("wb") as f:
            lanes.write_lane(0, seq, f.fileno(), str(path))
        want = b"".join(
            _msg(1, _int(8, s) + _int(10, seq) + _int(13, 2)
                 + _msg(11, _int(9, 1) + _int(10, name_iid[a]) + _int(34, loc_iid[b])))
            + _msg(1, _int(8, e) + _int(10, seq) + _msg(11, _int(9, 2)))
            for s, e, a, b in zip(start.tolist(), end.tolist(), names.tolist(), locs.tolist())
        )  # fmt: skip
        assert path.read_bytes() == want, seq


def test_the_encoders_varints_read_back_and_a_negative_one_is_refused():
    values = [*range(0, 70_000, 7), *(v + d for k in range(1, 70) for v in [1 << k] for d in (-1, 0, 1))]
    for v in values:
        assert _varint(varint(v), 0) == (v, len(varint(v))), v
    assert [len(varint(v)) for v in (0, 127, 128, 16_383, 16_384)] == [1, 1, 2, 2, 3]
    with pytest.raises(ValueError, match="negative"):
        varint(-1)
