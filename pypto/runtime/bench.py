"""``benchmark``: register a compiled program once and time many launches, as upstream PyPTO.

Two clocks, never mixed:

* **simulated device time** (``device_wall_us``, ``cycles``): what the launch takes on the
  simulated chip, its end-to-end cycles at the platform's clock. It is the same for every
  launch of the same work; it answers "how fast is the kernel on the chip".
* **host wall time** (``host_wall_us``): how long this machine took to run the launch,
  simulation included. It answers "how long does the simulator take", nothing about the chip.

Upstream measures the first on a device and reads 0 on its simulators; here it is always the
simulator's figure, so ``all_zero_device`` is false whenever a launch did any work.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pypto.runtime.config import RunConfig
from pypto.runtime.runner import _plain
from pypto.runtime.worker import ChipWorker

__all__ = ["BenchmarkStats", "benchmark"]


def _stats(values: list[float]) -> tuple[float, float, float, float, float]:
    if not values:
        return 0.0, 0.0, 0.0, 0.0, 0.0
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    return min(values), statistics.median(values), statistics.fmean(values), max(values), sd


@dataclass
class BenchmarkStats:
    """Per measured launch: simulated device time (µs and cycles) and host wall time (µs)."""

    device_wall_us: list[float] = field(default_factory=list)  # simulated, from cycles
    host_wall_us: list[float] = field(default_factory=list)  # this machine's wall clock
    cycles: list[int] = field(default_factory=list)  # simulated, end to end per launch
    rounds: int = 0
    warmup: int = 0
    platform: str = ""
    invocations: list[Any] = field(default_factory=list)  # upstream's [STRACE] spans: none here

    @property
    def samples(self) -> list[float]:
        return self.device_wall_us

    device_us_min = property(lambda self: _stats(self.device_wall_us)[0])
    device_us_median = property(lambda self: _stats(self.device_wall_us)[1])
    device_us_mean = property(lambda self: _stats(self.device_wall_us)[2])
    device_us_max = property(lambda self: _stats(self.device_wall_us)[3])
    device_us_stdev = property(lambda self: _stats(self.device_wall_us)[4])
    device_wall_us_min = device_us_min
    device_wall_us_median = device_us_median
    device_wall_us_mean = device_us_mean
    device_wall_us_max = device_us_max
    device_wall_us_stdev = device_us_stdev
    host_us_min = property(lambda self: _stats(self.host_wall_us)[0])
    host_us_median = property(lambda self: _stats(self.host_wall_us)[1])
    host_us_mean = property(lambda self: _stats(self.host_wall_us)[2])

    @property
    def all_zero_device(self) -> bool:
        return bool(self.device_wall_us) and not any(self.device_wall_us)

    def per_round(self, metric: str = "device") -> list[float]:
        """One value per measured launch: ``"device"`` (simulated µs) or ``"host"`` (wall µs)."""
        if metric not in ("device", "host"):
            raise ValueError(f"metric must be 'device' (simulated) or 'host' (wall clock), got {metric!r}")
        return list(self.device_wall_us if metric == "device" else self.host_wall_us)

    def format_tree(self, launch: int | None = None, *, us: bool = True) -> str:
        """One line per measured launch (or just ``launch``): both clocks, labelled."""
        picks = range(len(self.cycles)) if launch is None else [launch]
        scale, unit = (1.0, "us") if us else (1000.0, "ns")
        return "\n".join(
            f"launch {k}: simulated device {self.device_wall_us[k] * scale:.1f}{unit} "
            f"({self.cycles[k]} cycles on {self.platform}); "
            f"host wall {self.host_wall_us[k] * scale:.1f}{unit}"
            for k in picks
        )

    def print_tree(self, launch: int | None = None, *, us: bool = True, file: Any = None) -> None:
        print(self.format_tree(launch, us=us), file=file)

    def format_mean_tree(self, *, us: bool = True, spread: str = "stdev") -> str:
        if spread not in ("stdev", "minmax", "both", "none"):
            raise ValueError(f"spread must be 'stdev', 'minmax', 'both' or 'none', got {spread!r}")
        lines = [f"mean of {len(self.cycles)} launches (warmup {self.warmup} excluded):"]
        for label, values in (("simulated device", self.device_wall_us), ("host wall", self.host_wall_us)):
            lo, _, mean, hi, sd = _stats(values)
            extra = {"stdev": f"  ±{sd:.1f}", "minmax": f"  [{lo:.1f}..{hi:.1f}]",
                     "both": f"  ±{sd:.1f}  [{lo:.1f}..{hi:.1f}]", "none": ""}[spread]  # fmt: skip
            lines.append(f"{label:<17} {mean:.1f}us{extra}")
        return "\n".join(lines)

    def print_mean_tree(self, *, us: bool = True, spread: str = "stdev", file: Any = None) -> None:
        print(self.format_mean_tree(us=us, spread=spread), file=file)

    def __str__(self) -> str:
        if not self.cycles:
            return f"BenchmarkStats(rounds={self.rounds}: no samples)"
        d, h = _stats(self.device_wall_us), _stats(self.host_wall_us)
        return (
            f"BenchmarkStats(rounds={self.rounds}, warmup={self.warmup}, {self.platform}): "
            f"simulated device us min={d[0]:.2f} median={d[1]:.2f} max={d[3]:.2f} "
            f"({statistics.median(self.cycles):.0f} cycles); "
            f"host wall us (simulation included) min={h[0]:.1f} median={h[1]:.1f} max={h[3]:.1f}"
        )


def benchmark(
    compiled: Any,
    args: Sequence[Any],
    *,
    rounds: int = 100,
    warmup: int = 3,
    platform: str | None = None,
    device_id: int | None = None,
    config: RunConfig | None = None,
    persistent: bool = False,
    reset_persistent_windows: bool | None = None,
) -> BenchmarkStats:
    """Opens a ``ChipWorker``, registers ``compiled`` once and runs ``warmup + rounds``
    launches on ``args`` (outputs written in place); the stats cover the last ``rounds``."""
    _check_counts(rounds, warmup)
    if persistent or reset_persistent_windows is not None:
        raise ValueError("benchmark(): persistent/reset_persistent_windows apply to multi-card programs only")
    if config is not None and (platform is not None or device_id is not None):
        raise ValueError("benchmark(): pass either config=... or platform=/device_id=, not both")
    rc = config or RunConfig(platform=platform or compiled.platform)
    values = [_plain(a) for a in args]
    stats = BenchmarkStats(rounds=rounds, warmup=warmup, platform=rc.platform)
    with ChipWorker(rc) as worker:
        handle = worker.register(compiled)
        for k in range(warmup + rounds):
            start = time.perf_counter()
            handle(*values)
            wall_us = (time.perf_counter() - start) * 1e6
            if k >= warmup:
                report = compiled.last_report
                stats.cycles.append(report.cycles)
                stats.device_wall_us.append(report.time_us)
                stats.host_wall_us.append(wall_us)
    return stats


def _check_counts(rounds: Any, warmup: Any) -> None:
    for name, value, low in (("rounds", rounds, 1), ("warmup", warmup, 0)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"benchmark(): {name} must be an int, got {value!r}")
        if value < low:
            raise ValueError(f"benchmark(): {name} must be >= {low}, got {value}")
