"""The native rebuild behind clean_sim_trace (csrc/tools/trace_clean.cpp): the same pictures as
the first implementation, plain JSON out, and the rules' corner cases pinned one by one
(what it accepts as input: test_trace_clean_input.py).

``golden/<case>.trace.json`` are TRACE payloads (vendor-style, pypto's own, numeric pids,
escapes, overlaps, random flags); ``<case>[.keep_scalar].clean.json`` are the outputs the
first implementation (pure Python, before the rebuild went native) wrote for them, with
source ``"SOURCE"``. Outputs are compared as parsed JSON values, never as bytes."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from clean_calls import arrows, clean, events, flag, kept, x
from vendor_bin import VEC, trace_events, vendor_bin

from pypto import _native
from pypto.tools import clean_sim_trace as cst

GOLDEN = Path(__file__).resolve().parent / "golden"
CASES = sorted(p.name.removesuffix(".trace.json") for p in GOLDEN.glob("*.trace.json"))


# ---- the same pictures as the first implementation ----


def without_arrow_ids(doc: dict) -> tuple[list, list]:
    """The events but the arrows, and the arrows as (start, end) pairs without their ids."""
    rest = [e for e in doc["traceEvents"] if e.get("cat") != "sync"]
    by_id: dict[int, list[dict]] = {}
    for e in arrows(doc):
        by_id.setdefault(e["id"], []).append({k: v for k, v in e.items() if k != "id"})
    pairs = [sorted(p, key=lambda e: e["ph"] != "s") for p in by_id.values()]
    return rest, sorted(pairs, key=lambda p: json.dumps(p, sort_keys=True))


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("keep_scalar", [False, True], ids=["default", "keep-scalar"])
def test_output_has_the_values_the_first_implementation_wrote(case: str, keep_scalar: bool):
    """Every event equal as a JSON value; arrows the same pairs, numbered by the documented
    order (process, source pipe, target pipe, flag number) rather than the old one."""
    payload = (GOLDEN / f"{case}.trace.json").read_bytes()
    expected = GOLDEN / f"{case}.keep_scalar.clean.json"
    if not keep_scalar or not expected.exists():
        expected = GOLDEN / f"{case}.clean.json"
    out, stats = _native.clean_trace(payload, keep_scalar, "SOURCE")
    doc, old = json.loads(out), json.loads(expected.read_bytes())
    assert without_arrow_ids(doc) == without_arrow_ids(old)
    assert {k: v for k, v in doc.items() if k != "traceEvents"} == {
        k: v for k, v in old.items() if k != "traceEvents"
    }
    assert stats["slices"] == len(kept(doc)) and stats["flows"] == len(arrows(doc)) // 2
    assert stats["skipped_flags"] == doc["otherData"]["skipped_flags"]
    lanes = {(e["pid"], e["tid"]): e["args"]["name"].split(" ")[0].split("#")[0]
             for e in doc["traceEvents"] if e["name"] == "thread_name"}  # fmt: skip
    order = ["MTE2", "MTE1", "CUBE", "VECTOR", "FIXPIPE", "MTE3", "SCALAR"]
    keys = []
    for s in (a for a in arrows(doc) if a["ph"] == "s" and a["name"] != "tile pipe"):
        src, rest = s["name"].split("\u2192")
        dst, number = rest.split(" flag")
        keys.append((s["pid"], order.index(src), order.index(dst), int(number)))
        assert lanes[(s["pid"], s["tid"])] == src
    assert keys == sorted(keys) and [a["id"] for a in arrows(doc)] == [
        i // 2 + 1 for i in range(2 * len(keys))
    ]


def test_the_command_writes_what_the_rebuild_returns(tmp_path: Path, capsys):
    path = tmp_path / "visualize_data.bin"
    path.write_bytes(vendor_bin())
    assert cst.main([str(path)]) == 0
    out, _ = _native.clean_trace(pack_trace_payload(), False, str(path))
    assert json.loads((tmp_path / "trace.clean.json").read_bytes()) == json.loads(out)
    assert "6 slices on 5 lanes, 3 flow arrows; 1 sync flags skipped" in capsys.readouterr().out


def pack_trace_payload() -> bytes:
    return json.dumps({"traceEvents": trace_events(), "profilingType": "op"}).encode()


# ---- the rules, pinned ----


def test_numeric_pids_and_tids_are_named_by_metadata_anywhere():
    trace, _ = clean(
        events(
            {"name": "A", "ph": "X", "pid": 7, "tid": 1, "ts": 1, "dur": 1},
            {"name": "B", "ph": "X", "pid": 7.0, "tid": 2, "ts": 0.5, "dur": 1},  # 7.0 == 7, as in Python
            {"name": "C", "ph": "X", "pid": 3, "tid": 1, "ts": 0, "dur": 1},
            {"name": "thread_name", "ph": "M", "pid": 7, "tid": 1, "args": {"name": "VEC words"}},
            {"name": "thread_name", "ph": "M", "pid": 7, "tid": 2, "args": {"name": "pipe_mte2"}},
            {"name": "thread_name", "ph": "M", "pid": 3, "tid": 1, "args": {"name": "MTE3"}},
            {"name": "process_name", "ph": "M", "pid": 7, "args": {"name": "core1.veccore0"}},
            {"name": "process_name", "ph": "M", "pid": 3, "args": {"name": "core1.cubecore0"}},
        )
    )
    procs = [e["args"]["name"] for e in trace["traceEvents"] if e["name"] == "process_name"]
    lanes = [
        (e["pid"], e["args"]["name"].split(" ")[0])
        for e in trace["traceEvents"]
        if e["name"] == "thread_name"
    ]
    assert procs == ["core1.cubecore0", "core1.veccore0"]  # the cube core first
    assert lanes == [(1, "MTE3"), (2, "MTE2"), (2, "VECTOR")]
    assert [(e["name"], e["pid"], e["tid"]) for e in kept(trace)] == [
        ("C", 1, 600),
        ("B", 2, 100),
        ("A", 2, 400),
    ]


def test_cores_sort_by_cluster_number_not_text():
    names = ["core10.veccore0", "core2.veccore1", "core2.cubecore0", "other", "core2.veccore0"]
    evs = [x(f"I{i}", 1.0, pid=n) for i, n in enumerate(names)]
    trace, _ = clean(events(*evs))
    procs = [e["args"]["name"] for e in trace["traceEvents"] if e["name"] == "process_name"]
    assert procs == ["core2.cubecore0", "core2.veccore0", "core2.veccore1", "core10.veccore0", "other"]


def test_two_raw_tids_on_one_lane_merge_by_start_then_event_order():
    trace, _ = clean(events(x("A", 2.0, tid="VEC"), x("B", 1.0, tid="VECTOR"), x("C", 2.0, tid="V")))
    assert [e["name"] for e in kept(trace)] == ["B", "A", "C"]  # stable for equal starts
    assert {e["tid"] for e in kept(trace)} == {400, 401}  # A and C overlap B: a sub-lane


def test_sub_lanes_first_fit_and_eps():
    trace, stats = clean(
        events(x("A", 0, 10), x("B", 1, 1), x("C", 2, 1), x("D", 2.5, 1), x("E", 10.0000005, 1))
    )
    assert [(e["name"], e["tid"]) for e in kept(trace)] == [
        ("A", 400), ("B", 401), ("C", 401), ("D", 402), ("E", 400)  # E starts within EPS of A's end
    ]  # fmt: skip
    assert stats["lanes"] == 3


def test_slices_keep_their_members_in_order_and_their_numbers_verbatim():
    payload = (
        '{"traceEvents": [{"args": {"b": [1, 2.50, -0, 1E2, 18446744073709551616, "\\u00e9\\/"]},'
        ' "cname": "x", "ph": "X", "name": "A", "ts": 1.000, "dur": 3, "pid": "p", "tid": "MTE2"},'
        ' {"name": "B", "ph": "X", "ts": 12345678901234567890, "tid": "MTE2"}]}'
    )
    trace, _ = clean(payload)
    b, a = kept(trace)  # process "null" sorts before "p"
    assert list(a) == ["args", "cname", "ph", "name", "ts", "dur", "pid", "tid"]
    assert a["args"] == {"b": [1, 2.5, 0, 100.0, 18446744073709551616, "\u00e9/"]}
    assert a["cname"] == "thread_state_iowait" and (a["ts"], a["dur"]) == (1.0, 3)
    # Integers stay integers, however long: the number's text is copied, not re-spelled.
    assert type(a["args"]["b"][4]) is int and type(a["dur"]) is int and type(a["ts"]) is float
    # A missing pid (null, named "null") and cname are added at the end, pid before cname.
    assert list(b) == ["name", "ph", "ts", "tid", "pid", "cname"] and b["ts"] == 12345678901234567890
    procs = [e["args"]["name"] for e in trace["traceEvents"] if e["name"] == "process_name"]
    assert procs == ["null", "p"]


def test_whitespace_and_repeated_members_are_rewritten_to_the_same_values():
    """Slices that are not compact, or repeat pid / tid / cname, are re-written member by member:
    the same values, no whitespace, every pid, tid and cname replaced."""
    payload = (
        '[{"name" : "A", "ph": "X", "pid": "p", "tid": "MTE2", "tid": "MTE2", "ts": 1,\n'
        ' "args": {"s": "a b", "n": [1 , 2.0e0]}},'
        ' {"name":"B","ph":"X","pid":"p","tid":"MTE2","ts":3,"cname":"x","cname":"y"}]'
    )
    out, _ = _native.clean_trace(payload.encode(), False, "")
    a, b = json.loads(out)["traceEvents"][-2:]
    assert a == {"name": "A", "ph": "X", "pid": 1, "tid": 100, "ts": 1, "args": {"s": "a b", "n": [1, 2.0]},
                 "cname": "thread_state_iowait"}  # fmt: skip
    assert b == {"name": "B", "ph": "X", "pid": 1, "tid": 100, "ts": 3, "cname": "thread_state_iowait"}
    outside_strings = re.sub(rb'"(\\.|[^"\\])*"', b"", out)
    assert not re.search(rb"\s", outside_strings)  # compact
    assert b'"a b"' in out and b"[1,2.0e0]" in out  # strings and numbers as spelled


def test_repeated_keys_count_once_the_last_one_wins():
    trace, _ = clean('{"traceEvents": [{"name": "A", "ph": "M", "ph": "X", "pid": "p", "tid": "CACHEMISS",'
                     ' "tid": "MTE3", "ts": 5, "dur": 1}], "traceEvents": []}')  # fmt: skip
    assert kept(trace) == []  # the second traceEvents replaces the first
    trace, _ = clean('{"traceEvents": [{"name": "A", "ph": "M", "ph": "X", "pid": "p", "tid": "CACHEMISS",'
                     ' "tid": "MTE3", "ts": 5, "dur": 1}]}')  # fmt: skip
    assert [(e["name"], e["tid"]) for e in kept(trace)] == [("A", 600)]


def test_flags_pair_fifo_with_b_e_pairs_and_bare_arrays():
    d = "PIPE:MTE2,TRIGGERPIPE:VEC,FLAGID:3,"
    evs = [
        x("L0", 0.0, 1.5, tid="MTE2"), x("L1", 1.0, 1.0, tid="MTE2"),  # overlapping: L1 on MTE2#1
        {"name": "SET_FLAG", "ph": "B", "pid": VEC, "tid": "MTE2", "ts": 1.0, "args": {"detail": d}},
        {"name": "SET_FLAG", "ph": "E", "pid": VEC, "tid": "MTE2", "ts": 1.01},
        flag("SET_FLAG", 0.5, "xx" + d, "MTE2"),  # FIFO by time: this set pairs with the first wait
        flag("WAIT_FLAG", 0.0, d, "VECTOR", dur=2.5), flag("WAIT_FLAG", 2.6, d, "VECTOR", dur=0.4),
        x("V0", 2.5, 0.5), x("V1", 3.0, 0.5),
        flag("SET_FLAG", 9.0, d, "MTE2"),  # never waited for
        {"name": "WAIT_FLAG", "ph": "E", "pid": VEC, "tid": "VECTOR", "ts": 4},  # no B: ignored
    ]  # fmt: skip
    trace, stats = clean(json.dumps(evs))  # a bare array
    pairs = [(a["tid"], a["ts"]) for a in arrows(trace)]
    assert pairs == [(100, 0.75), (400, 2.75), (101, 1.5), (400, 3.25)]
    assert {a["name"] for a in arrows(trace)} == {"MTE2→VECTOR flag3"}
    assert [a["id"] for a in arrows(trace)] == [1, 1, 2, 2]
    assert stats == {"slices": 4, "lanes": 3, "flows": 2, "skipped_flags": 1}
    assert "source_otherData" not in trace["otherData"]


def test_arrow_ids_go_by_flag_number_which_loses_leading_zeros():
    evs = [x("A", 0.0, tid="MTE2"), x("B", 5.0)]
    for n in ("2", "10", "007"):
        d = f"PIPE:MTE2,TRIGGERPIPE:V,FLAGID:{n},"
        evs += [flag("SET_FLAG", 0.5, d, "MTE2"), flag("WAIT_FLAG", 1.0, d, "VECTOR")]
    trace, _ = clean(events(*evs))
    names = [a["name"] for a in arrows(trace) if a["ph"] == "s"]
    assert names == ["MTE2→VECTOR flag2", "MTE2→VECTOR flag7", "MTE2→VECTOR flag10"]


def test_unmatched_and_unanchored_flags_are_counted():
    d = "PIPE:MTE2,TRIGGERPIPE:VEC,FLAGID:0,"
    trace, stats = clean(
        events(
            x("L", 5.0, tid="MTE2"),
            flag("SET_FLAG", 1.0, d, "MTE2"),  # no load started by then
            flag("WAIT_FLAG", 1.0, d, "VECTOR"),
            flag("SET_FLAG", 1.0, "PIPE:S,TRIGGERPIPE:VEC,FLAGID:0", "SCALAR"),  # SCALAR not kept
            flag("WAIT_FLAG", 1.0, "PIPE:S,TRIGGERPIPE:VEC,FLAGID:0", "VECTOR"),
            flag("WAIT_FLAG", 1.0, "PIPE:ALL,TRIGGERPIPE:VEC,FLAGID:0", "VECTOR"),  # not a lane: ignored
            x("V", 6.0),
        )
    )
    assert arrows(trace) == [] and stats["skipped_flags"] == 2


def test_other_data_is_carried_over_compact():
    trace, _ = clean('{"otherData": {"a": [1, 2.0]}, "traceEvents": [], "otherData": {"b": "c"}}')
    assert trace["otherData"] == {
        "generator": "pypto.tools.clean_sim_trace", "skipped_flags": 0, "source_otherData": {"b": "c"},
        "source": "SOURCE",
    }  # fmt: skip
    assert trace["traceEvents"] == []
