"""Running compiled programs: RunConfig, argument marshalling, launch, and upstream PyPTO's
run-time surface (ChipWorker, execute_compiled). Builds live in ``pypto.kernel_build``, reports
in ``pypto.report``; ``RunReport`` and its pipe order are handed on here.

Names load lazily, so importing this package loads no native module.
"""

from __future__ import annotations

from pypto._lazy import lazy_exports

_EXPORTS = {
    "pypto.runtime.bench": ("BenchmarkStats", "benchmark"),
    "pypto.runtime.config": ("RunConfig",),
    "pypto.runtime.device_tensor": ("DeviceTensor", "StackedDeviceTensor"),
    "pypto.runtime.log_config": ("configure_log", "current_level", "log_level"),
    "pypto.runtime.pto_isa": ("ensure_pto_isa_root", "pto_isa_include_dir"),
    "pypto.runtime.runner": ("execute_compiled",),
    "pypto.runtime.worker": ("ChipWorker", "RegistrationHandle"),
    "pypto.runtime.entry": ("run",),
    "pypto.runtime.tensor_spec": ("TensorSpec",),
    "pypto.runtime.jit": ("CompiledProgram",),
    "pypto.runtime.launch": ("run_kernel_file",),
    "pypto.report.run_report": ("PIPES", "InstrTrace", "RunReport", "TaskReport"),
    "pypto.runtime.upstream_options": ("UpstreamOptionWarning",),
}

__all__, __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
