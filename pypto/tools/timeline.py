"""An offline timeline of a run: one self-contained HTML page, no network.

    python -m pypto.tools.timeline <output_dir | run.json | trace.json> -o timeline.html
    pypto-timeline ...                      # the same command, installed as a script
    report.timeline_html("timeline.html")   # from a RunReport of a traced run

Above, the task swimlane: one row per core with its tasks (kernel, start, end). Below, per
core, one lane per pipe it used with every instruction; arrows join each ``set_flag`` to the
``wait_flag`` it released. Wheel zooms, drag pans, hover shows instruction, source line,
cycles and bytes, a click opens the source line (the Python files are embedded).

Inputs: a ``RunReport`` with instruction records; a traced run's ``output_dir`` (it holds
``report/run.json``, the run's tasks and the trace file of each launch); that ``run.json``;
or one launch's ``trace.json`` or cleaned ``trace.clean.json`` (times from the launch's start).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict, deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pypto.errors import PyptoError
from pypto.runtime.report import PIPES, RunReport
from pypto.tools._cli import guarded, write_report
from pypto.tools.timeline_page import render_page

# How trace.json spells pipes inside a flag's ``args.detail`` (the vendor's names).
_DETAIL_PIPES = {"MTE2": 0, "MTE1": 1, "M": 2, "VEC": 3, "FIX": 4, "MTE3": 5, "S": 6}
_SYNC_KINDS = {"SET_FLAG": 1, "WAIT_FLAG": 2, "BAR": 3}


class TimelineError(PyptoError):
    """The input holds nothing to draw, or is not a file this tool reads."""


@dataclass
class Row:
    """One instruction on one core, in run cycles."""

    kind: int  # 0 an operation, 1 set_flag, 2 wait_flag, 3 barrier
    pipe: int
    start: int
    end: int
    name: str
    source: str
    nbytes: int = 0
    flag: tuple[int, int, int] | None = None  # (src pipe, dst pipe, id) of a set/wait


@dataclass
class Model:
    """What the page draws; ``to_json`` is its embedded data."""

    title: str
    platform: str
    clock_hz: float
    cycles: int
    cores: list[str] = field(default_factory=list)
    tasks: list[dict[str, Any]] = field(default_factory=list)
    rows: dict[str, list[Row]] = field(default_factory=lambda: defaultdict(list))
    bound: str = ""
    arrows: list[tuple[Row, Row]] = field(default_factory=list)  # flows a trace drew itself

    def core(self, name: str) -> int:
        if name not in self.cores:
            self.cores.append(name)
        return self.cores.index(name)

    def to_json(self) -> dict[str, Any]:
        strings: dict[str, int] = {}

        def sid(text: str) -> int:
            return strings.setdefault(text, len(strings))

        events, flows, lanes = [], [], []  # type: ignore[var-annotated]
        where: dict[int, int] = {}
        for ci, core in enumerate(self.cores):
            rows = sorted(self.rows.get(core, []), key=lambda r: (r.pipe, r.start, r.end))
            used = sorted({r.pipe for r in rows})
            lanes.append([PIPES[p] for p in used])
            first = len(events)
            for r in rows:
                where[id(r)] = len(events)
                events.append(
                    [ci, used.index(r.pipe), r.start, r.end, sid(r.name), sid(r.source), r.nbytes, r.kind]
                )
            flows += [[first + a, first + b] for a, b in _flag_pairs(rows)]
        flows += [[where[id(a)], where[id(b)]] for a, b in self.arrows if id(a) in where and id(b) in where]
        return {
            "title": self.title,
            "platform": self.platform,
            "clock_hz": self.clock_hz,
            "cycles": self.cycles,
            "bound": self.bound,
            "cores": self.cores,
            "lanes": lanes,
            "tasks": [{**t, "core": self.core(t["core"])} for t in self.tasks],
            "strings": list(strings),
            "events": events,
            "flows": flows,
            "sources": _sources(strings),
        }


def _flag_pairs(rows: list[Row]) -> list[tuple[int, int]]:
    """(set, wait) row indices: each wait takes the earliest set of its flag that fired."""
    sets: dict[tuple[int, int, int], deque[int]] = defaultdict(deque)
    pairs = []
    order = sorted(range(len(rows)), key=lambda i: (rows[i].start, rows[i].kind != 1))
    for i in order:
        r = rows[i]
        if r.kind == 1 and r.flag is not None:
            sets[r.flag].append(i)
        elif r.kind == 2 and r.flag is not None and sets[r.flag]:
            pairs.append((sets[r.flag].popleft(), i))
    return pairs


def _sources(strings: dict[str, int]) -> dict[str, list[str]]:
    """The Python files the instructions point at (``file:line:col``), embedded for the links."""
    files: dict[str, list[str]] = {}
    for text in strings:
        parts = text.rsplit(":", 2)
        if len(parts) == 3 and parts[1].isdigit() and parts[0] not in files:
            path = Path(parts[0])
            if path.suffix == ".py" and path.is_file():
                files[parts[0]] = path.read_text(errors="replace").splitlines()
    return files


# --- from a RunReport -----------------------------------------------------------------------
def model_of_report(report: RunReport, title: str | None = None) -> Model:
    bound = report.bound
    model = Model(
        title or _title(report), report.platform, report.clock_hz, report.cycles, bound=str(bound or "")
    )
    for t in report.tasks:
        model.core(t.core_name)
        model.tasks.append(
            {"kernel": t.name, "core": t.core_name, "start": t.start, "end": t.end, "deps": list(t.deps)}
        )
        if t.trace is None:
            continue
        raw = t.trace.raw
        strings, table = raw["strings"], raw["table"].tolist()
        for row, n, s in zip(table, raw["name_id"].tolist(), raw["loc_id"].tolist()):
            _, kind, pipe, _, start, end, nbytes, _, fsrc, fdst, fid = row
            flag = (fsrc, fdst, fid) if kind in (1, 2) else None
            model.rows[t.core_name].append(
                Row(kind, pipe, t.start + start, t.start + end, strings[n], strings[s], nbytes, flag)
            )
    model.cores.sort(key=_core_order)
    return model


def _title(report: RunReport) -> str:
    kernels = list(dict.fromkeys(t.name for t in report.tasks))
    shown = ", ".join(kernels[:3]) + (f" +{len(kernels) - 3}" if len(kernels) > 3 else "")
    return f"{shown} on {report.platform}"


def _core_order(name: str) -> tuple[int, int, str]:
    kind = 0 if name.startswith("AIC") else 1 if name.startswith("AIV") else 2
    digits = "".join(ch for ch in name if ch.isdigit())
    return (kind, int(digits) if digits else 0, name)


# --- from files -----------------------------------------------------------------------------
def _core_name(pid: str) -> str:
    """``core3.cubecore0`` -> ``AIC3``; ``core1.veccore1`` -> ``AIV3`` (the run's core names)."""
    cluster, _, unit = pid.partition(".")
    if cluster.startswith("core") and cluster[4:].isdigit():
        n = int(cluster[4:])
        if unit.startswith("cubecore"):
            return f"AIC{n}"
        if unit.startswith("veccore") and unit[7:].isdigit():
            return f"AIV{2 * n + int(unit[7:])}"
    return pid


def _flag_of(detail: str) -> tuple[int, int, int] | None:
    fields = dict(part.split(":", 1) for part in detail.split(",") if ":" in part)
    try:
        return (_DETAIL_PIPES[fields["PIPE"]], _DETAIL_PIPES[fields["TRIGGERPIPE"]], int(fields["FLAGID"]))
    except (KeyError, ValueError):
        return None


def _names(events: list[dict[str, Any]]) -> tuple[dict[Any, str], dict[tuple[Any, Any], str]]:
    """Process and lane names from the metadata events (``MTE2 · load`` and ``MTE2#1`` are MTE2)."""
    procs, lanes = {}, {}
    for e in events:
        if e.get("ph") == "M" and e.get("name") == "process_name":
            procs[e["pid"]] = str(e["args"]["name"])
        elif e.get("ph") == "M" and e.get("name") == "thread_name":
            lanes[(e["pid"], e.get("tid"))] = str(e["args"]["name"]).split(" ")[0].split("#")[0]
    return procs, lanes


def _cycles_per_trace_us(doc: dict[str, Any], clock: float) -> float:
    """pypto traces count one simulated cycle per trace nanosecond; others are real time."""
    other = doc.get("otherData", {}) if isinstance(doc, dict) else {}
    nested = other.get("source_otherData", {}) if isinstance(other, dict) else {}
    unit = other.get("time_unit") or nested.get("time_unit")
    return 1000.0 if unit == "cycle" else clock / 1e6


def _clock(doc: dict[str, Any], fallback: float) -> float:
    other = doc.get("otherData", {}) if isinstance(doc, dict) else {}
    nested = other.get("source_otherData", {}) if isinstance(other, dict) else {}
    return float(other.get("clock_hz") or nested.get("clock_hz") or fallback or 1e9)


def read_trace(path: Path, model: Model, offsets: dict[str, int] | None = None) -> None:
    """Adds the instructions of one launch's trace (``trace.json``, or the cleaned
    ``trace.clean.json`` with its arrows); offsets: per core, its task's start."""
    try:
        doc = json.loads(path.read_text())
        events = doc["traceEvents"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise TimelineError(f"{path}: not a pypto trace ({e})") from None
    clock = _clock(doc, model.clock_hz)
    model.clock_hz = model.clock_hz or clock
    per_us = _cycles_per_trace_us(doc, clock)
    procs, lanes = _names(events)
    placed: dict[tuple[str, int], list[Row]] = defaultdict(list)
    for e in events:  # type: ignore[misc]
        pipe = lanes.get((e.get("pid"), e.get("tid")), e.get("tid"))
        if e.get("ph") != "X" or pipe not in PIPES:
            continue
        core = _core_name(procs.get(e["pid"], str(e["pid"])))
        base = (offsets or {}).get(core, 0)
        args = e.get("args", {})
        start = base + round(e["ts"] * per_us)
        kind = _SYNC_KINDS.get(e["name"], 0) if "detail" in args else 0
        flag = _flag_of(args["detail"]) if kind in (1, 2) else None
        end = start + int(args.get("cycles", round(e["dur"] * per_us)))
        line = str(args.get("source_line", args.get("source", "")))
        row = Row(kind, PIPES.index(pipe), start, end, str(e["name"]), line, int(args.get("bytes", 0)), flag)
        model.core(core)
        model.rows[core].append(row)
        placed[(core, row.pipe)].append(row)
    _read_arrows(events, procs, lanes, placed, per_us, offsets or {}, model)
    if offsets is None:
        model.cycles = max((r.end for rows in model.rows.values() for r in rows), default=0)


def _read_arrows(events, procs, lanes, placed, per_us, offsets, model) -> None:
    """Flow events (``ph`` s/f, one id per arrow) become arrows between the slices they touch."""
    ends: dict[Any, dict[str, Row]] = defaultdict(dict)
    for e in events:
        if e.get("ph") not in ("s", "f"):
            continue
        pipe = lanes.get((e.get("pid"), e.get("tid")), e.get("tid"))
        core = _core_name(procs.get(e.get("pid"), str(e.get("pid"))))
        if pipe not in PIPES:
            continue
        t = offsets.get(core, 0) + e["ts"] * per_us
        hit = [r for r in placed.get((core, PIPES.index(pipe)), []) if r.start - 1 <= t <= r.end + 1]
        if hit:
            ends[e.get("id")][e["ph"]] = hit[0]
    model.arrows += [(pair["s"], pair["f"]) for pair in ends.values() if "s" in pair and "f" in pair]


def model_of_run_json(path: Path) -> Model:
    report = RunReport.load(path)
    model = model_of_report(report, title=_title(report))
    by_trace: dict[str, dict[str, int]] = defaultdict(dict)
    for t in report.tasks:
        if t.trace_file:
            by_trace[t.trace_file][t.core_name] = t.start
    for trace_file, offsets in by_trace.items():
        trace = Path(trace_file).with_name("trace.json")
        if trace.is_file():
            read_trace(trace, model, offsets)
    model.cores.sort(key=_core_order)
    return model


def load_model(path: Path) -> Model:
    """From an output_dir, a run.json, a trace.json or a folder holding one launch's files."""
    if path.is_dir():
        for candidate in (path / "report" / "run.json", path / "run.json", path / "trace.json"):
            if candidate.is_file():
                return load_model(candidate)
        raise TimelineError(
            f"{path} holds no report/run.json nor trace.json: run the kernel with RunConfig(trace=True)"
        )
    if path.name == "visualize_data.bin":
        return load_model(path.with_name("trace.json"))
    if not path.is_file():
        raise TimelineError(f"{path}: no such file")
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise TimelineError(f"{path}: not JSON ({e})") from None
    if isinstance(doc, dict) and "schema" in doc and "tasks" in doc and "traceEvents" not in doc:
        return model_of_run_json(path)
    model = Model(f"{path.parent.parent.name or path.stem}", "", 0.0, 0)
    read_trace(path, model)
    model.cores.sort(key=_core_order)
    return model


def write_page(model: Model, out: str | Path) -> Path:
    out = Path(out)
    data = model.to_json()
    if not data["tasks"] and not data["events"]:
        raise TimelineError("nothing to draw: no tasks and no instructions")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render_page(data))
    return out


def write_report_timeline(report: RunReport, path: str | Path, *, title: str | None = None) -> Path:
    """``RunReport.timeline_html``: the page of a report (pipe lanes need a traced run)."""
    return write_page(model_of_report(report, title), path)


@guarded
def main(argv: list[str] | None = None) -> int:
    from pypto import __version__

    p = argparse.ArgumentParser(
        prog="pypto-timeline",
        description="Write a self-contained HTML timeline (task swimlane, pipe lanes, flag arrows) "
        "of a traced run. Open it in any browser; no network needed.",
    )
    p.add_argument(
        "path",
        type=Path,
        help="a traced run's output_dir, its report/run.json, a trace.json or a cleaned trace.clean.json",
    )
    p.add_argument("-o", "--output", type=Path, default=Path("timeline.html"), help="HTML file to write")
    p.add_argument("--version", action="version", version=f"pypto {__version__}")
    args = p.parse_args(argv)
    errors = (TimelineError, OSError, ValueError)
    return write_report(lambda: write_page(load_model(args.path), args.output), errors)


if __name__ == "__main__":
    sys.exit(main())
