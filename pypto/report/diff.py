"""Two run reports compared: the makespan, each pipe's busy cycles, each kernel's time and the
memory counters, from a baseline ``a`` to a candidate ``b``, with what changed most.

A kernel is every task of one name (as in ``RunReport.kernels``); its time is the span from its
first task's start to its last task's end, computed here from the tasks alone so that reports
read back on a build without their platform compare too. A kernel or pipe present in only one
report counts as 0 cycles in the other.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pypto.report.run_report import PIPES, RunReport

# The memory counters worth comparing, in print order (any other key is left out).
MEMORY_KEYS = ("hbm_bytes", "l2_bytes", "l2_hits", "l2_misses", "stalled_transfers")


@dataclass(frozen=True)
class Change:
    """One quantity in both runs: ``a`` (the baseline), ``b``, ``delta`` = b - a, ``pct``
    = delta / a (None when a is 0)."""

    name: str
    a: float
    b: float

    @property
    def delta(self) -> float:
        return self.b - self.a

    @property
    def pct(self) -> float | None:
        return self.delta / self.a if self.a else None

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "a": self.a, "b": self.b, "delta": self.delta, "pct": self.pct}

    def cells(self) -> str:
        pct = "-" if self.pct is None else f"{self.pct:+.1%}"
        return f"{_num(self.a):>12}{_num(self.b):>12}{_num(self.delta, '+'):>12}{pct:>9}"


@dataclass(frozen=True)
class ReportDiff:
    """``RunReport.diff``: per quantity a ``Change``; ``pipe`` / ``kernel`` name the pipe and the
    kernel whose cycles changed most (by absolute delta; None when nothing changed)."""

    makespan: Change
    pipes: list[Change]
    kernels: list[Change]
    memory: list[Change]

    @property
    def pipe(self) -> Change | None:
        return _most(self.pipes)

    @property
    def kernel(self) -> Change | None:
        return _most(self.kernels)

    def to_dict(self) -> dict[str, Any]:
        most = {"pipe": self.pipe, "kernel": self.kernel}
        return {
            "makespan": self.makespan.to_dict(),
            "pipes": [c.to_dict() for c in self.pipes],
            "kernels": [c.to_dict() for c in self.kernels],
            "memory": [c.to_dict() for c in self.memory],
            "most_changed": {k: None if c is None else c.name for k, c in most.items()},
        }

    def __str__(self) -> str:
        return format_diff(self)


def _num(x: float, sign: str = "") -> str:
    return format(int(x), f"{sign},") if float(x).is_integer() else format(x, f"{sign},.1f")


def _most(changes: list[Change]) -> Change | None:
    moved = [c for c in changes if c.delta]
    return max(moved, key=lambda c: abs(c.delta)) if moved else None


def kernel_spans(report: RunReport) -> dict[str, int]:
    """Per kernel name, in start order: the span of its tasks."""
    spans: dict[str, tuple[int, int]] = {}
    for t in sorted(report.tasks, key=lambda t: t.start):
        lo, hi = spans.get(t.name, (t.start, t.end))
        spans[t.name] = (min(lo, t.start), max(hi, t.end))
    return {name: hi - lo for name, (lo, hi) in spans.items()}


def diff(a: RunReport, b: RunReport) -> ReportDiff:
    ka, kb = kernel_spans(a), kernel_spans(b)
    names = [*ka, *(n for n in kb if n not in ka)]
    memory = [k for k in MEMORY_KEYS if k in a.memory or k in b.memory]
    return ReportDiff(
        Change("makespan", a.cycles, b.cycles),
        [Change(p, a.pipe_busy.get(p, 0), b.pipe_busy.get(p, 0)) for p in PIPES],
        [Change(n, ka.get(n, 0), kb.get(n, 0)) for n in names],
        [Change(k, float(a.memory.get(k, 0)), float(b.memory.get(k, 0))) for k in memory],
    )


def _section(title: str, changes: list[Change]) -> list[str]:
    head = f"  {title:<24}{'A':>12}{'B':>12}{'B - A':>12}{'change':>9}"
    return [head, *(f"    {c.name:<22}{c.cells()}" for c in changes)]


def _headline(what: str, c: Change | None) -> str:
    if c is None:
        return f"  most changed {what}: none (the same cycles in both runs)"
    pct = "" if c.pct is None else f", {c.pct:+.1%}"
    return f"  most changed {what}: {c.name} ({_num(c.delta, '+')} cycles{pct})"


def format_diff(d: ReportDiff) -> str:
    m = d.makespan
    pct = "-" if m.pct is None else format(m.pct, "+.1%")
    lines = [f"makespan: {_num(m.a)} -> {_num(m.b)} cycles ({_num(m.delta, '+')}, {pct})"]
    lines += [_headline("pipe", d.pipe), _headline("kernel", d.kernel)]
    lines += _section("pipe busy cycles", d.pipes)
    lines += _section("kernel cycles", d.kernels)
    if d.memory:
        lines += _section("memory", d.memory)
    return "\n".join(lines)
