"""One field name, ``source_line`` (``file:line:col``), for the Python source line in every
trace output: the raw trace (visualize_data.bin's TRACE block, trace.json), the cleaned trace
and the per-instruction metrics."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import seed_kernels as sk

from pypto.report.opprof_format import TRACE, iter_blocks
from pypto.runtime import RunConfig
from pypto.tools.clean_sim_trace import clean_file

LOAD = "tile = pl.load(a, [i * TR, 0], [TR, TC])"


def _load_line() -> str:
    path = Path(sk.__file__).resolve()
    n = next(i for i, text in enumerate(path.read_text().splitlines(), 1) if LOAD in text)  # single_buffer's
    return f"{path}:{n}:"


def test_every_trace_output_names_the_source_line_alike(tmp_path: Path):
    a = np.ones((sk.ROWS, sk.TC), np.float32)
    sk.single_buffer(a, np.zeros_like(a), config=RunConfig(trace=True, output_dir=tmp_path / "b"))
    (bin_path,) = sk.single_buffer.last_report.trace_paths
    raw = json.loads(next(b.payload for b in iter_blocks(Path(bin_path).read_bytes()) if b.type == TRACE))
    clean_file(Path(bin_path), tmp_path / "clean")
    clean = json.loads((tmp_path / "clean" / "trace.clean.json").read_text())
    metrics = json.loads((tmp_path / "clean" / "instr_metrics.json").read_text())
    prefix = _load_line()
    for doc in (raw, clean):
        loads = [e for e in doc["traceEvents"] if e.get("ph") == "X" and e["name"] == "TLOAD"]
        assert loads and all(e["args"]["source_line"].startswith(prefix) for e in loads)
    (core,) = metrics["cores"]
    (tload,) = [r for r in metrics["instructions"][core] if r["source"] == "TLOAD"]
    assert tload["source_line"].startswith(prefix) and tload["source_line"] == tload["ascendc_inner_code"]
