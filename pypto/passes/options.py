"""Choices that select passes: the memory planner and how much IR to dump."""

from __future__ import annotations

import enum


class MemoryPlanner(enum.Enum):
    """Who assigns on-chip addresses.

    PYPTO: lifetimes → first-fit reuse → addresses per space in the passes (AllocateMemoryAddr).
    PTOAS: no address assignment in the passes; slot declarations become multi-tile regions
    resolved when the kernel starts.
    """

    PYPTO = "pypto"
    PTOAS = "ptoas"


class PassDumpLevel(enum.Enum):
    """``dump_passes``: NONE writes nothing; CONCISE and EXPLICIT write each pass's IR."""

    NONE = "none"
    CONCISE = "concise"
    EXPLICIT = "explicit"
