"""pypto: Python tile kernels for Ascend-style AI cores, run on a native cycle-level simulator.

``import pypto.language as pl`` for the kernel language; ``pypto.runtime`` runs kernels and
returns a :class:`~pypto.runtime.RunReport`; ``pypto.platforms`` holds the hardware tables.
"""

__version__ = "0.1.0"
