"""What a run tells the user: simulated cycles, per-pipe busy time, per-task detail."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

PIPES: tuple[str, ...] = ("MTE2", "MTE1", "CUBE", "VECTOR", "FIXPIPE", "MTE3", "SCALAR")


@dataclass
class InstrTrace:
    """Per-instruction records of one task, as columns (numpy int64 arrays + name lists)."""

    columns: dict[str, Any]

    def __len__(self) -> int:
        return len(self.columns["index"])

    def intervals(self, pipe: str, include_sync: bool = False) -> list[tuple[int, int]]:
        """(start, end) of the instructions on `pipe`, in program order; set/wait/barrier
        slices only with ``include_sync``."""
        sel = self.columns["pipe"] == PIPES.index(pipe)
        if not include_sync:
            sel &= self.columns["kind"] == 0
        return list(zip(self.columns["start"][sel].tolist(), self.columns["end"][sel].tolist()))

    def rows(self) -> list[dict[str, Any]]:
        cols = self.columns
        keys = [k for k in cols if k not in ("name", "loc")]
        return [
            {
                "name": cols["name"][i],
                "loc": cols["loc"][i],
                "pipe_name": PIPES[cols["pipe"][i]],
                **{k: int(cols[k][i]) for k in keys},
            }
            for i in range(len(self))
        ]


@dataclass
class TaskReport:
    """One kernel execution on one simulated core."""

    name: str
    core: int
    start: int
    end: int
    pipe_busy: dict[str, int]
    instructions: int
    hazards: list[str] = field(default_factory=list)
    trace: InstrTrace | None = None

    @property
    def cycles(self) -> int:
        return self.end - self.start


@dataclass
class RunReport:
    """The profile of one run. ``cycles`` is end to end; ``pipe_busy`` sums all tasks."""

    platform: str
    cycles: int
    pipe_busy: dict[str, int]
    instructions: int
    tasks: list[TaskReport]
    hazards: list[str] = field(default_factory=list)
    trace_paths: list[str] = field(default_factory=list)
    clock_hz: float = 0.0

    def intervals(self, pipe: str, task: int = 0) -> list[tuple[int, int]]:
        """Recorded busy intervals of `pipe` in task `task` (needs a recorded run)."""
        trace = self.tasks[task].trace
        if trace is None:
            raise ValueError("this run kept no instruction records; run with record=True or trace=True")
        return trace.intervals(pipe)

    def __str__(self) -> str:
        us = self.cycles / self.clock_hz * 1e6 if self.clock_hz else 0.0
        lines = [
            f"pypto run on {self.platform}: {self.cycles} cycles ({us:.2f} us), "
            f"{self.instructions} instructions, {len(self.tasks)} task(s)",
            f"  {'pipe':<8}{'busy cycles':>12}{'share':>8}",
        ]
        for pipe in PIPES:
            busy = self.pipe_busy.get(pipe, 0)
            share = busy / self.cycles if self.cycles else 0.0
            lines.append(f"  {pipe:<8}{busy:>12}{share:>8.1%}")
        if self.hazards:
            lines.append(f"  hazards: {len(self.hazards)}")
            lines.extend(f"    {h}" for h in self.hazards[:8])
        return "\n".join(lines)


def merge_blocks(name: str, platform: str, clock_hz: float, blocks: list[dict[str, Any]]) -> RunReport:
    """Builds a RunReport from the native per-block results (blocks run in parallel)."""
    tasks = []
    for b in blocks:
        busy = dict(zip(PIPES, (int(x) for x in b["pipe_busy"])))
        trace = InstrTrace(b["records"]) if b["records"] is not None else None
        tasks.append(
            TaskReport(
                name,
                int(b["block"]),
                0,
                int(b["cycles"]),
                busy,
                int(b["instructions"]),
                list(b["hazards"]),
                trace,
            )
        )
    total = {p: sum(t.pipe_busy[p] for t in tasks) for p in PIPES}
    return RunReport(
        platform,
        max((t.end for t in tasks), default=0),
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


def sequential_report(
    platform: str, clock_hz: float, dispatch_cycles: float, runs: list[tuple[str, list[dict[str, Any]]]]
) -> RunReport:
    """Tasks one after another on one core: each starts when the previous ends plus the
    dispatch overhead (the first starts at 0: time counts from the first task's launch)."""
    tasks: list[TaskReport] = []
    now = 0
    for i, (name, blocks) in enumerate(runs):
        start = now + (int(dispatch_cycles) if i else 0)
        part = merge_blocks(name, platform, clock_hz, blocks)
        for t in part.tasks:
            t.start, t.end = start, start + t.end
            tasks.append(t)
        now = max((t.end for t in part.tasks), default=start)
    total = {p: sum(t.pipe_busy[p] for t in tasks) for p in PIPES}
    return RunReport(
        platform,
        now,
        total,
        sum(t.instructions for t in tasks),
        tasks,
        [h for t in tasks for h in t.hazards],
        clock_hz=clock_hz,
    )
