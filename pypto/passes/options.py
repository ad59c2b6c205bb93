"""Choices that select passes: the memory planner. (How much IR to dump, ``PassDumpLevel``,
is an IR enum: :mod:`pypto.ir.enums`.)"""

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
