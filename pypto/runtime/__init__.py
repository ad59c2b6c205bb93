"""Running kernels: build + cache, argument marshalling, launch, reports."""

from pypto.runtime.launch import run_kernel_file
from pypto.runtime.report import PIPES, InstrTrace, RunReport, TaskReport

__all__ = ["PIPES", "InstrTrace", "RunReport", "TaskReport", "run_kernel_file"]
