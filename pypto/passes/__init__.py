"""Compiler passes: one file per pass, one entry function each; ``pipeline.py`` holds the order."""

from pypto.ir.enums import PassDumpLevel
from pypto.passes.options import MemoryPlanner

__all__ = ["MemoryPlanner", "PassDumpLevel"]
