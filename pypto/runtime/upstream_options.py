"""Upstream PyPTO's ``RunConfig`` options, accepted on the simulator.

A script written for upstream PyPTO passes options that drive an NPU run (a device index,
tolerances, PMU events, ring sizes, ...). Here they are accepted instead of a ``TypeError``:
the ones with a simulator counterpart are translated, the others are ignored with a warning
that says why. Any other unknown keyword is still an error.
"""

from __future__ import annotations

import warnings
from typing import Any


class UpstreamOptionWarning(UserWarning):
    """An upstream RunConfig option that the simulator ignores."""


# Options with a meaning here: upstream name -> what it sets.
TRANSLATED = {
    "save_kernels_dir": "output_dir (where the build, reports and traces go)",
    "enable_l2_swimlane": "enable_chip_swimlane (its former name)",
}

# Options without one: upstream name -> why it means nothing on the simulator.
IGNORED = {
    "device_id": "there is no NPU device to pick",
    "rtol": "pypto does not compare against a golden; check outputs yourself",
    "atol": "pypto does not compare against a golden; check outputs yourself",
    "save_kernels": "kernels and reports are always kept in output_dir",
    "codegen_only": "use kernel.compile(...) to build without running",
    "pto_isa_commit": "the ISA is <pypto/kernel.hpp>, shipped with pypto",
    "enable_dump_tensor": "tensors are numpy/torch arrays you can inspect after the run",
    "compile_profiling": "not measured by pypto",
    "diagnostic_phase": "use disabled_diagnostics to silence checks",
    "golden_data_dir": "pypto does not generate golden data",
    "block_dim": "parallel loops decide the task count",
    "aicpu_thread_num": "there is no AICPU on the simulator",
    "ring_task_window": "there are no runtime rings on the simulator",
    "ring_heap": "there are no runtime rings on the simulator",
    "ring_dep_pool": "there are no runtime rings on the simulator",
    "distributed_config": "one chip only",
    "analyze_auto_scopes_for_deps": "task dependencies are always derived from the tensors",
}


def translate(kwargs: dict[str, Any]) -> dict[str, Any]:
    """``kwargs`` with the upstream options turned into pypto ones (warning on ignored ones)."""
    out = {k: v for k, v in kwargs.items() if k not in TRANSLATED and k not in IGNORED}
    for name, value in kwargs.items():
        if name == "strategy":
            _check_strategy(out.pop(name))
        elif name in IGNORED:
            warnings.warn(
                f"RunConfig({name}={value!r}) is an upstream PyPTO option that means nothing on the "
                f"simulator ({IGNORED[name]}); ignored",
                UpstreamOptionWarning,
                stacklevel=3,
            )
        elif name == "save_kernels_dir":
            if value is not None and out.get("output_dir") is None:
                out["output_dir"] = value
        elif name == "enable_l2_swimlane":
            out.setdefault("enable_chip_swimlane", value)
    _warn_partial(out)
    return out


def _check_strategy(value: Any) -> None:
    """``strategy=``: the one pipeline there is, ``OptimizationStrategy.Default`` (or its name)."""
    from pypto.errors import ConfigError
    from pypto.ir.pass_manager import OptimizationStrategy

    if value not in (None, OptimizationStrategy.Default, OptimizationStrategy.Default.value):
        raise ConfigError(
            f"RunConfig(strategy={value!r}): pypto compiles with one pass pipeline, "
            "pypto.ir.pass_manager.OptimizationStrategy.Default"
        )


def _warn_partial(options: dict[str, Any]) -> None:
    """DFX values whose device meaning the simulator gives only in part say so."""
    if options.get("enable_dump_args") == 1 or options.get("enable_dump_args") is True:
        warnings.warn(
            "RunConfig(enable_dump_args=1): pypto has no pl.dump_tag, so level 1 dumps every "
            "argument, as level 2 does",
            UpstreamOptionWarning,
            stacklevel=4,
        )
    pmu = options.get("enable_pmu")
    if pmu not in (None, False, True, 0, 2):
        warnings.warn(
            f"RunConfig(enable_pmu={pmu!r}): the simulator counts pipe utilisation (event 2) only; "
            "pmu.csv holds those counters",
            UpstreamOptionWarning,
            stacklevel=4,
        )
