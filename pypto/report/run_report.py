"""What a run tells the user: simulated cycles, per-pipe busy time, per-task detail."""

from __future__ import annotations

import functools
import json
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from pypto.hardware import PIPES  # re-exported: the report's pipe order

log = logging.getLogger(__name__)

RECORD_COLUMNS = (
    "index",
    "kind",
    "pipe",
    "issue",
    "start",
    "end",
    "bytes",
    "addr",
    "flag_src",
    "flag_dst",
    "flag_id",
)


class StringIds:
    """Tasks' string tables mapped into one table of the run's (``strings``: each string's id, in
    order of first appearance, task by task): each distinct table's ids made once, as a decode's
    thousands of tasks share a few tables."""

    def __init__(self, strings: dict[str, int] | None = None) -> None:
        self.strings = {} if strings is None else strings
        self._ids: dict[tuple[str, ...], np.ndarray] = {}

    def of(self, table: list[str]) -> np.ndarray:
        """The run-wide ids of ``table``'s strings, by position."""
        key = tuple(table)
        ids = self._ids.get(key)
        if ids is None:
            strings = self.strings
            ids = self._ids[key] = np.array([strings.setdefault(t, len(strings)) for t in key], np.int64)
        return ids


class InstrTrace:
    """Per-instruction records of one task (native table; columns built on first access)."""

    def __init__(self, raw: dict[str, Any]) -> None:
        self._raw = raw
        self._columns: dict[str, Any] | None = None
        self._by_column: np.ndarray | None = None

    @property
    def columns(self) -> dict[str, Any]:
        """numpy int64 arrays per RECORD_COLUMNS, plus ``name``/``loc`` lists."""
        if self._columns is None:
            table, strings = self._raw["table"], self._raw["strings"]
            cols: dict[str, Any] = {k: table[:, i] for i, k in enumerate(RECORD_COLUMNS)}
            cols["name"] = [strings[i] for i in self._raw["name_id"].tolist()]
            cols["loc"] = [strings[i] for i in self._raw["loc_id"].tolist()]
            self._columns = cols
        return self._columns

    @property
    def raw(self) -> dict[str, Any]:
        """The native form: ``table`` (one int64 row per record, RECORD_COLUMNS order) and
        ``name_id`` / ``loc_id`` indexing ``strings`` (what the trace writer works on)."""
        return self._raw

    @property
    def by_column(self) -> np.ndarray:
        """The records table transposed (one contiguous int64 row per RECORD_COLUMNS entry),
        made once in one native pass: a column of the row-major table is a strided read of the
        whole table, and the timeline reads most columns (the trace writers and the records
        file read the row-major table natively, without this copy)."""
        if self._by_column is None:
            from pypto import _native

            self._by_column = _native.record_columns(self._raw["table"])
        return self._by_column

    def __len__(self) -> int:
        return len(self._raw["table"])

    def intervals(self, pipe: str, include_sync: bool = False) -> list[tuple[int, int]]:
        """(start, end) of the instructions on `pipe`, in program order; set/wait/barrier
        slices only with ``include_sync``."""
        table = self._raw["table"]
        sel = table[:, 2] == PIPES.index(pipe)
        if not include_sync:
            sel &= table[:, 1] == 0
        return list(zip(table[sel, 4].tolist(), table[sel, 5].tolist()))

    def rows(self) -> list[dict[str, Any]]:
        cols = self.columns
        table = self._raw["table"].tolist()
        return [
            {
                "name": cols["name"][i],
                "loc": cols["loc"][i],
                "pipe_name": PIPES[row[2]],
                **dict(zip(RECORD_COLUMNS, row)),
            }
            for i, row in enumerate(table)
        ]


@dataclass
class TaskReport:
    """One kernel execution on one simulated core. ``start``/``end`` are run cycles; the
    instruction records (``trace``) count from the task's own start."""

    name: str
    core: int
    start: int
    end: int
    pipe_busy: dict[str, int]
    instructions: int
    hazards: list[str] = field(default_factory=list)
    trace: InstrTrace | None = None
    core_type: str = "AIV"  # the core kind: "AIC" (cube) or "AIV" (vector)
    cluster: int | None = None  # the AIC + 2 AIV group the core belongs to, when known
    trace_file: str | None = None  # the launch's visualize_data.bin, once written
    deps: tuple[int, ...] = ()  # indices of the tasks it waited for before starting
    block: int = 0  # its block index (pl.get_block_idx()) in a pl.spmd dispatch
    # Its own GM transfers in the shared memory system: L2 line hits and misses, bytes served
    # by HBM and by the L2 (``hbm_bytes``, ``l2_bytes``); empty when the run did not count them.
    memory: dict[str, float] = field(default_factory=dict)

    @property
    def core_name(self) -> str:
        """e.g. ``AIC3``: the core type and its index on the platform."""
        return f"{self.core_type}{self.core}"

    @property
    def core_kind(self) -> str:
        return self.core_type

    @property
    def cycles(self) -> int:
        return self.end - self.start


@dataclass
class RunReport:
    """The profile of one run. ``cycles`` is end to end; ``pipe_busy`` sums all tasks.

    Views (utilisation per core and per core kind, the bounding pipe, the task table, JSON)
    are computed from the tasks; see ``pypto.report.views``."""

    platform: str
    cycles: int
    pipe_busy: dict[str, int]
    instructions: int
    tasks: list[TaskReport]
    hazards: list[str] = field(default_factory=list)
    trace_paths: list[str] = field(default_factory=list)
    clock_hz: float = 0.0
    # The shared memory system: L2 line hits/misses, bytes served by HBM and by the L2, and how
    # many transfers were slowed because cores shared a bandwidth.
    memory: dict[str, float] = field(default_factory=dict)
    # The hot-spot table of a report read back from JSON (its records are not saved).
    saved_hot_lines: list[Any] = field(default_factory=list, repr=False)
    # The hot-spot table once computed, with the records it came from (a task given other
    # records, as attach_records does, makes a new one): printing, saving and the traced run's
    # files all ask for it, and at a million records it is one pass over ~90 MB.
    _hot: tuple[tuple[Any, ...], list[Any]] | None = field(
        default=None, init=False, repr=False, compare=False
    )

    def intervals(self, pipe: str, task: int = 0) -> list[tuple[int, int]]:
        """Recorded busy intervals of `pipe` in task `task` (needs a recorded run)."""
        trace = self.tasks[task].trace
        if trace is None:
            raise ValueError(
                "this run kept no instruction records: run with RunConfig(trace=True) "
                "(or record=True for run_kernel_file)"
            )
        return trace.intervals(pipe)

    @property
    def time_us(self) -> float:
        return self.cycles / self.clock_hz * 1e6 if self.clock_hz else 0.0

    def cores(self) -> list[Any]:
        """Per core that ran a task: its busy cycles and utilisation per pipe (``CoreUse``)."""
        return _views().per_core(self)

    def kinds(self) -> dict[str, Any]:
        """Per core kind (``AIC``, ``AIV``) that ran a task: mean utilisation per pipe."""
        return _views().per_kind(self)

    @property
    def bound(self) -> Any:
        """The bounding pipe: the highest utilisation of any pipe on any core (``Bound``)."""
        return _views().bound(self)

    @property
    def bounds(self) -> dict[str, Any]:
        """Per core kind (``AIC``, ``AIV``) that ran tasks: its bounding pipe (``Bound``, with
        ``ratio`` = run cycles from the first task's start / that pipe's busy cycles on its
        busiest core)."""
        return _views().bounds(self)

    def kernels(self) -> list[Any]:
        """Per kernel name, in start order: its time, cores, HBM bytes, L2 hit rate and bound
        (``KernelUse``, see ``pypto.report.kernels``)."""
        from pypto.report import kernels as report_kernels

        return report_kernels.kernels(self)

    def rooflines(self) -> Any:
        """The makespan against the HBM, CUBE and VECTOR rooflines (``Rooflines``)."""
        from pypto.report import kernels as report_kernels

        return report_kernels.rooflines(self)

    def diff(self, other: RunReport) -> Any:
        """This run (the baseline) against ``other``: makespan, per-pipe busy cycles, per-kernel
        time and memory counters, each absolute and in %, naming the pipe and kernel that
        changed most (``ReportDiff``, see ``pypto.report.diff``)."""
        from pypto.report import diff as report_diff

        return report_diff.diff(self, other)

    def hot_lines(self, top: int | None = None) -> list[Any]:
        """Instruction cycles per Python source line and pipe, most first (``HotLine``: source,
        pipe, cycles, count, share); needs a traced run or a report saved from one."""
        from pypto.report import hotspots

        traces = tuple(t.trace for t in self.tasks)
        if self._hot is None or not _same(self._hot[0], traces):
            chunks = hotspots.chunks_of(t.raw for t in traces if t is not None)
            self._hot = (traces, hotspots.hot_lines(chunks) if chunks else list(self.saved_hot_lines))
        rows = self._hot[1]
        return rows[:top] if top is not None else list(rows)

    def task_table(self) -> list[dict[str, Any]]:
        """One row per task (kernel, core, start, end, cycles), the longest first."""
        return _views().task_table(self)

    def to_dict(self) -> dict[str, Any]:
        """Everything above as plain JSON types (instruction records are not included)."""
        return _views().to_dict(self)

    def to_json(self, indent: int | None = 1) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    def save(self, path: str | Path) -> Path:
        """Writes ``to_json()`` to ``path`` (folders created); returns the path. Trace files
        are named relative to the file's folder, so a copied output folder keeps them."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        data = self.to_dict()
        folder = path.parent.resolve()  # once: a traced decode names thousands of trace files
        _move_trace_paths(data, functools.partial(_relative, _ancestors(str(folder))))
        from pypto.report.file_blocks import rewritten  # not at import: a warm call saves nothing

        with rewritten(path) as f:  # a traced call writes it again each time
            f.write(_readable_json(data).encode())
        return path

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunReport:
        return _views().from_dict(data)

    @classmethod
    def from_json(cls, text: str) -> RunReport:
        return _views().from_dict(json.loads(text))

    @classmethod
    def load(cls, path: str | Path) -> RunReport:
        """Reads a saved report; its trace files are found relative to the file's folder (a
        warning names each one that is missing)."""
        path = Path(path)
        data = json.loads(path.read_text())
        if isinstance(data, dict):  # each distinct name resolved once: a decode's tasks name a few
            _move_trace_paths(data, functools.cache(lambda p: str((path.parent / p).resolve())))
            for name in {p for p in data.get("trace_paths", [])}:
                if not Path(name).is_file():
                    log.warning("%s names a trace file that is missing: %s", path, name)
        return _views().from_dict(data)

    def timeline_html(self, path: str | Path, *, title: str | None = None) -> Path:
        """A self-contained HTML timeline of this run (needs a recorded run for the pipe lanes)."""
        from pypto.report.timeline import write_report_timeline

        return write_report_timeline(self, path, title=title)

    def __str__(self) -> str:
        return _views().format_report(self)


def _same(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    """Whether two tuples hold the very same objects, in order."""
    return len(a) == len(b) and all(x is y for x, y in zip(a, b))


def _readable_json(data: dict[str, Any]) -> str:
    """``data`` as JSON to read by eye, written by json's C encoder: a line per key and, in a
    list, a line per item (a task, a hazard, a trace path), each item compact. ``indent=``
    would run json's pure-Python encoder: a second for a decode's 16,448 tasks."""
    if not all(isinstance(k, str) for k in data):
        return json.dumps(data, indent=1)

    def value(v: Any) -> str:
        if isinstance(v, list) and v:
            return "[\n  " + ",\n  ".join(map(json.dumps, v)) + "\n ]"
        return json.dumps(v)

    return "{\n" + ",\n".join(f" {json.dumps(k)}: {value(v)}" for k, v in data.items()) + "\n}\n"


def _ancestors(folder: str) -> list[tuple[str, str]]:
    """(the prefix of the folder ``folder`` or of one of its ancestors, the ``..`` steps up to
    it), nearest first: what a name below each is relative to ``folder``."""
    found, up = [], ""
    while True:
        found.append((folder.rstrip(os.sep) + os.sep, up))
        parent = os.path.dirname(folder)
        if parent == folder:
            return found
        folder, up = parent, up + ".." + os.sep


def _relative(ancestors: list[tuple[str, str]], name: str) -> str:
    """``name`` relative to the folder whose ``_ancestors`` are given, as os.path.relpath
    names it, by the nearest ancestor it lies below (a trace file: the report folder's parent
    or its own): relpath's ~8 us, twice per launch of a traced decode's thousands, otherwise."""
    full = os.path.abspath(name) + os.sep
    for prefix, up in ancestors:
        if full.startswith(prefix):
            return (up + full[len(prefix) :]).rstrip(os.sep) or "."
    return os.path.relpath(full, ancestors[0][0])


def _move_trace_paths(data: dict[str, Any], move: Any) -> None:
    """Rewrites the trace file names of a report's dict (run-level list and per task)."""
    if isinstance(data.get("trace_paths"), list):
        data["trace_paths"] = [move(p) for p in data["trace_paths"]]
    for task in data.get("tasks") or []:
        if isinstance(task, dict) and isinstance(task.get("trace"), str):
            task["trace"] = move(task["trace"])


def _views():
    from pypto.report import views as report_views

    return report_views


def _task(name: str, block: dict[str, Any], start: int) -> TaskReport:
    busy = dict(zip(PIPES, block["pipe_busy"]))
    trace = InstrTrace(block["records"]) if block["records"] is not None else None
    return TaskReport(
        name,
        int(block["block"]),
        start,
        start + int(block["cycles"]),
        busy,
        int(block["instructions"]),
        list(block["hazards"]),
        trace,
        memory=dict(block.get("memory") or {}),
    )


def _summed(platform: str, clock_hz: float, tasks: list[TaskReport], cycles: int) -> RunReport:
    if len(tasks) == 1:
        total = dict(tasks[0].pipe_busy)
    else:
        total = {p: sum(t.pipe_busy[p] for t in tasks) for p in PIPES}
    return RunReport(
        platform,
        cycles,
        total,
        sum(t.instructions for t in tasks),
        tasks,
        [h for t in tasks for h in t.hazards],
        clock_hz=clock_hz,
    )


def busy_union(intervals: list[tuple[int, int]]) -> np.ndarray:
    """Sorted, merged intervals (helper for overlap checks)."""
    merged: list[list[int]] = []
    for s, e in sorted(intervals):
        if merged and s <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], e)
        else:
            merged.append([s, e])
    return np.array(merged, dtype=np.int64).reshape(-1, 2)


def overlap_cycles(a: list[tuple[int, int]], b: list[tuple[int, int]]) -> int:
    """Cycles during which both interval sets are busy."""
    ua, ub = busy_union(a), busy_union(b)
    total, i, j = 0, 0, 0
    while i < len(ua) and j < len(ub):
        lo, hi = max(ua[i][0], ub[j][0]), min(ua[i][1], ub[j][1])
        total += max(0, hi - lo)
        if ua[i][1] < ub[j][1]:
            i += 1
        else:
            j += 1
    return int(total)


def scheduled_report(platform: str, clock_hz: float, results: dict[str, Any]) -> RunReport:
    """From the native chip scheduler: each kernel instance with its core, start and end; end to
    end is the last end (time 0 is the launch). Races (when reported, not raised) join the hazards."""
    tasks = []
    for r in results["tasks"]:
        t = _task(r["name"], r, int(r["start"]))
        t.end = int(r["end"])
        t.core = int(r["core"])
        t.block = int(r["block"])
        t.core_type = str(r.get("core_kind") or ("AIC" if r["cube"] else "AIV"))
        t.cluster = int(r["cluster"]) if r.get("cluster") is not None else None
        tasks.append(t)
    report = _summed(platform, clock_hz, tasks, max((t.end for t in tasks), default=0))
    report.hazards.extend(results["races"])
    report.memory = dict(results["memory"])
    return report
