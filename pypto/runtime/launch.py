"""Running a built kernel on simulated cores (the hand-written-kernel entry point).

Generated kernels reach the same native runtime through ``CompiledProgram.run``; nothing here
is per-instruction: the native runtime does the work with the GIL released.
"""

from __future__ import annotations

import json
import logging
import math
import re
from pathlib import Path
from typing import Any

from pypto import _native, knobs
from pypto import platforms as _platforms
from pypto.errors import ArgumentError, ArgumentValueError, ConfigError, ReadOnlyInputError
from pypto.report.run_report import RunReport, scheduled_report
from pypto.runtime.isolate import run_isolated
from pypto.runtime.marshal import marshal

log = logging.getLogger(__name__)


def resolve_platform(platform: str | _platforms.Platform) -> _platforms.Platform:
    if isinstance(platform, _platforms.Platform):
        return platform
    if not isinstance(platform, str):
        raise ConfigError(f"platform must be a platform name or a pypto.platforms.Platform, got {platform!r}")
    return _platforms.get(platform)


def check_limits(isolate: Any, timeout_s: Any, where: str = "") -> None:
    """``isolate`` is a bool; ``timeout_s`` is None or a positive finite number of seconds and
    needs an isolated run (only a worker process can be stopped safely)."""
    if not isinstance(isolate, bool):
        raise ArgumentValueError(f"{where}isolate must be True or False, got {isolate!r}")
    if timeout_s is None:
        return
    if isinstance(timeout_s, bool) or not isinstance(timeout_s, (int, float)):
        raise ArgumentValueError(f"{where}timeout_s must be a number of seconds, got {timeout_s!r}")
    if not (math.isfinite(timeout_s) and timeout_s > 0):
        raise ArgumentValueError(f"{where}timeout_s must be positive and finite, got {timeout_s!r}")
    if not isolate:
        raise ArgumentValueError(f"{where}timeout_s needs isolate=True: only a worker process can be stopped")


def check_run_limit(name: str, value: Any, where: str = "") -> int:
    """``max_cycles`` / ``max_instructions``: None or 0 (no limit), else a positive integer that
    fits the simulator's 64-bit counters; returns the value the native run takes."""
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**63:
        raise ArgumentValueError(f"{where}{name} must be None or an integer in [0, 2**63), got {value!r}")
    return value


_names: dict[str, str] = {}


def kernel_name(so_path: str | Path) -> str:
    """The kernel's own name: the source name recorded beside a cached build, else the file stem."""
    key = str(so_path)
    name = _names.get(key)
    if name is None:
        try:
            name = json.loads((Path(so_path).parent / "meta.json").read_text())["name"]
        except (OSError, ValueError, KeyError, TypeError):
            name = Path(so_path).stem
        _names[key] = name = str(name)
    return name


def name_tensors(err: ReadOnlyInputError, names: list[str]) -> ReadOnlyInputError:
    """The error with the native side's ``tensor #k`` spelled as ``names[k]`` ("argument 'x'")."""

    def spell(m: re.Match) -> str:
        k = int(m.group(1))
        return names[k] if 0 <= k < len(names) else m.group(0)

    return type(err)(re.sub(r"tensor #(-?\d+)", spell, err.message))


def run_kernel_file(
    so_path: str | Path,
    args: list[Any],
    *,
    platform: str | _platforms.Platform = "a2a3sim",
    outputs: set[int] | None = None,
    block_num: int = 1,
    record: bool = False,
    hazards: str = "error",
    name: str | None = None,
    core: str = "aiv",
    max_cycles: int = 0,
    max_instructions: int = 0,
    isolate: bool = True,
    timeout_s: float | None = None,
) -> RunReport:
    """Runs ``kernel_entry`` of a built kernel over ``args`` (tensors then scalars, ABI order).

    ``outputs``: indices of the arguments the kernel writes (contiguous, writable, overlapping
    no other argument); every other tensor is an input, read-only to the kernel.
    ``hazards``: ``"error"`` raises HazardError on a race, ``"report"`` lists it in the report.
    ``block_num`` blocks run as tasks on cores of kind ``core``: ``"aiv"``, ``"aic"``, or
    ``"cluster"`` (one AIC and its AIVs together, talking through cross-core flags and tile
    pipes). ``max_cycles`` / ``max_instructions`` (0 = none) stop a runaway kernel with
    SimulationLimitError.
    ``isolate`` (default on: hand-written C++ can fault): run in a worker process, so a crash
    is a ``KernelCrashError`` and ``timeout_s`` can stop it.
    """
    if hazards not in ("error", "report"):
        raise ArgumentValueError(f"hazards must be 'error' or 'report', got {hazards!r}")
    if isinstance(block_num, bool) or not isinstance(block_num, int) or not 1 <= block_num <= 1 << 20:
        raise ArgumentValueError(f"block_num must be an integer in [1, 2**20], got {block_num!r}")
    if core not in ("aiv", "aic", "cluster"):
        raise ArgumentValueError(f"core must be 'aiv', 'aic' or 'cluster', got {core!r}")
    check_limits(isolate, timeout_s)
    knobs.SIM_THREADS.get()  # the native runtime reads it; a bad value is refused here
    max_cycles = check_run_limit("max_cycles", max_cycles)
    max_instructions = check_run_limit("max_instructions", max_instructions)
    if not isinstance(args, (list, tuple)):
        raise ArgumentError(
            f"args must be a list of arrays and numbers (ABI order), got {type(args).__name__}"
        )
    plat = resolve_platform(platform)
    m = marshal(list(args), outputs)
    kname = name or kernel_name(so_path)
    native_plat = plat.to_native()

    def launch(tensors: list) -> dict:
        return _native.run_kernel(
            str(so_path), tensors, m.scalars, native_plat, kname, block_num, record, hazards == "error",
            core, max_cycles, max_instructions,
        ).to_dict()  # fmt: skip

    try:
        if isolate:
            blocks = run_isolated(launch, m.tensors, m.outputs, kernel=kname, timeout_s=timeout_s)
        else:
            blocks = launch(m.tensors)
    except ReadOnlyInputError as e:
        raise name_tensors(e, [f"argument {n}" for n in m.names]) from None
    report = scheduled_report(plat.name, plat.clock_hz, blocks)
    log.debug("ran %s on %s: %d cycles", kname, plat.name, report.cycles)
    return report
