"""Reading a cleaned trace the way a user does (shared by the tools tests; not a test module)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from pypto.report.run_report import overlap_cycles
from pypto.report.trace import write_traces
from pypto.runtime import run_kernel_file
from pypto.tools.clean_sim_trace import clean_file

CHECK_PAGE = Path(__file__).resolve().parent / "trace_check.html"


def lane_table(trace: dict) -> dict[tuple[int, int], str]:
    """(pid, tid) → lane id (``MTE2``, ``MTE2#1``, ...)."""
    return {(e["pid"], e["tid"]): e["args"]["name"].split(" ")[0] for e in trace["traceEvents"]
            if e["name"] == "thread_name"}  # fmt: skip


def lane_order(trace: dict) -> list[str]:
    sort = {(e["pid"], e["tid"]): e["args"]["sort_index"] for e in trace["traceEvents"]
            if e["name"] == "thread_sort_index"}  # fmt: skip
    names = lane_table(trace)
    return [names[k] for k in sorted(names, key=sort.get)]


def pipe_slices(trace: dict, pipe: str) -> list[dict]:
    """Slices of ``pipe`` over all its sub-lanes, by start time."""
    names = lane_table(trace)
    found = [
        e
        for e in trace["traceEvents"]
        if e["ph"] == "X" and names[(e["pid"], e["tid"])].split("#")[0] == pipe
    ]
    return sorted(found, key=lambda e: e["ts"])


def pipe_overlap(trace: dict, a: str, b: str) -> float:
    """Microseconds during which pipes ``a`` and ``b`` are both busy."""
    scale = 1e6  # picoseconds as integers for the shared interval helper

    def spans(pipe: str) -> list[tuple[int, int]]:
        return [
            (round(e["ts"] * scale), round((e["ts"] + e["dur"]) * scale)) for e in pipe_slices(trace, pipe)
        ]

    return overlap_cycles(spans(a), spans(b)) / scale


def flow_pairs(trace: dict) -> list[tuple[str, str]]:
    """(producer, consumer) instruction names of every flow arrow."""
    xs = [e for e in trace["traceEvents"] if e["ph"] == "X"]

    def bound(ev: dict) -> dict:
        (hit,) = [s for s in xs if (s["pid"], s["tid"]) == (ev["pid"], ev["tid"])
                  and s["ts"] <= ev["ts"] <= s["ts"] + s["dur"]]  # fmt: skip
        return hit

    flows = [e for e in trace["traceEvents"] if e.get("cat") == "sync"]
    ends = {e["id"]: e for e in flows if e["ph"] == "f"}
    return [(bound(s)["name"], bound(ends[s["id"]])["name"]) for s in flows if s["ph"] == "s"]


def clean_hand_written(fixture_kernel, name: str, out: Path) -> dict:
    """Runs a fixture kernel traced, cleans its trace into ``out``; returns trace.clean.json."""
    a = np.ones((8 * 64, 128), np.float32)
    rep = run_kernel_file(fixture_kernel(name), [a, np.zeros_like(a)], outputs={1}, record=True, name=name)
    (path,) = write_traces(rep, out / "raw")
    clean_file(Path(path), out)
    return json.loads((out / "trace.clean.json").read_text())


def check_page(trace: dict, target: Path) -> Path:
    """The self-made viewer page with ``trace`` embedded (no network, no external files)."""
    payload = json.dumps(trace).replace("</", "<\\/")
    target.write_text(CHECK_PAGE.read_text().replace("__TRACE_JSON__", payload))
    return target
