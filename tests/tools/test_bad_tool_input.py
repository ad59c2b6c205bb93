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
