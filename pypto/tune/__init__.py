"""Tuning kernels by simulated cycles: ``sweep`` over a parameter space and ``autotune``.

See ``docs/tuning.md``. Names load on first use: ``import pypto.language`` (which offers
``pl.autotune``) stays light.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "Autotuned": "pypto.tune.autotune",
    "autotune": "pypto.tune.autotune",
    "SweepResult": "pypto.tune.runner",
    "points": "pypto.tune.runner",
    "sweep": "pypto.tune.runner",
    "TuneError": "pypto.tune.errors",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'pypto.tune' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)
