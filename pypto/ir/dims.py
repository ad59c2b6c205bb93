"""Run-time tensor dimensions: ``M = pl.dynamic("M")``.

A leaf value apart from :mod:`pypto.ir.types` (which re-exports it): defining a kernel with a
dynamic dim, and the specialisation key of a call served by the program cache, need it
without the IR's dataclasses.
"""

from __future__ import annotations

from pypto._light import Record


class DynDim(Record):
    """A tensor dimension known only at run time (``M = pl.dynamic("M")``): one compiled
    program serves every size; kernels read the size from the tensor they are given."""

    __slots__ = ("name",)
    name: str

    def __init__(self, name: str) -> None:
        object.__setattr__(self, "name", name)

    def __repr__(self) -> str:
        return self.name
