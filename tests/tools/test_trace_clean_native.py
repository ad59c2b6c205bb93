"""The native rebuild behind clean_sim_trace (csrc/tools/trace_clean.cpp): the same pictures as
the first implementation, strict about malformed JSON (an error naming the problem and its
byte, never a crash), plain JSON out, and the rules' corner cases pinned one by one.

``golden/<case>.trace.json`` are TRACE payloads (vendor-style, pypto's own, numeric pids,
escapes, overlaps, random flags); ``<case>[.keep_scalar].clean.json`` are the outputs the
first implementation (pure Python, before the rebuild went native) wrote for them, with
source ``"SOURCE"``. Outputs are compared as parsed JSON values, never as bytes."""

from __future__ import annotations

import contextlib
import json
import math
import re
import struct
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from vendor_bin import VEC, trace_events, vendor_bin

from pypto import _native
from pypto.tools import clean_sim_trace as cst
from pypto.tools.opprof_format import SOURCE, pack_block

GOLDEN = Path(__file__).resolve().parent / "golden"
CASES = sorted(p.name.removesuffix(".trace.json") for p in GOLDEN.glob("*.trace.json"))


def clean(payload: bytes | str, keep_scalar: bool = False) -> tuple[dict, dict]:
    data = payload.encode() if isinstance(payload, str) else payload
    out, stats = _native.clean_trace(data, keep_scalar, "SOURCE")
    return json.loads(out), stats


def events(*evs: dict) -> str:
    return json.dumps({"traceEvents": list(evs)})


def x(name: str, ts, dur=1.0, pid="core0.veccore0", tid="VECTOR", **extra) -> dict:
    return {"name": name, "ph": "X", "pid": pid, "tid": tid, "ts": ts, "dur": dur, **extra}


def flag(name: str, ts: float, detail: str, tid: str, dur: float = 0.01, pid="core0.veccore0") -> dict:
    return {"name": name, "ph": "X", "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": {"detail": detail}}


def kept(trace: dict) -> list[dict]:
    return [e for e in trace["traceEvents"] if e["ph"] == "X"]


def arrows(trace: dict) -> list[dict]:
    return [e for e in trace["traceEvents"] if e.get("cat") == "sync"]


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


# ---- malformed input: an error with the problem and its byte, never a crash ----

GOOD = events(x("VADD", 1.0), flag("SET_FLAG", 2.0, "PIPE:VEC,TRIGGERPIPE:MTE3,FLAGID:0,", "VECTOR"))


@pytest.mark.parametrize(
    "payload, message",
    [
        ("", "unexpected end of data, expected a value at byte 0"),
        ("   ", "unexpected end of data, expected a value at byte 3"),
        ('{"traceEvents": [', "unexpected end of data"),
        ('{"traceEvents": [1,]}', "trailing comma at byte 19"),
        ('{"traceEvents": []} x', "unexpected data after the document at byte 20"),
        ('{"traceEvents": [{"ts": NaN}]}', "unexpected character 'N', expected a value at byte 24"),
        ('{"traceEvents": [{"ts": 1e400}]}', "number is infinity when parsed as a double at byte 24"),
        ('{"traceEvents": [{"ts": 01}]}', "unexpected character '1', expected ',' or '}' at byte 25"),
        ('{"traceEvents": [{"ts": 1.}]}', "invalid number: no digit after '.'"),
        ('{"traceEvents": [{"ts": -}]}', "invalid number"),
        ('{"traceEvents": [{ts: 1}]}', "expected a string key at byte 18"),
        ('{"traceEvents": [{"a" 1}]}', "expected ':' after a key at byte 22"),
        ('{"traceEvents": [{"a": "\t"}]}', "unexpected control character in a string at byte 24"),
        ('{"traceEvents": [{"a": "\\x"}]}', "invalid escape: backslash then 'x'"),
        (b'["\\\x80"]', "invalid escape: backslash then 0x80 at byte 2"),
        ('{"traceEvents": [{"a": "\\u12G4"}]}', "invalid \\u escape"),
        ('{"traceEvents": [{"a": "\\ud800"}]}', "no low surrogate after a high one"),
        ('{"traceEvents": [{"a": "\\udc00"}]}', "a low surrogate without its high one"),
        ('{"traceEvents": [{"a": tru}]}', "unexpected character 't'"),
        ("[" * 1025 + "]" * 1025, "nesting deeper than 1024 levels at byte 1024"),
    ],
)
def test_syntax_errors_name_the_problem_and_the_byte(payload: str, message: str):
    with pytest.raises(_native.TraceFormatError, match="^not valid JSON: ") as e:
        clean(payload)
    assert message in str(e.value)


@pytest.mark.parametrize(
    "data, message",
    [
        (b'["\xff"]', "a string is not valid UTF-8 at byte 2"),
        (b'["\xc0\xaf"]', "not valid UTF-8"),  # overlong
        (b'["\xed\xa0\x80"]', "not valid UTF-8"),  # an encoded surrogate
        (b'["\xe2\x82"]', "not valid UTF-8"),  # truncated sequence
        (b'["a\x00"]', "unexpected control character"),
    ],
)
def test_strings_must_be_valid_utf8(data: bytes, message: str):
    with pytest.raises(_native.TraceFormatError, match=message):
        _native.clean_trace(data, False, "")


@pytest.mark.parametrize(
    "payload, message",
    [
        ("5", "the document is neither an object nor an array"),
        ('{"traceEvents": {"a": 1}}', "traceEvents is not an array"),
        ('{"traceEvents": [1]}', "event 0 (at byte 17) is not an object"),
        (events(x("A", 1.0), x("B", 2.0, pid=["p"])), "event 1 has a pid that is not a string or a number"),
        (events({"name": "A", "ph": "X", "pid": "p", "tid": "VECTOR"}), "the X slice at byte 17 has no ts"),
        (events(x("A", "soon")), "has a ts that is not a number"),
        (events(x("A", 1.0, dur={"a": 1})), "has a dur that is not a number"),
        (events(flag("SET_FLAG", None, "d", "MTE2")), "event 0 (a flag) has a ts that is not a number"),
    ],
)
def test_documents_that_are_not_traces_are_errors(payload: str, message: str):
    with pytest.raises(_native.TraceFormatError, match="^not a trace: ") as e:
        clean(payload)
    assert message in str(e.value)


def test_a_syntax_error_anywhere_wins_over_a_problem_of_shape():
    with pytest.raises(_native.TraceFormatError, match="not valid JSON: trailing comma"):
        clean('{"traceEvents": [1, {"ts": [1,]}]}')


@pytest.mark.parametrize(
    "ts, dur, message",
    [
        (True, 1.0, "has a ts that is not a number"),  # a boolean is no time
        (" 1.5", 1.0, "has a ts that is not a number"),  # a numeric string is the number alone
        ("inf", 1.0, "has a ts that is not a number"),
        (1.0, "", "has a dur that is not a number"),
        (1.0, False, "has a dur that is not a number"),
    ],
)
def test_times_are_numbers_or_strings_holding_one(ts, dur, message: str):
    with pytest.raises(_native.TraceFormatError, match=message):
        clean(events(x("A", ts, dur)))


def test_raw_fields_are_read_as_json_values():
    trace, _ = clean(
        events(
            x("A", 1.0, dur=None),  # a null dur is 0
            x("B", 2.0, pid=True),  # true is its own core, not 1
            x("C", 3.0, pid=1),
            x("D", 4.0, pid=1.0),  # the same core as 1
        )
    )
    procs = {e["pid"]: e["args"]["name"] for e in trace["traceEvents"] if e["name"] == "process_name"}
    assert [(e["name"], procs[e["pid"]]) for e in kept(trace)] == [
        ("A", "core0.veccore0"), ("C", "1"), ("D", "1"), ("B", "true")  # core names first
    ]  # fmt: skip
    assert kept(trace)[0]["dur"] is None  # values are copied, not filled in
    assert clean('{"traceEvents": null, "otherData": 5}')[0]["otherData"]["source_otherData"] == 5


def test_only_kept_slices_need_times():
    trace, stats = clean(events(x("A", None, tid="CACHEMISS"), x("B", "1.5"), x("C", 2, dur=None)))
    assert [e["name"] for e in kept(trace)] == ["B", "C"] and stats["slices"] == 2
    assert kept(trace)[0]["ts"] == "1.5"  # a numeric string is read as a number, written as it was


def test_every_prefix_of_a_trace_is_an_error_not_a_crash():
    data = GOOD.encode()
    for n in range(len(data)):
        with pytest.raises(_native.TraceFormatError):
            _native.clean_trace(data[:n], False, "")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_mutated_documents_are_errors_exactly_when_a_strict_parser_rejects_them(data):
    """orjson stands in for RFC 8259 (UTF-8 only, no NaN, no lone surrogates)."""
    orjson = pytest.importorskip("orjson")
    doc = bytearray(GOOD.encode())
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(doc) - 1))
        action = data.draw(st.sampled_from(["replace", "insert", "delete"]))
        byte = data.draw(st.sampled_from(list(b'{}[]",:\\ 0123456789.eE+-tfnulx\x00\x1f\x80\xc3\xff')))
        if action == "replace":
            doc[at] = byte
        elif action == "insert":
            doc.insert(at, byte)
        else:
            del doc[at]
    try:
        orjson.loads(bytes(doc))
        valid = True
    except orjson.JSONDecodeError:
        valid = False
    try:
        _native.clean_trace(bytes(doc), False, "")
        syntax_ok = True
    except _native.TraceFormatError as e:
        syntax_ok = not str(e).startswith("not valid JSON")
    assert syntax_ok == valid, bytes(doc)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200))
def test_random_bytes_never_crash(data: bytes):
    with contextlib.suppress(_native.TraceFormatError):
        _native.clean_trace(data, False, "")


def test_the_command_names_the_block_offset(tmp_path: Path, capsys):
    path = tmp_path / "visualize_data.bin"
    source = pack_block(SOURCE, b"int main() {}\n", path="/k.cpp")
    path.write_bytes(source + pack_block(2, b'{"traceEvents": [1,]}'))
    assert cst.main([str(path)]) == 1
    err = capsys.readouterr().err
    block = f"the TRACE block at offset {len(source)}"
    assert err == f"error: {path}: {block} is not valid JSON: trailing comma at byte 19\n"
    path.write_bytes(struct.pack("<QBBBB", 8, 2, 0, 0, 0x5A) + b"[1]     ")
    assert cst.main([str(path)]) == 1
    assert "the TRACE block at offset 0 is not a trace: event 0 (at byte 1) is not an object" in (
        capsys.readouterr().err
    )
    assert not (tmp_path / "trace.clean.json").exists()


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


SPELLINGS = ["{!r}", "{:.6f}", "{:.3f}", "{:.15g}", "{:.17g}", "{:e}", "{:.1f}", "{:.0f}"]


@settings(max_examples=500, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False), st.sampled_from(SPELLINGS), st.floats(0, 1e6))
def test_numbers_read_back_as_the_values_they_spell(value: float, spelling: str, dur: float):
    """However a number is spelled, the clean trace holds the same value; one that rounds to
    infinity (1.79769313486232e+308) is refused."""
    text = spelling.format(value)
    payload = '{"traceEvents": [{"name": "A", "ph": "X", "pid": 1, "tid": "MTE2", "ts": %s, "dur": %r}]}'
    if math.isinf(float(text)):
        with pytest.raises(_native.TraceFormatError, match="number is infinity"):
            _native.clean_trace((payload % (text, dur)).encode(), False, "")
        return
    trace, _ = clean(payload % (text, dur))
    (a,) = kept(trace)
    assert (a["ts"], a["dur"]) == (json.loads(text), dur), text


@pytest.mark.parametrize("special", ['\\"', "\\\\", "\\n", "\\u0001", "é", "\x7f", "→", "\\ud83d\\ude00"])
def test_long_strings_with_a_special_character_anywhere(special: str):
    """Strings are scanned eight bytes at a time: every position of the special one, both sides
    of a word boundary, reads and writes the same string."""
    for at in range(20):
        name = "x" * at + special + "y" * (20 - at)
        payload = '[{"name": "%s", "ph": "X", "pid": 1, "tid": "MTE2", "ts": 1, "args": {"s": "%s"}}]'
        trace, _ = clean(payload % (name, name))
        (a,) = kept(trace)
        assert a["name"] == a["args"]["s"] == json.loads(f'"{name}"'), name
    for bad in ("\x01", "\\q"):
        with pytest.raises(_native.TraceFormatError, match="not valid JSON"):
            _native.clean_trace(('["' + "x" * 13 + bad + "y" * 9 + '"]').encode(), False, "")
