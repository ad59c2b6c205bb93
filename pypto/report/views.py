"""Views of a RunReport: utilisation per core and per core kind, the bounding pipe, the task
table, the printed summary and the JSON form.

Utilisation is busy cycles over the run's end-to-end cycles, per core: the tasks of one core
run one after another and the instructions of one pipe never overlap, so it lies in
[0, 1]. Summing busy cycles over many cores and dividing by one run's cycles (the old
"share") exceeds 1 on multi-core runs, so nothing here does that.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from typing import Any

from pypto import (
    _native,
    platforms,  # the native tables: only when a view asks
)
from pypto.errors import PyptoError
from pypto.report.hotspots import HotLine, format_hot_lines
from pypto.report.kernels import format_kernels, kernels, rooflines
from pypto.report.run_report import PIPES, RunReport, TaskReport
from pypto.report.trace import kernel_launches

SCHEMA = 1


class ReportError(PyptoError, ValueError):
    """A run report that cannot be read back (another schema, a missing field)."""


KINDS = ("AIC", "AIV")
LATENCY_BOUND_BELOW = 0.5  # no pipe busier than this on any core: the cores mostly wait
TASK_ROWS_SHOWN = 8
HOT_ROWS_SHOWN = 8  # source lines in the printed hot-spot table (the JSON has them all)
LATENCY_NOTE = (
    "no pipe is busy half the run: the pipes wait on each other (overlap them with pl.pipeline) "
    "or on task dependencies"
)


@dataclass(frozen=True)
class CoreUse:
    """One core that ran at least one task."""

    name: str  # "AIC3"
    kind: str  # "AIC" / "AIV"
    tasks: int
    busy: dict[str, int]
    utilisation: dict[str, float]  # busy / working cycles (working_cycles), per pipe, in [0, 1]


@dataclass(frozen=True)
class KindUse:
    """The cores of one kind that ran tasks: how many, and their mean utilisation per pipe."""

    kind: str
    cores_used: int
    cores_available: int | None  # the platform's count, when the platform is known
    utilisation: dict[str, float]


@dataclass(frozen=True)
class Bound:
    """The pipe with the highest utilisation on any core (of one kind, for ``bounds``);
    ``latency_bound`` when even that pipe is idle most of the run (the cores wait on
    dependencies, flags or dispatch). ``ratio``: the run's cycles from its first task's start
    over that pipe's busy cycles on that core (1.0: the run is exactly as long as the bounding
    pipe's work)."""

    pipe: str
    core: str
    utilisation: float
    kind: str = ""
    busy: int = 0

    @property
    def latency_bound(self) -> bool:
        return self.utilisation < LATENCY_BOUND_BELOW

    @property
    def ratio(self) -> float | None:
        return 1.0 / self.utilisation if self.utilisation > 0 else None

    def __str__(self) -> str:
        busiest = f"{self.pipe} ({self.utilisation:.1%} busy on {self.core})"
        return f"{busiest}; {LATENCY_NOTE}" if self.latency_bound else busiest


def _core_key(t: TaskReport) -> tuple[int, int]:
    return (KINDS.index(t.core_type) if t.core_type in KINDS else len(KINDS), t.core)


def working_cycles(report: RunReport) -> int:
    """The run's cycles from its first task's start: before it the launch is dispatching to
    cold cores (the head of a core's first task), which no kernel can use."""
    first = min((t.start for t in report.tasks), default=0)
    return report.cycles - min(first, report.cycles)


def per_core(report: RunReport) -> list[CoreUse]:
    groups: dict[tuple[int, int], list[TaskReport]] = {}
    for t in report.tasks:
        groups.setdefault(_core_key(t), []).append(t)
    cores = []
    span = working_cycles(report)
    for key in sorted(groups):
        tasks = groups[key]
        busy = {p: sum(t.pipe_busy.get(p, 0) for t in tasks) for p in PIPES}
        util = {p: busy[p] / span if span else 0.0 for p in PIPES}
        cores.append(CoreUse(tasks[0].core_name, tasks[0].core_type, len(tasks), busy, util))
    return cores


def _available(report: RunReport, kind: str) -> int | None:
    try:
        plat = platforms.get(report.platform)
    except ValueError:
        return None
    return int(getattr(plat, f"{kind.lower()}_cores", 0)) or None


def _kinds(cores: list[CoreUse]) -> list[str]:
    return sorted({c.kind for c in cores}, key=lambda k: (k not in KINDS, k))


def per_kind(report: RunReport, cores: list[CoreUse] | None = None) -> dict[str, KindUse]:
    """``cores``: the report's ``per_core``, when the caller has it already."""
    cores = per_core(report) if cores is None else cores
    kinds: dict[str, KindUse] = {}
    for kind in _kinds(cores):
        mine = [c for c in cores if c.kind == kind]
        util = {p: sum(c.utilisation[p] for c in mine) / len(mine) for p in PIPES}
        kinds[kind] = KindUse(kind, len(mine), _available(report, kind), util)
    return kinds


def _busiest(cores: list[CoreUse]) -> Bound | None:
    best: Bound | None = None
    for core in cores:
        for pipe in PIPES:
            u = core.utilisation[pipe]
            if best is None or u > best.utilisation:
                best = Bound(pipe, core.name, u, core.kind, core.busy[pipe])
    return best


def bound(report: RunReport) -> Bound | None:
    """None for a run without tasks."""
    return _busiest(per_core(report))


def bounds(report: RunReport, cores: list[CoreUse] | None = None) -> dict[str, Bound]:
    """Per core kind that ran tasks (``AIC``, ``AIV``): the pipe that bounds it. ``cores``: the
    report's ``per_core``, when the caller has it already."""
    cores = per_core(report) if cores is None else cores
    out: dict[str, Bound] = {}
    for kind in _kinds(cores):
        b = _busiest([c for c in cores if c.kind == kind])
        if b is not None:
            out[kind] = b
    return out


def _bound_line(kind: str, b: Bound) -> str:
    ratio = f"run = {b.ratio:.2f} x its busy time" if b.ratio is not None else "idle"
    return f"  bound ({kind}): {b.pipe} ({b.utilisation:.1%} busy on {b.core}; {ratio})"


_BOUND_KEYS = ("pipe", "core", "utilisation", "latency_bound", "busy", "ratio")


def _bound_dict(b: Bound) -> dict[str, Any]:
    return {k: getattr(b, k) for k in _BOUND_KEYS}


def task_table(report: RunReport) -> list[dict[str, Any]]:
    order = sorted(report.tasks, key=lambda t: (-t.cycles, t.start, _core_key(t)))
    return [
        {"kernel": t.name, "core": t.core_name, "start": t.start, "end": t.end, "cycles": t.cycles}
        for t in order
    ]


def simulator_of(name: str) -> str:
    """The simulator a platform name runs on: itself for ``a2a3sim``, ``a2a3sim`` for ``a2a3``."""
    try:
        return str(_native.platform_table(name)["name"])
    except Exception:  # a report read back on a build without that platform
        return name


def platform_line(report: RunReport) -> str:
    sim = simulator_of(report.platform)
    if sim != report.platform:
        return f"{report.platform} (a device name: runs on its simulator, {sim})"
    return f"{report.platform} (simulator)"


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:.1%}"


def format_report(report: RunReport) -> str:
    cores = per_core(report)  # each view below from this one pass over the tasks
    kinds = per_kind(report, cores)
    lines = [
        f"pypto run on {platform_line(report)}: {report.cycles} cycles ({report.time_us:.2f} us), "
        f"{report.instructions} instructions, {len(report.tasks)} task(s) on {len(cores)} core(s)"
    ]
    heads = [f"{k} {u.cores_used}/{u.cores_available or '?'}" for k, u in kinds.items()]
    lines.append(f"  {'pipe':<8}{'busy cycles':>12}" + "".join(f"{h:>10}" for h in heads) + "  busiest core")
    for pipe in PIPES:
        top = max(cores, key=lambda c: c.utilisation[pipe], default=None)
        cells = "".join(f"{_pct(u.utilisation[pipe]):>10}" for u in kinds.values())
        where = f"{_pct(top.utilisation[pipe])} {top.name}" if top and top.busy[pipe] else "-"
        lines.append(f"  {pipe:<8}{report.pipe_busy.get(pipe, 0):>12}{cells}  {where}")
    lines.append("  utilisation = busy / run cycles from the first task's start, per core; a kind's column")
    lines.append("  (cores used / the platform's) is the mean over its cores that ran tasks")
    b = _busiest(cores)
    if b is not None:
        lines.append(f"  bound: {b.pipe} ({b.utilisation:.1%} busy on {b.core})")
        for kind, kb in bounds(report, cores).items():
            lines.append(_bound_line(kind, kb))
        if b.latency_bound:
            lines.append(f"    {LATENCY_NOTE}")
    if len(report.tasks) > 1:
        rows = task_table(report)
        lines.append(f"  tasks, longest first ({min(len(rows), TASK_ROWS_SHOWN)} of {len(rows)}):")
        lines.append(f"    {'core':<7}{'start':>9}{'end':>9}{'cycles':>9}  kernel")
        for r in rows[:TASK_ROWS_SHOWN]:
            lines.append(f"    {r['core']:<7}{r['start']:>9}{r['end']:>9}{r['cycles']:>9}  {r['kernel']}")
    if "host_to_device_bytes" in report.memory:
        lines.append(_traffic_line(report.memory))
    if "l2_hits" in report.memory:
        lines.append(_l2_line(report.memory))
    if len({t.name for t in report.tasks}) > 1 and _known(report):
        lines.append(format_kernels(report))
    hot = report.hot_lines()
    if hot:
        lines.append(textwrap.indent(format_hot_lines(hot, HOT_ROWS_SHOWN), "  "))
    if report.hazards:
        lines.append(f"  hazards: {len(report.hazards)}")
        lines.extend(f"    {h}" for h in report.hazards[:8])
    return "\n".join(lines)


def _traffic_line(m: dict[str, Any]) -> str:
    """Host <-> device bytes of the launch (resident DeviceTensors move none), then the
    shared memory system's: bytes served by HBM and by the L2."""
    return (
        f"  memory traffic: host->device {int(m['host_to_device_bytes'])} B, device->host "
        f"{int(m.get('device_to_host_bytes', 0))} B; HBM {int(m.get('hbm_bytes', 0))} B, "
        f"L2 {int(m.get('l2_bytes', 0))} B"
    )


def _l2_line(m: dict[str, Any]) -> str:
    """The shared L2's line hits and misses over every GM transfer of the run, and the transfers
    slowed because cores shared a bandwidth."""
    hits, misses = int(m["l2_hits"]), int(m.get("l2_misses", 0))
    rate = _pct(hits / (hits + misses)) if hits + misses else "-"
    return (
        f"  L2: {hits} line hits, {misses} misses (hit rate {rate}); "
        f"{int(m.get('stalled_transfers', 0))} transfer(s) slowed by a shared bandwidth"
    )


def _task_dict(t: TaskReport, trace: str | None) -> dict[str, Any]:
    return {
        "kernel": t.name,
        "core": t.core_name,
        "core_kind": t.core_type,
        "core_index": t.core,
        "cluster": t.cluster,
        "start": t.start,
        "end": t.end,
        "cycles": t.cycles,
        "instructions": t.instructions,
        "pipe_busy": dict(t.pipe_busy),
        "hazards": list(t.hazards),
        "trace": trace,
        "deps": list(t.deps),
        "block": t.block,
        "memory": dict(t.memory),
    }


def _task_traces(report: RunReport) -> list[str | None]:
    """Per task, the trace file written for its kernel (``write_traces`` order), if any."""
    paths: list[str | None] = [t.trace_file for t in report.tasks]
    index = {id(t): i for i, t in enumerate(report.tasks)}
    for groups, path in zip(kernel_launches(report.tasks).values(), report.trace_paths):
        for t in (t for group in groups for t in group):
            paths[index[id(t)]] = path
    return paths


def to_dict(report: RunReport) -> dict[str, Any]:
    cores = per_core(report)  # each view below from this one pass over the tasks
    b = _busiest(cores)
    traces = _task_traces(report)
    return {
        "schema": SCHEMA,
        "platform": report.platform,
        "simulator": simulator_of(report.platform),
        "clock_hz": report.clock_hz,
        "cycles": report.cycles,
        "time_us": report.time_us,
        "instructions": report.instructions,
        "pipe_busy": {p: report.pipe_busy.get(p, 0) for p in PIPES},
        "cores": [
            {
                "core": c.name,
                "core_kind": c.kind,
                "tasks": c.tasks,
                "busy": c.busy,
                "utilisation": c.utilisation,
            }
            for c in cores
        ],
        "core_kinds": {
            k: {
                "cores_used": u.cores_used,
                "cores_available": u.cores_available,
                "utilisation": u.utilisation,
            }
            for k, u in per_kind(report, cores).items()
        },
        "bound": None
        if b is None
        else {"pipe": b.pipe, "core": b.core, "utilisation": b.utilisation, "latency_bound": b.latency_bound},
        "bounds": {k: _bound_dict(kb) for k, kb in bounds(report, cores).items()},
        "tasks": [_task_dict(t, p) for t, p in zip(report.tasks, traces)],
        "hazards": list(report.hazards),
        "trace_paths": list(report.trace_paths),
        "memory": dict(report.memory),
        "hot_lines": [r.to_dict() for r in report.hot_lines()],
        **_kernel_views(report),
    }


def _known(report: RunReport) -> bool:
    """Whether this build has the report's platform table (a report read back may not)."""
    return _available(report, "AIC") is not None


def _kernel_views(report: RunReport) -> dict[str, Any]:
    """The per-kernel rows and the rooflines (derived: ``from_dict`` recomputes them)."""
    if not report.tasks or not _known(report):
        return {}

    return {"kernels": [k.to_dict() for k in kernels(report)], "rooflines": rooflines(report).to_dict()}


def from_dict(data: dict[str, Any]) -> RunReport:
    """The report ``to_dict`` described (without instruction records)."""
    try:
        return _from_dict(data)
    except (KeyError, TypeError, ValueError) as e:
        if isinstance(e, ReportError):
            raise
        raise ReportError(f"not a complete pypto run report: {type(e).__name__} {e}") from None


def _from_dict(data: dict[str, Any]) -> RunReport:
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        got = data.get("schema") if isinstance(data, dict) else type(data).__name__
        raise ReportError(f"not a pypto run report of schema {SCHEMA}: schema {got!r}")
    tasks = [
        TaskReport(
            t["kernel"],
            int(t["core_index"]),
            int(t["start"]),
            int(t["end"]),
            dict(t["pipe_busy"]),
            int(t["instructions"]),
            list(t["hazards"]),
            None,
            t["core_kind"],
            t.get("cluster"),
            t.get("trace"),
            tuple(t.get("deps", ())),
            int(t.get("block", 0)),
            {str(k): v for k, v in dict(t.get("memory", {})).items()},
        )
        for t in data["tasks"]
    ]
    return RunReport(
        data["platform"],
        int(data["cycles"]),
        dict(data["pipe_busy"]),
        int(data["instructions"]),
        tasks,
        list(data["hazards"]),
        list(data["trace_paths"]),
        float(data["clock_hz"]),
        {str(k): v for k, v in dict(data.get("memory", {})).items()},
        [HotLine(**row) for row in data.get("hot_lines", [])],
    )
