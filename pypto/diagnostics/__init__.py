"""Perf hints and warnings the compiler emits (PH001, PH-MR-001, ...)."""

from pypto.diagnostics.hints import HintSink, PerfHint, write_hints

__all__ = ["HintSink", "PerfHint", "write_hints"]
