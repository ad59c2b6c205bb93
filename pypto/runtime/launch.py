"""Running a built kernel on simulated cores (the hand-written-kernel entry point).

Generated kernels reach the same function through ``CompiledProgram.run``; nothing here is
per-instruction: the native runtime does the work with the GIL released.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from pypto import _native
from pypto import platforms as _platforms
from pypto.runtime.marshal import marshal
from pypto.runtime.report import RunReport, scheduled_report

log = logging.getLogger(__name__)


def resolve_platform(platform: str | _platforms.Platform) -> _platforms.Platform:
    return platform if isinstance(platform, _platforms.Platform) else _platforms.get(platform)


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
) -> RunReport:
    """Runs ``kernel_entry`` of a built kernel over ``args`` (tensors then scalars, ABI order).

    ``outputs``: indices of arguments the kernel writes (must be contiguous and writable).
    ``hazards``: ``"error"`` raises HazardError on a race, ``"report"`` lists it in the report.
    ``block_num`` blocks run as tasks on cores of kind ``core``: ``"aiv"``, ``"aic"``, or
    ``"cluster"`` (one AIC and its AIVs together, talking through cross-core flags and tile
    pipes). ``max_cycles`` / ``max_instructions`` (0 = none) stop a runaway kernel with
    SimulationLimitError.
    """
    if hazards not in ("error", "report"):
        raise ValueError(f"hazards must be 'error' or 'report', got {hazards!r}")
    if core not in ("aiv", "aic", "cluster"):
        raise ValueError(f"core must be 'aiv', 'aic' or 'cluster', got {core!r}")
    plat = resolve_platform(platform)
    m = marshal(list(args), outputs)
    kernel_name = name or Path(so_path).stem
    blocks = _native.run_kernel(
        str(so_path),
        m.tensors,
        m.scalars,
        plat.to_native(),
        kernel_name,
        block_num,
        record,
        hazards == "error",
        core,
        max_cycles,
        max_instructions,
    )
    report = scheduled_report(plat.name, plat.clock_hz, blocks)
    log.debug("ran %s on %s: %d cycles", kernel_name, plat.name, report.cycles)
    return report
