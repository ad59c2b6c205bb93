"""What the cleaned trace shows about buffering: a single buffer alternates loads and compute,
a double buffer overlaps them; lanes in dataflow order; arrows join producer and consumer."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import seed_kernels as tk
from trace_views import clean_hand_written, flow_pairs, lane_order, pipe_overlap, pipe_slices

from pypto.ir import For, ForKind, nodes_of
from pypto.runtime import RunConfig
from pypto.tools.clean_sim_trace import clean_file


def alternates(trace: dict) -> bool:
    """Every load finishes before the next compute starts, and the other way round."""
    events = sorted(pipe_slices(trace, "MTE2") + pipe_slices(trace, "VECTOR"), key=lambda e: e["ts"])
    names = [e["name"] for e in events]
    ordered = all(b["ts"] >= a["ts"] + a["dur"] - 1e-9 for a, b in zip(events, events[1:]))
    return ordered and names == ["TLOAD", "TEXP"] * (len(names) // 2)


def test_single_buffer_alternates_double_buffer_overlaps(fixture_kernel, tmp_path: Path):
    single = clean_hand_written(fixture_kernel, "exp_single_buffer", tmp_path / "single")
    double = clean_hand_written(fixture_kernel, "exp_double_buffer", tmp_path / "double")
    assert alternates(single) and pipe_overlap(single, "MTE2", "VECTOR") == 0
    assert not alternates(double) and pipe_overlap(double, "MTE2", "VECTOR") > 0
    for trace in (single, double):
        assert lane_order(trace) == ["MTE2", "VECTOR", "MTE3"]
        assert len(pipe_slices(trace, "MTE2")) == len(pipe_slices(trace, "VECTOR")) == 8


def test_arrows_join_each_load_to_its_compute_and_store(fixture_kernel, tmp_path: Path):
    double = clean_hand_written(fixture_kernel, "exp_double_buffer", tmp_path)
    pairs = flow_pairs(double)
    assert pairs.count(("TLOAD", "TEXP")) == 8 and pairs.count(("TEXP", "TSTORE")) == 8
    # Buffer i is refilled after its store: the first two loads have no earlier store.
    assert pairs.count(("TSTORE", "TLOAD")) == 6
    assert set(pairs) == {("TLOAD", "TEXP"), ("TEXP", "TSTORE"), ("TSTORE", "TLOAD")}
    assert double["otherData"]["skipped_flags"] == 4  # the two initial sets, the two final waits


def _clean_jit(kernel, tmp_path: Path) -> dict:
    import json

    a = np.ones((tk.ROWS, tk.TC), np.float32)
    kernel(a, np.zeros_like(a), config=RunConfig(trace=True, output_dir=tmp_path))
    out = tmp_path / "clean"
    clean_file(Path(kernel.last_report.trace_paths[0]).parent.parent, out)
    return json.loads((out / "trace.clean.json").read_text())


def test_seed_single_buffer_alternates(tmp_path: Path):
    trace = _clean_jit(tk.single_buffer, tmp_path)
    assert alternates(trace) and lane_order(trace) == ["MTE2", "VECTOR", "MTE3"]
    assert set(flow_pairs(trace)) >= {("TLOAD", "TEXP"), ("TEXP", "TSTORE")}


def test_seed_pipelined_overlaps(tmp_path: Path):
    a = np.ones((tk.ROWS, tk.TC), np.float32)
    lowered = tk.pipelined.lower(a, np.zeros_like(a))
    if any(f.kind is ForKind.pipeline and (f.stage or 1) > 1 for f in nodes_of(lowered, For)):
        pytest.skip("pl.pipeline is not lowered yet (software pipelining lands with its own issue)")
    trace = _clean_jit(tk.pipelined, tmp_path)
    assert pipe_overlap(trace, "MTE2", "VECTOR") > 0 and not alternates(trace)
    assert lane_order(trace)[0] == "MTE2"
