"""An offline timeline of a run: one self-contained HTML page, no network.

    python -m pypto.tools.timeline <output_dir | run.json | trace.json> -o timeline.html
    pypto-timeline ...                      # the same command, installed as a script
    report.timeline_html("timeline.html")   # from a RunReport of a traced run

Above, the task swimlane: one row per core with its tasks (kernel, start, end). Below, per
core, one lane per pipe it used with its busy share; arrows join each ``set_flag`` to the
``wait_flag`` it released; under the lanes, the hot spots by source line. Zoomed out, a lane
draws how busy its pipe was per pixel; zoomed in, every instruction. Wheel zooms, drag pans,
hover shows instruction, source line, cycles and bytes, a click opens the source line (the
Python files are embedded).

Inputs: a ``RunReport`` with instruction records; a traced run's ``output_dir`` (it holds
``report/run.json``, the run's tasks and the trace file of each launch); that ``run.json``;
or one launch's ``visualize_data.bin`` (its TRACE block), ``trace.json`` or cleaned
``trace.clean.json`` (times from the launch's start).

The instructions are kept as numpy columns from the records to the page (a million of them
are a million rows of a few integers, never a million Python objects).
"""

from __future__ import annotations

import bisect
import functools
import json
import logging
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from pypto.errors import PyptoError
from pypto.hardware import FLAG_PIPE_NAMES
from pypto.report.hotspots import LineCycles, hot_lines
from pypto.report.opprof_format import API_INSTR, TRACE, ContainerError, iter_blocks, source_lines
from pypto.report.progress import progress
from pypto.report.records_file import NAME as RECORDS_NAME
from pypto.report.records_file import attach_records
from pypto.report.run_report import PIPES, RunReport, StringIds
from pypto.report.timeline_page import render_page
from pypto.report.trace import flag_pairs

log = logging.getLogger(__name__)

# How trace.json spells pipes inside a flag's ``args.detail`` (the vendor's names).
_DETAIL_PIPES = {name: i for i, name in enumerate(FLAG_PIPE_NAMES)}
_SYNC_KINDS = {"SET_FLAG": 1, "WAIT_FLAG": 2, "BAR": 3}
# One column per instruction field; kind 0 an operation, 1 set_flag, 2 wait_flag, 3 barrier;
# name/source index Model.strings; fsrc/fdst/fid the flag of a set/wait (fid -1: none).
COLUMNS = ("core", "pipe", "kind", "start", "end", "name", "source", "nbytes", "fsrc", "fdst", "fid")
HOT_ROWS = 40  # rows of the page's hot-spot table


class TimelineError(PyptoError):
    """The input holds nothing to draw, or is not a file this tool reads."""


@dataclass
class Model:
    """What the page draws: tasks, and the instructions as columns (``COLUMNS``)."""

    title: str
    platform: str
    clock_hz: float
    cycles: int
    cores: list[str] = field(default_factory=list)
    tasks: list[dict[str, Any]] = field(default_factory=list)
    bound: str = ""
    strings: dict[str, int] = field(default_factory=dict)
    parts: list[dict[str, np.ndarray]] = field(default_factory=list)
    arrows: list[tuple[int, int]] = field(default_factory=list)  # event pairs a trace drew itself
    size: int = 0  # instructions added so far

    def core(self, name: str) -> int:
        if name not in self.cores:
            self.cores.append(name)
        return self.cores.index(name)

    def intern(self, text: str) -> int:
        return self.strings.setdefault(text, len(self.strings))

    def add(self, **cols: Any) -> int:
        """Appends instructions (one array or scalar per ``COLUMNS`` name); returns the index
        of the first."""
        n = len(cols["start"])
        part = {k: np.broadcast_to(np.asarray(cols[k], np.int64), (n,)) for k in COLUMNS}
        self.parts.append(part)
        self.size += n
        return self.size - n

    def columns(self) -> dict[str, np.ndarray]:
        if not self.parts:
            return {k: np.zeros(0, np.int64) for k in COLUMNS}
        return {k: np.concatenate([p[k] for p in self.parts]) for k in COLUMNS}

    def to_page(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """The page's metadata and its packed columns (see ``pack``)."""
        return pack(self)


# --- packing for the page ---------------------------------------------------------------------
def pack(model: Model) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Events sorted by lane (core, then pipe) and start. Per event the page gets the start as
    a difference from the previous one in its lane, the duration, a site (name, source line,
    kind) and the bytes (an index into the distinct values): a few bytes each."""
    rank = {c: i for i, c in enumerate(sorted(model.cores, key=_core_order))}
    cores = sorted(model.cores, key=_core_order)
    ev = model.columns()
    ev["core"] = np.array([rank[c] for c in model.cores], np.int64)[ev["core"]] if model.size else ev["core"]
    lane_key = ev["core"] * len(PIPES) + ev["pipe"]
    order = np.lexsort((ev["end"], ev["start"], lane_key))
    pairs = np.concatenate([flag_pairs(ev), np.array(model.arrows, np.int64).reshape(-1, 2)])
    ev = {k: v[order] for k, v in ev.items()}
    lane_key = lane_key[order]
    where = np.empty_like(order)
    where[order] = np.arange(len(order))
    flows = where[pairs]

    keys, offsets, counts = np.unique(lane_key, return_index=True, return_counts=True)
    dur = ev["end"] - ev["start"]
    dstart = np.diff(ev["start"], prepend=0)
    dstart[offsets] = ev["start"][offsets]  # each lane starts from 0
    op = ev["kind"] == 0
    lanes = [
        {
            "core": int(k // len(PIPES)),
            "pipe": PIPES[int(k % len(PIPES))],
            "off": int(o),
            "n": int(n),
            "busy": _busy(ev["start"][o : o + n][op[o : o + n]], ev["end"][o : o + n][op[o : o + n]]),
            "maxdur": int(dur[o : o + n].max()),
        }
        for k, o, n in zip(keys.tolist(), offsets.tolist(), counts.tolist())
    ]
    strings = list(model.strings)
    site_key = (ev["name"] * max(1, len(strings)) + ev["source"]) * 4 + ev["kind"]
    sites, site = np.unique(site_key, return_inverse=True)
    byte_values, byte_code = np.unique(ev["nbytes"], return_inverse=True)
    ends = [t["end"] for t in model.tasks] + ([int(ev["end"].max())] if model.size else [])
    meta = {
        "title": model.title,
        "platform": model.platform,
        "clock_hz": model.clock_hz,
        "cycles": max([model.cycles, 1, *ends]),
        "bound": model.bound,
        "cores": cores,
        "lanes": lanes,
        "tasks": [{**t, "core": rank[t["core"]]} for t in model.tasks],
        "sites": [
            [strings[s // 4 // max(1, len(strings))], strings[s // 4 % max(1, len(strings))], s % 4]
            for s in sites.tolist()
        ],  # fmt: skip
        "byte_values": byte_values.tolist(),
        "events": model.size,
        "flows": len(flows),
        "hot": [r.to_dict() for r in _hot(ev, strings)],
    }
    meta["sources"] = _sources({s for _, s, _ in meta["sites"]})
    columns = {"dstart": dstart, "dur": dur, "site": site, "bytes": byte_code, "flows": flows.ravel()}
    return meta, columns


def _busy(start: np.ndarray, end: np.ndarray) -> int:
    """Cycles covered by at least one of the intervals (``start`` sorted)."""
    if not len(start):
        return 0
    reach = np.maximum.accumulate(end)
    begin = np.maximum(start[1:], reach[:-1])
    return int(end[0] - start[0] + np.clip(end[1:] - begin, 0, None).sum())


def _hot(ev: dict[str, np.ndarray], strings: list[str]) -> list[Any]:
    op = ev["kind"] == 0
    chunk = LineCycles(strings, ev["source"][op], ev["pipe"][op], ev["end"][op] - ev["start"][op])
    return hot_lines([chunk], top=HOT_ROWS)


def _sources(locations: set[str]) -> dict[str, list[str]]:
    """The Python files the instructions point at (``file:line:col``), embedded for the links."""
    files: dict[str, list[str]] = {}
    for text in sorted(locations):
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
    ids = StringIds(model.strings)  # each distinct records' string table mapped once
    batch: list[tuple[Any, int]] = []  # short tasks' records not added yet, each with its core
    rows = 0
    with progress("reading the records", len(report.tasks), "task") as done:
        for t in report.tasks:
            core = model.core(t.core_name)
            model.tasks.append(
                {"kernel": t.name, "core": t.core_name, "start": t.start, "end": t.end, "deps": list(t.deps)}
            )
            n = len(t.trace) if t.trace is not None else 0
            if n >= _SHORT_TASK:  # the short tasks before it, then its own part (views, no copy)
                _add_records(model, batch, ids)
                _add_records(model, [(t, core)], ids)
                batch, rows = [], 0
            elif n:
                batch.append((t, core))
                rows += n
                if rows >= _BATCH_ROWS:
                    _add_records(model, batch, ids)
                    batch, rows = [], 0
            done.update()
    if batch:
        _add_records(model, batch, ids)
    return model


# A decode's thousands of tasks of a few records each, added one by one, took ~0.15 ms each (a
# dozen numpy calls): tasks shorter than _SHORT_TASK records are added _BATCH_ROWS at a time.
_SHORT_TASK, _BATCH_ROWS = 1024, 1 << 16


def _add_records(model: Model, tasks: list[tuple[Any, int]], ids: StringIds) -> None:
    """The instructions of ``tasks`` (each with its core's number) as one part of the model;
    ``ids``: the records' string tables in ``model.strings``."""
    if not tasks:
        return
    raws = [t.trace.raw for t, _ in tasks]
    counts = [len(r["table"]) for r in raws]
    maps = [ids.of(r["strings"]) for r in raws]
    table, name_id, loc_id = (  # one task's: its own arrays, no copy
        raws[0][k] if len(raws) == 1 else np.concatenate([r[k] for r in raws])
        for k in ("table", "name_id", "loc_id")
    )
    every = np.concatenate(maps)
    base = np.repeat(np.cumsum([0] + [len(m) for m in maps[:-1]]), counts)  # each row's task's ids in `every`
    limit = np.repeat([len(m) for m in maps], counts)
    bad = (name_id < 0) | (name_id >= limit) | (loc_id < 0) | (loc_id >= limit)
    if bad.any():  # joined, it would read another task's strings
        task = tasks[int(np.searchsorted(np.cumsum(counts), np.argmax(bad), side="right"))][0]
        raise TimelineError(f"the records of {task.name} on {task.core_name} name a string past their table")
    offset = np.repeat(np.array([t.start for t, _ in tasks], np.int64), counts)
    kind = table[:, 1]
    model.add(
        core=np.repeat(np.array([core for _, core in tasks], np.int64), counts),
        pipe=table[:, 2],
        kind=kind,
        start=table[:, 4] + offset,
        end=table[:, 5] + offset,
        name=every[base + name_id],
        source=every[base + loc_id],
        nbytes=table[:, 6],
        fsrc=table[:, 8],
        fdst=table[:, 9],
        fid=np.where((kind == 1) | (kind == 2), table[:, 10], -1),
    )


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


def _flag_of(detail: str) -> tuple[int, int, int]:
    fields = dict(part.split(":", 1) for part in detail.split(",") if ":" in part)
    try:
        return (_DETAIL_PIPES[fields["PIPE"]], _DETAIL_PIPES[fields["TRIGGERPIPE"]], int(fields["FLAGID"]))
    except (KeyError, ValueError):
        return (-1, -1, -1)


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


def _trace_text(path: Path) -> tuple[bytes, dict[str, str]]:
    """The Chrome-trace JSON of a file (a container's TRACE block, or the file itself) and the
    pc_addr -> source line map its raw events need: the raw events carry only the address, and
    the container's API_INSTR block names each one's line. A raw ``trace.json`` takes them from
    the ``visualize_data.bin`` beside it; a cleaned trace's slices carry their lines."""
    data = path.read_bytes()
    if path.suffix == ".bin":
        trace, api = _first_blocks(data)
        if trace is None:
            raise ValueError("no TRACE block")
        return bytes(trace), _api_lines(api)
    beside = path.with_name("visualize_data.bin")
    if path.name != "trace.json" or not beside.is_file():
        return data, {}
    try:
        return data, _api_lines(_first_blocks(beside.read_bytes())[1])
    except (OSError, ValueError):  # an unreadable container beside: the slices go without lines
        return data, {}


def _first_blocks(data: bytes) -> tuple[memoryview | bytes | None, memoryview | bytes | None]:
    """The payloads of a container's first TRACE and first API_INSTR blocks (None: none). A bad
    block before the TRACE block is a ``ContainerError``; one after it only ends the search."""
    found: dict[int, bytes | memoryview] = {}
    try:
        for block in iter_blocks(data):
            found.setdefault(block.type, block.payload)
            if TRACE in found and API_INSTR in found:
                break
    except ContainerError:
        if TRACE not in found:
            raise
    return found.get(TRACE), found.get(API_INSTR)


def _api_lines(api: bytes | memoryview | None) -> dict[str, str]:
    """source_lines of an API_INSTR payload; none without one, or when it is not JSON (the
    slices then go without lines, not the timeline)."""
    try:
        return source_lines(json.loads(bytes(api))) if api is not None else {}
    except ValueError:
        return {}


def read_trace(path: Path, model: Model, offsets: dict[str, int] | None = None) -> None:
    """Adds the instructions of one kernel's trace (its ``visualize_data.bin`` or
    ``trace.json``, or the cleaned ``trace.clean.json`` with its arrows); offsets: per core,
    the run's cycle at the trace's time 0."""
    try:
        text, lines = _trace_text(path)
        doc = json.loads(text)
        events = doc["traceEvents"]
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise TimelineError(f"{path}: not a pypto trace ({err})") from None
    clock = _clock(doc, model.clock_hz)
    model.clock_hz = model.clock_hz or clock
    per_us = _cycles_per_trace_us(doc, clock)
    procs, lanes = _names(events)
    rows: list[tuple[int, ...]] = []
    where: dict[tuple[Any, Any], tuple[int, int, int] | None] = {}  # (pid, tid) -> core, pipe, start
    flags = functools.lru_cache(maxsize=None)(_flag_of)
    intern, offsets_ = model.intern, offsets or {}
    for e in events:
        if e.get("ph") != "X":
            continue
        lane = (e.get("pid"), e.get("tid"))
        if lane not in where:
            where[lane] = _lane_of(e, procs, lanes, model, offsets_)
        place = where[lane]
        if place is None:
            continue
        args = e.get("args", {})
        start = place[2] + round(e["ts"] * per_us)
        kind = _SYNC_KINDS.get(e["name"], 0) if "detail" in args else 0
        flag = flags(args["detail"]) if kind in (1, 2) else (-1, -1, -1)
        end = start + int(args.get("cycles", round(e["dur"] * per_us)))
        pc = args.get("pc_addr")
        by_pc = lines.get(pc) if isinstance(pc, str) else None
        line = args.get("source_line") or by_pc or args.get("source", "")
        rows.append((place[0], place[1], kind, start, end, intern(str(e["name"])), intern(str(line)),
                     int(args.get("bytes", 0)), *flag))  # fmt: skip
    first = model.add(**dict(zip(COLUMNS, np.array(rows, np.int64).reshape(-1, len(COLUMNS)).T)))
    _read_arrows(events, procs, lanes, rows, first, per_us, offsets or {}, model)
    if offsets is None:
        model.cycles = max((r[4] for r in rows), default=0)


def _lane_of(
    e: dict[str, Any], procs, lanes, model: Model, offsets: dict[str, int]
) -> tuple[int, int, int] | None:
    """(core index, pipe, the core's time offset) of an event's lane; None off the pipe lanes."""
    pipe = lanes.get((e.get("pid"), e.get("tid")), e.get("tid"))
    if pipe not in PIPES:
        return None
    core = _core_name(procs.get(e["pid"], str(e["pid"])))
    return model.core(core), PIPES.index(pipe), offsets.get(core, 0)


def _read_arrows(events, procs, lanes, rows, first, per_us, offsets, model) -> None:
    """Flow events (``ph`` s/f, one id per arrow) become arrows between the slices they touch."""
    placed: dict[tuple[int, int], list[tuple[int, int, int]]] = defaultdict(list)
    for i, r in enumerate(rows):
        placed[(r[0], r[1])].append((r[3], r[4], first + i))
    for lane in placed.values():
        lane.sort()
    ends: dict[Any, dict[str, int]] = defaultdict(dict)
    for e in events:
        if e.get("ph") not in ("s", "f"):
            continue
        pipe = lanes.get((e.get("pid"), e.get("tid")), e.get("tid"))
        core = _core_name(procs.get(e.get("pid"), str(e.get("pid"))))
        if pipe not in PIPES or core not in model.cores:
            continue
        t = offsets.get(core, 0) + e["ts"] * per_us
        lane = placed.get((model.cores.index(core), PIPES.index(pipe)), [])
        k = bisect.bisect_right(lane, (t + 1, float("inf"), 0))
        hit = [r for r in lane[max(0, k - 64) : k] if r[0] - 1 <= t <= r[1] + 1]
        if hit:
            ends[e.get("id")][e["ph"]] = hit[0][2]
    model.arrows += [(pair["s"], pair["f"]) for pair in ends.values() if "s" in pair and "f" in pair]


def model_of_run_json(path: Path) -> Model:
    """The report's tasks with their records from ``records.npz`` beside ``path`` (the same
    model as from the report in memory); without that file, from each launch's TRACE JSON."""
    report = RunReport.load(path)
    if attach_records(report, path.parent / RECORDS_NAME):
        return model_of_report(report)
    model = model_of_report(report, title=_title(report))
    # A kernel's container counts time from its earliest launch (write_traces): every core's
    # events in it are offset by that launch's start.
    origin: dict[str, int] = {}
    for t in report.tasks:
        if t.trace_file:
            origin[t.trace_file] = min(origin.get(t.trace_file, t.start), t.start)
    by_trace: dict[str, dict[str, int]] = defaultdict(dict)
    for t in report.tasks:
        if t.trace_file:
            by_trace[t.trace_file][t.core_name] = origin[t.trace_file]
    with progress("reading the kernels' traces", len(by_trace), "kernel") as done:
        for trace_file, offsets in by_trace.items():
            trace = Path(trace_file)
            if trace.is_file():
                read_trace(trace, model, offsets)
            else:
                log.warning("%s: the trace of a kernel is missing; its instructions are not drawn", trace)
            done.update()
    return model


def load_model(path: Path) -> Model:
    """From an output_dir, a run.json, a trace.json or a folder holding one launch's files."""
    if path.is_dir():
        names = ("report/run.json", "run.json", "trace.json", "visualize_data.bin")
        for candidate in (path / name for name in names):
            if candidate.is_file():
                return load_model(candidate)
        raise TimelineError(
            f"{path} holds no report/run.json nor trace.json: run the kernel with RunConfig(trace=True)"
        )
    if not path.is_file():
        raise TimelineError(f"{path}: no such file")
    try:
        doc = json.loads(_trace_text(path)[0])
    except (OSError, ValueError) as e:
        raise TimelineError(f"{path}: not JSON ({e})") from None
    if isinstance(doc, dict) and "schema" in doc and "tasks" in doc and "traceEvents" not in doc:
        return model_of_run_json(path)
    model = Model(f"{path.parent.parent.name or path.stem}", "", 0.0, 0)
    read_trace(path, model)
    return model


def write_page(model: Model, out: str | Path) -> Path:
    out = Path(out)
    if not model.tasks and not model.size:
        raise TimelineError("nothing to draw: no tasks and no instructions")
    with progress("building the timeline", 2, "step") as done:
        meta, columns = model.to_page()
        done.update()
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(render_page(meta, columns))
        done.update()
    log.info("wrote the timeline of %d instructions to %s", model.size, out)
    return out


def write_report_timeline(report: RunReport, path: str | Path, *, title: str | None = None) -> Path:
    """``RunReport.timeline_html``: the page of a report (pipe lanes need a traced run)."""
    return write_page(model_of_report(report, title), path)
