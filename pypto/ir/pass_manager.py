"""Where upstream PyPTO scripts import the pass pipeline's options from.

``OptimizationStrategy`` names the pipeline a run compiles with; pypto has one
(``pypto.passes.pipeline``), which is ``Default``. ``PassDumpLevel`` is ``dump_passes``'s
verbosity (the same enum as ``pypto.ir.enums.PassDumpLevel``).
"""

from __future__ import annotations

import enum

from pypto.ir.enums import PassDumpLevel


class OptimizationStrategy(enum.Enum):
    """``RunConfig(strategy=...)``: the pass pipeline to compile with. ``Default`` is the only
    one: every pass of ``pypto.passes.pipeline``, in its order."""

    Default = "Default"


__all__ = ["OptimizationStrategy", "PassDumpLevel"]
