"""Tuning kernels by simulated cycles: ``sweep`` over a parameter space and ``autotune``.

See ``docs/tuning.md``.
"""

from pypto.tune.autotune import Autotuned, autotune
from pypto.tune.sweep import SweepResult, points, sweep

__all__ = ["Autotuned", "SweepResult", "autotune", "points", "sweep"]
