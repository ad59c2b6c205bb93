"""Upstream PyPTO's run-time diagnostics (DFX) options, filled from the simulator.

Each option, when on, writes into ``<output_dir>/dfx_outputs/`` after every launch, as
upstream does under its work folder:

* ``enable_chip_swimlane`` (level 0-4, ``True`` = 4): the run is traced; pypto's trace
  (``trace/``), ``report/timeline.html`` and ``chip_swimlane_records.json`` (per task: kernel,
  core, start and end cycle, dependencies). Every level gives the same records: the simulator
  knows every timestamp, so no level hides any.
* ``enable_pmu`` (event type, > 0): ``pmu.csv``, per task the busy cycles of every pipe and the
  instruction count — what the PIPE_UTILIZATION event (2) counts on a device.
* ``enable_dump_args`` (1 or 2): ``args_dump/``, every argument of the launch as ``.npy`` —
  inputs as they were before the launch, outputs after it — listed in ``args_dump.json``.
* ``enable_dep_gen``: ``deps.json``, the launch's task graph (tasks and dependency edges).
* ``enable_scope_stats``: ``scope_stats/scope_stats.jsonl``, one line per launch: tasks, the
  most tasks running at once, and the bytes of the program's GM intermediates.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from pypto.hardware import PIPES
from pypto.runtime.marshal import as_array

SWIMLANE_FULL = 4


def _level(value: Any, name: str, top: int, true_means: int) -> int:
    if isinstance(value, bool):
        return true_means if value else 0
    if not isinstance(value, int):
        raise TypeError(f"{name} must be an int level (0-{top}) or a bool, got {type(value).__name__}")
    if not 0 <= value <= top:
        raise ValueError(f"{name} must be a level in [0, {top}], got {value}")
    return value


@dataclass(frozen=True)
class DfxOptions:
    """The five DFX switches (upstream's ``_DfxOpts``); values are checked and normalised."""

    enable_chip_swimlane: int | bool = 0
    enable_dump_args: int | bool = 0
    enable_pmu: int | bool = 0
    enable_dep_gen: bool = False
    enable_scope_stats: bool = False

    def __post_init__(self) -> None:
        fix = object.__setattr__
        fix(
            self,
            "enable_chip_swimlane",
            _level(self.enable_chip_swimlane, "enable_chip_swimlane", 4, SWIMLANE_FULL),
        )
        fix(self, "enable_dump_args", _level(self.enable_dump_args, "enable_dump_args", 2, 1))
        fix(self, "enable_pmu", _level(self.enable_pmu, "enable_pmu", 255, 2))
        for name in ("enable_dep_gen", "enable_scope_stats"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"{name} must be True or False, got {getattr(self, name)!r}")

    def any(self) -> bool:
        return bool(
            self.enable_chip_swimlane or self.enable_dump_args or self.enable_pmu
            or self.enable_dep_gen or self.enable_scope_stats
        )  # fmt: skip

    def before_launch(self, compiled: Any, args: tuple) -> dict[str, np.ndarray]:
        """What must be kept from before the launch: the inputs, when arguments are dumped."""
        if not self.enable_dump_args:
            return {}
        return {compiled.param_names[i]: _copy(args[i]) for i in compiled.tensor_params}

    def after_launch(self, compiled: Any, args: tuple, report: Any, before: dict[str, np.ndarray]) -> Path:
        """Writes the enabled outputs under ``<output_dir>/dfx_outputs``; returns that folder."""
        folder = Path(compiled.output_dir) / "dfx_outputs"
        folder.mkdir(parents=True, exist_ok=True)
        if self.enable_chip_swimlane:
            _write_json(folder / "chip_swimlane_records.json", swimlane_records(compiled, report, self))
            report.timeline_html(Path(compiled.output_dir) / "report" / "timeline.html", title=compiled.name)
        if self.enable_pmu:
            (folder / "pmu.csv").write_text(pmu_csv(report))
        if self.enable_dep_gen:
            _write_json(folder / "deps.json", task_graph(compiled))
        if self.enable_dump_args:
            dump_args(folder / "args_dump", compiled, args, before)
        if self.enable_scope_stats:
            line = json.dumps(scope_stats(compiled, report))
            (folder / "scope_stats").mkdir(exist_ok=True)
            with open(folder / "scope_stats" / "scope_stats.jsonl", "a") as f:
                f.write(line + "\n")
        return folder


def _write_json(path: Path, data: Any) -> None:
    path.write_text(json.dumps(data, indent=1))


def _copy(value: Any) -> np.ndarray:
    array, _ = as_array(value, name="dump", output=False)
    return np.array(array, copy=True)


def swimlane_records(compiled: Any, report: Any, opts: DfxOptions) -> dict[str, Any]:
    deps = [spec[4] for spec in compiled.launch_specs]
    tasks = [
        {
            "task_id": i,
            "func_name": t.name,
            "core": t.core_name,
            "core_kind": t.core_type,
            "block": t.block,
            "start_cycle": t.start,
            "end_cycle": t.end,
            "deps": list(t.deps) if t.deps else list(deps[i] if i < len(deps) else ()),
        }
        for i, t in enumerate(report.tasks)
    ]
    return {"level": opts.enable_chip_swimlane, "platform": report.platform, "clock_hz": report.clock_hz,
            "cycles": report.cycles, "tasks": tasks}  # fmt: skip


def pmu_csv(report: Any) -> str:
    head = ["task_id", "func_name", "core", "start_cycle", "end_cycle", "instructions"]
    rows = [",".join(head + [f"{p}_busy_cycles" for p in PIPES])]
    for i, t in enumerate(report.tasks):
        cells = [i, t.name, t.core_name, t.start, t.end, t.instructions] + [
            t.pipe_busy.get(p, 0) for p in PIPES
        ]
        rows.append(",".join(str(c) for c in cells))
    return "\n".join(rows) + "\n"


def task_graph(compiled: Any) -> dict[str, Any]:
    specs = compiled.launch_specs
    tasks = [{"task_id": i, "func_name": s[0], "core_kind": s[3], "block": s[6]} for i, s in enumerate(specs)]
    edges = [[int(d), i] for i, s in enumerate(specs) for d in s[4]]
    return {"program": compiled.name, "tasks": tasks, "edges": edges}


def dump_args(folder: Path, compiled: Any, args: tuple, before: dict[str, np.ndarray]) -> None:
    """Each tensor argument as ``.npy``: inputs as passed in, outputs as the launch left them."""
    folder.mkdir(parents=True, exist_ok=True)
    entries = []
    for i in compiled.tensor_params:
        name = compiled.param_names[i]
        stages = [("input", before[name])]
        if i in compiled.outputs:
            stages.append(("output", _copy(args[i])))
        for stage, array in stages:
            file = f"{name}.{stage}.npy"
            np.save(folder / file, array)
            entries.append({"name": name, "stage": stage, "shape": list(array.shape),
                            "dtype": str(array.dtype), "file": file})  # fmt: skip
    _write_json(folder / "args_dump.json", {"program": compiled.name, "args": entries})


def scope_stats(compiled: Any, report: Any) -> dict[str, Any]:
    events = sorted([(t.start, 1) for t in report.tasks] + [(t.end, -1) for t in report.tasks])
    running = peak = 0
    for _, step in events:  # an end sorts before a start at the same cycle
        running += step
        peak = max(peak, running)
    heap = sum(int(np.prod(e[1])) * _itemsize(e[2]) for e in compiled.intermediates if e[0] == "new")
    return {"scope": compiled.name, "tasks": len(report.tasks), "task_window_peak": peak, "heap_bytes": heap,
            "cycles": report.cycles}  # fmt: skip


def _itemsize(dtype: str) -> int:
    return 2 if dtype == "bfloat16" else np.dtype(dtype).itemsize
