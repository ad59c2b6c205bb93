"""Compiler passes: one file per pass, one entry function each; ``pipeline.py`` holds the order."""

from pypto.passes.options import MemoryPlanner, PassDumpLevel

__all__ = ["MemoryPlanner", "PassDumpLevel"]
