"""Per-kernel views of a RunReport and the run against its rooflines.

A *kernel* is every task of one name (a ``pl.at`` scope's tasks, a cluster kernel's AIC and AIV
halves). Its time is the span from its first task's start to its last task's end. Its bound is
the resource that needs the most cycles for the kernel's own work: HBM (its tasks' bytes served
by HBM over the chip's achievable shared bandwidth, ``hbm_bytes_per_cycle × hbm_efficiency``)
or a pipe (the kernel's busy cycles of that pipe on its busiest core). ``ratio`` is the
kernel's time over that bound: 1.0 means the kernel runs as fast as that resource allows; more
means its tasks wait (on dispatch, on dependencies inside the kernel, on other kernels sharing
HBM, on a tail of unequal tasks).

The run's rooflines are the same bounds over the whole run: HBM (every byte HBM served, at the
achievable shared bandwidth), CUBE and VECTOR (every busy cycle of that pipe spread evenly over
all the platform's cores of that kind).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from pypto import platforms  # the native tables: only when a view asks
from pypto.report.run_report import PIPES, RunReport, TaskReport


@dataclass(frozen=True)
class KernelUse:
    """All tasks of one kernel name."""

    kernel: str
    tasks: int
    cores: int  # distinct cores its tasks ran on
    start: int
    end: int
    hbm_bytes: float  # bytes HBM served to its tasks' transfers
    l2_bytes: float  # bytes the L2 served
    bound: str  # "HBM" or a pipe
    bound_cycles: float  # the cycles that resource needs for this kernel's work

    @property
    def cycles(self) -> int:
        return self.end - self.start

    @property
    def l2_hit_rate(self) -> float | None:
        """The share of its GM bytes the L2 served (None: it moved none)."""
        total = self.hbm_bytes + self.l2_bytes
        return self.l2_bytes / total if total else None

    @property
    def ratio(self) -> float | None:
        return self.cycles / self.bound_cycles if self.bound_cycles else None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self) | {"cycles": self.cycles, "l2_hit_rate": self.l2_hit_rate, "ratio": self.ratio}


@dataclass(frozen=True)
class Rooflines:
    """The run's makespan against the least time its HBM traffic and cube / vector work need."""

    cycles: int
    hbm_bytes: float
    hbm_cycles: float  # hbm_bytes / the achievable HBM bandwidth (_hbm_rate)
    cube_cycles: float  # CUBE busy over all tasks / the platform's AIC cores
    vector_cycles: float  # VECTOR busy over all tasks / the platform's AIV cores

    def ratio(self, roof: str) -> float | None:
        """Makespan over the ``"hbm"``, ``"cube"`` or ``"vector"`` roofline."""
        limit = getattr(self, f"{roof}_cycles")
        return self.cycles / limit if limit else None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self) | {f"{r}_ratio": self.ratio(r) for r in ("hbm", "cube", "vector")}


def _platform(report: RunReport) -> Any:
    return platforms.get(report.platform)


def _hbm_rate(plat: Any) -> float:
    """Bytes per cycle HBM gives all cores together: the nominal figure times the share
    streaming kernels achieve (the cap the memory system enforces)."""
    return float(plat.hbm_bytes_per_cycle) * float(plat.hbm_efficiency)


def _kernel(name: str, tasks: list[TaskReport], hbm_per_cycle: float) -> KernelUse:
    hbm = sum(float(t.memory.get("hbm_bytes", 0.0)) for t in tasks)
    l2 = sum(float(t.memory.get("l2_bytes", 0.0)) for t in tasks)
    per_core: dict[str, dict[str, int]] = {}
    for t in tasks:
        busy = per_core.setdefault(t.core_name, dict.fromkeys(PIPES, 0))
        for p in PIPES:
            busy[p] += t.pipe_busy.get(p, 0)
    limits = {p: float(max(c[p] for c in per_core.values())) for p in PIPES}
    limits["HBM"] = hbm / hbm_per_cycle
    bound = max(limits, key=lambda k: limits[k])
    return KernelUse(
        name,
        len(tasks),
        len(per_core),
        min(t.start for t in tasks),
        max(t.end for t in tasks),
        hbm,
        l2,
        bound,
        limits[bound],
    )


def kernels(report: RunReport) -> list[KernelUse]:
    """One row per kernel name, in the order the kernels started."""
    groups: dict[str, list[TaskReport]] = {}
    for t in report.tasks:
        groups.setdefault(t.name, []).append(t)
    hbm_per_cycle = _hbm_rate(_platform(report))
    rows = [_kernel(name, tasks, hbm_per_cycle) for name, tasks in groups.items()]
    return sorted(rows, key=lambda k: (k.start, k.kernel))


def rooflines(report: RunReport) -> Rooflines:
    plat = _platform(report)
    hbm = float(report.memory.get("hbm_bytes", sum(t.memory.get("hbm_bytes", 0.0) for t in report.tasks)))
    cube = sum(t.pipe_busy.get("CUBE", 0) for t in report.tasks) / int(plat.aic_cores)
    vector = sum(t.pipe_busy.get("VECTOR", 0) for t in report.tasks) / int(plat.aiv_cores)
    return Rooflines(report.cycles, hbm, hbm / _hbm_rate(plat), cube, vector)


def _opt(x: float | None, fmt: str) -> str:
    return "-" if x is None else format(x, fmt)


def format_kernels(report: RunReport) -> str:
    """The kernel table and the roofline lines, as printed under a multi-kernel run's report."""
    lines = [
        f"  kernels, in start order:\n    {'kernel':<22}{'tasks':>6}{'cores':>6}{'start':>9}{'cycles':>9}"
        f"{'HBM MB':>9}{'L2 hit':>8}  bound"
    ]
    for k in kernels(report):
        lines.append(
            f"    {k.kernel:<22}{k.tasks:>6}{k.cores:>6}{k.start:>9}{k.cycles:>9}{k.hbm_bytes / 1e6:>9.2f}"
            f"{_opt(k.l2_hit_rate, '.0%'):>8}  {k.bound} x{_opt(k.ratio, '.2f')}"
        )
    r = rooflines(report)
    lines.append(
        f"  rooflines: HBM {r.hbm_bytes / 1e6:.1f} MB -> {r.hbm_cycles:.0f} cycles (makespan "
        f"x{_opt(r.ratio('hbm'), '.2f')}); CUBE {r.cube_cycles:.0f} cycles "
        f"(x{_opt(r.ratio('cube'), '.1f')}); "
        f"VECTOR {r.vector_cycles:.0f} cycles (x{_opt(r.ratio('vector'), '.1f')})"
    )
    return "\n".join(lines)
