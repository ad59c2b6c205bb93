"""Running kernels: RunConfig, build + cache, argument marshalling, launch, reports.

Names load lazily so that ``pypto.runtime.build`` works without the native module.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "RunConfig": "pypto.runtime.config",
    "CompiledProgram": "pypto.runtime.jit",
    "run_kernel_file": "pypto.runtime.launch",
    "PIPES": "pypto.runtime.report",
    "InstrTrace": "pypto.runtime.report",
    "RunReport": "pypto.runtime.report",
    "TaskReport": "pypto.runtime.report",
    "run": "pypto.runtime.entry",
    "UpstreamOptionWarning": "pypto.runtime.upstream_options",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'pypto.runtime' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)
