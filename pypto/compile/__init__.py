"""The compile driver: ``compile(call, options) -> Artifact`` (its stages in ``STAGES``), the
options split (``CompileOptions`` / ``RunOptions``) and the Artifact's codecs.

Names load lazily: the driver loads the whole compiler, which a run from the program cache never
needs.
"""

from __future__ import annotations

from pypto._lazy import lazy_exports

_EXPORTS = {
    "pypto.compile.artifact": ("Artifact", "Launch", "Lazy"),
    "pypto.compile.codecs": ("CompiledDirError", "from_bytes", "from_folder", "to_bytes", "to_folder"),
    "pypto.compile.driver": ("STAGES", "KernelCall", "Stage", "compile", "lower"),
    "pypto.compile.options": ("CompileOptions", "RunOptions"),
}

__all__, __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
