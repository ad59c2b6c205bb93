"""The command-line tools never print a traceback for bad input: `error: ...` and exit 1."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from vendor_bin import block, trace_events

# Subprocesses run outside the checkout: its pypto/ (no native module) must not shadow the
# installed package.
HERE = Path(__file__).resolve().parent


def run_tool(module: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", module, *args], capture_output=True, text=True, timeout=120, cwd=HERE
    )


def last_line(r: subprocess.CompletedProcess) -> str:
    return r.stderr.strip().splitlines()[-1]  # (an editable install may print its rebuild first)


def test_memory_map_of_a_non_utf8_file(tmp_path: Path):
    bad = tmp_path / "03_after_AllocateMemoryAddr.py"
    bad.write_bytes(b"\xff\xfe not utf-8 \x80")
    r = run_tool("pypto.tools.memory_map", str(bad))
    assert r.returncode == 1 and last_line(r).startswith("error: cannot read") and "Traceback" not in r.stderr


@pytest.mark.parametrize(
    "api",
    [
        b'{"Cores": 3, "Instructions": [1, 2]}',
        b"[1, 2, 3]",
        b'{"Cores": 5}',
        b"\xff\xfe",
        b'{"Instructions": 7}',
    ],
)
def test_clean_sim_trace_with_a_malformed_api_instr_block(tmp_path: Path, api: bytes):
    trace = json.dumps({"traceEvents": trace_events(), "profilingType": "op"}).encode()
    (tmp_path / "visualize_data.bin").write_bytes(block(2, trace) + block(4, api))
    r = run_tool(
        "pypto.tools.clean_sim_trace", str(tmp_path / "visualize_data.bin"), "-o", str(tmp_path / "o")
    )
    assert r.returncode == 1, r.stdout
    assert last_line(r).startswith("error: the API_INSTR block is not") and "Traceback" not in r.stderr


# --- every tool, whatever the input -----------------------------------------------------------
DEEP = b"[" * 200_000 + b"]" * 200_000
HUGE_INT = b"9" * 5000
HOSTILE_JSON = {
    "trace_events_not_a_list": b'{"traceEvents": 5}',
    "trace_events_of_numbers": b'{"traceEvents": [1, "x", null]}',
    "events_of_wrong_types": b'{"traceEvents": [{"ph": 5, "ts": "x", "pid": [], "tid": {}, "name": 3}]}',
    "deeply_nested": DEEP,
    "nested_in_events": b'{"traceEvents": ' + DEEP + b"}",
    "huge_integer": b'{"traceEvents": [{"ph": "X", "ts": ' + HUGE_INT + b', "dur": 1, "pid": 0, "tid": 0}]}',
    "run_json_shape": b'{"schema": 1, "tasks": 5}',
    "empty": b"",
    "binary": bytes(range(256)),
}
HOSTILE_DUMPS = {
    "huge_integer": b"x = " + HUGE_INT + b"\n",
    "deeply_nested": b"x = " + b"(" * 5000 + b"1" + b")" * 5000 + b"\n",
    "null_bytes": b"x = 1\0\n",
    "not_a_program": b"import os\nos.system('true')\n",
    "program_of_wrong_shapes": b"import pypto.language as pl\n@pl.program\nclass P:\n    x = 5\n",
}


def _one_error_line(r: subprocess.CompletedProcess, tolerated: bool = False) -> None:
    """Exit 1 with one `error:` line; with ``tolerated``, exit 0 is fine too (input the tool
    may skip over), but never a traceback."""
    if tolerated and r.returncode == 0:
        assert "Traceback" not in r.stderr
        return
    assert r.returncode == 1, (r.returncode, r.stdout, r.stderr[-2000:])
    assert "Traceback" not in r.stderr, r.stderr[-2000:]
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), r.stderr[-2000:]


@pytest.mark.parametrize("case", sorted(HOSTILE_JSON))
def test_timeline_on_hostile_json(tmp_path: Path, case: str):
    (tmp_path / "trace.json").write_bytes(HOSTILE_JSON[case])
    _one_error_line(
        run_tool("pypto.tools.timeline", str(tmp_path / "trace.json"), "-o", str(tmp_path / "t.html"))
    )


@pytest.mark.parametrize("case", sorted(HOSTILE_JSON))
def test_clean_sim_trace_on_hostile_blocks(tmp_path: Path, case: str):
    (tmp_path / "visualize_data.bin").write_bytes(block(2, HOSTILE_JSON[case]) + block(4, HOSTILE_JSON[case]))
    out = str(tmp_path / "o")
    r = run_tool("pypto.tools.clean_sim_trace", str(tmp_path / "visualize_data.bin"), "-o", out)
    _one_error_line(r, tolerated=case in ("events_of_wrong_types", "run_json_shape"))


@pytest.mark.parametrize("case", sorted(HOSTILE_DUMPS))
def test_memory_map_on_hostile_dumps(tmp_path: Path, case: str):
    dump = tmp_path / "03_after_AllocateMemoryAddr.py"
    dump.write_bytes(HOSTILE_DUMPS[case])
    _one_error_line(run_tool("pypto.tools.memory_map", str(dump), "-o", str(tmp_path / "m.html")))


def test_a_corrupt_block_names_its_defect():
    from pypto.report.opprof_format import HEADER, MAGIC, ContainerError, iter_blocks

    bad = HEADER.pack(4, 2, 8, 0, MAGIC) + b"\0" * 4  # 8 bytes of padding in a 4-byte payload
    with pytest.raises(ContainerError, match="8 bytes of padding in a payload of 4 bytes"):
        list(iter_blocks(bad))


@pytest.mark.parametrize("case", sorted(HOSTILE_JSON))
def test_report_diff_on_hostile_json(tmp_path: Path, case: str):
    (tmp_path / "a.json").write_bytes(HOSTILE_JSON[case])
    _one_error_line(
        run_tool("pypto.tools.report", "diff", str(tmp_path / "a.json"), str(tmp_path / "a.json"))
    )
