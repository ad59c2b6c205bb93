"""Tuning kernels by simulated cycles: ``sweep`` over a parameter space and ``autotune``.

See ``docs/tuning.md``. Names load on first use: ``import pypto.language`` (which offers
``pl.autotune``) stays light.
"""

from __future__ import annotations

from pypto._lazy import lazy_exports

_EXPORTS = {
    "pypto.tune.autotune": ("Autotuned", "autotune"),
    "pypto.tune.errors": ("TuneError",),
    "pypto.tune.runner": ("SweepResult", "points", "sweep"),
}

__all__, __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
