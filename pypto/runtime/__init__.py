"""Running kernels: RunConfig, build + cache, argument marshalling, launch, reports.

Names load lazily so that ``pypto.runtime.build`` works without the native module.
"""

from __future__ import annotations

from pypto._lazy import lazy_exports

_EXPORTS = {
    "pypto.runtime.config": ("RunConfig",),
    "pypto.runtime.entry": ("run",),
    "pypto.runtime.jit": ("CompiledProgram",),
    "pypto.runtime.launch": ("run_kernel_file",),
    "pypto.runtime.report": ("PIPES", "InstrTrace", "RunReport", "TaskReport"),
    "pypto.runtime.upstream_options": ("UpstreamOptionWarning",),
}

__all__, __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
