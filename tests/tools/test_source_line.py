"""One field name, ``source_line`` (``file:line:col``), for the Python source line in every
trace output that names it: the cleaned trace's slices and the per-instruction metrics. The
raw trace (visualize_data.bin's TRACE block, trace.json) names it once per static
instruction, in the API_INSTR block, by the ``pc_addr`` its events carry; the timeline read
from the raw container shows the same lines."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import seed_kernels as sk

from pypto.report.opprof_format import API_INSTR, TRACE, iter_blocks, source_lines
from pypto.report.timeline import load_model
from pypto.runtime import RunConfig
from pypto.tools.clean_sim_trace import clean_file

LOAD = "tile = pl.load(a, [i * TR, 0], [TR, TC])"


def _load_line() -> str:
    path = Path(sk.__file__).resolve()
    n = next(i for i, text in enumerate(path.read_text().splitlines(), 1) if LOAD in text)  # single_buffer's
    return f"{path}:{n}:"


def test_every_trace_output_names_the_source_line_alike(tmp_path: Path):
    a = np.ones((sk.ROWS, sk.TC), np.float32)
    sk.single_buffer(
        a, np.zeros_like(a), config=RunConfig(trace=True, trace_json=True, output_dir=tmp_path / "b")
    )
    (bin_path,) = sk.single_buffer.last_report.trace_paths
    blocks = {b.type: b for b in iter_blocks(Path(bin_path).read_bytes())}
    raw = json.loads(blocks[TRACE].payload)
    by_pc = source_lines(json.loads(blocks[API_INSTR].payload))
    clean_file(Path(bin_path), tmp_path / "clean")
    clean = json.loads((tmp_path / "clean" / "trace.clean.json").read_text())
    metrics = json.loads((tmp_path / "clean" / "instr_metrics.json").read_text())
    prefix = _load_line()
    raw_loads = [e for e in raw["traceEvents"] if e.get("ph") == "X" and e["name"] == "TLOAD"]
    assert raw_loads and not any("source_line" in e["args"] for e in raw_loads)
    assert all(by_pc[e["args"]["pc_addr"]].startswith(prefix) for e in raw_loads)
    loads = [e for e in clean["traceEvents"] if e.get("ph") == "X" and e["name"] == "TLOAD"]
    assert len(loads) == len(raw_loads)
    assert all(e["args"]["source_line"] == by_pc[e["args"]["pc_addr"]] for e in loads)
    (core,) = metrics["cores"]
    (tload,) = [r for r in metrics["instructions"][core] if r["source"] == "TLOAD"]
    assert tload["source_line"].startswith(prefix) and tload["source_line"] == tload["ascendc_inner_code"]
    # The timeline of the container alone (no records.npz), of trace.json beside it and of the
    # clean trace: the same lines.
    for path in (
        Path(bin_path),
        Path(bin_path).with_name("trace.json"),
        tmp_path / "clean" / "trace.clean.json",
    ):
        model = load_model(path)
        text = {i: s for s, i in model.strings.items()}
        cols = model.columns()
        shown = {
            text[s] for s, n in zip(cols["source"].tolist(), cols["name"].tolist()) if text[n] == "TLOAD"
        }
        assert len(shown) == 1 and shown.pop().startswith(prefix), path
