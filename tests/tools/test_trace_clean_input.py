"""What the native trace cleaner (csrc/tools/trace_clean.cpp) accepts: malformed JSON is an
error naming the problem and its byte, never a crash; a document that is not a trace is an
error naming the event; raw fields are read as JSON values; any number and string reads back
as the value it spells."""

from __future__ import annotations

import contextlib
import json
import math
import struct
from pathlib import Path

import pytest
from clean_calls import clean, events, flag, kept, x
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pypto import _native
from pypto.report.opprof_format import SOURCE, pack_block
from pypto.tools import clean_sim_trace as cst

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


def test_a_failed_clean_leaves_the_output_as_it_was(tmp_path: Path, capsys):
    """The rebuild streams into its file; a trace found bad only while laying out the lanes
    (a slice without a time) leaves neither a partial file nor the folders made for it."""
    path = tmp_path / "visualize_data.bin"
    no_ts = b'{"traceEvents":[{"name":"VADD","ph":"X","pid":"core0.veccore0","tid":"VECTOR"}]}'
    path.write_bytes(pack_block(2, no_ts))
    assert cst.main([str(path), "-o", str(tmp_path / "new" / "out")]) == 1
    assert "the X slice at byte 16 has no ts" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["visualize_data.bin"]
    earlier = tmp_path / "trace.clean.json"
    earlier.write_text("earlier")
    assert cst.main([str(path)]) == 1
    assert earlier.read_text() == "earlier"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["trace.clean.json", "visualize_data.bin"]


# ---- numbers and strings ----

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


CORE = '"ph":"X","pid":"core0.veccore0"'
SLICE = '{"name":"A",' + CORE + ',"tid":"%s","ts":%s,"dur":%s,"args":{"pc_addr":"0x10","n":%s}}'
FLAG = (
    '{"name":"%s",'
    + CORE
    + ',"tid":"%s","ts":%s,"dur":0,"args":{"detail":"PIPE:MTE2,TRIGGERPIPE:VEC,FLAGID:0,"}}'
)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.floats(-1e9, 1e9), st.sampled_from(SPELLINGS), st.floats(0, 1e3), st.sampled_from(SPELLINGS)
        ),
        min_size=1,
        max_size=8,
    )
)
def test_compact_events_clean_as_spaced_ones(slices: list[tuple[float, str, float, str]]):
    """Compact events take the reader's one-pass path, spaced ones the ordinary walk: however
    their numbers are spelled, both give the same bytes (order, sub-lanes, arrows at the
    slices' mid-points, all read from the numbers' values)."""
    parts = []
    for i, (ts, ts_spelling, dur, dur_spelling) in enumerate(slices):
        ts_text, dur_text = ts_spelling.format(ts), dur_spelling.format(dur)
        parts.append(SLICE % ("MTE2" if i % 2 == 0 else "VECTOR", ts_text, dur_text, dur_text))
        parts.append(
            FLAG % ("SET_FLAG" if i % 2 == 0 else "WAIT_FLAG", "MTE2" if i % 2 == 0 else "VECTOR", ts_text)
        )
    compact = '{"traceEvents":[' + ",".join(parts) + "]}"
    spaced = compact.replace('","', '", "').replace('":', '": ')
    assert spaced != compact
    assert _native.clean_trace(compact.encode(), False, "") == _native.clean_trace(spaced.encode(), False, "")


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
