"""The pypto frontend: kernel source → IR.

Three layers, as in the language/semantic/code-generator split of Triton: the DSL objects
(:mod:`pypto.language`), typing and placement rules (:mod:`.semantic`, on top of the op
table), and the AST walker (:mod:`.parser`, :mod:`.function`, :mod:`.control`,
:mod:`.exprs`). Errors are :class:`pypto.errors.CompileError` subclasses pointing at the
user's ``file:line:col``.
"""

import importlib
from typing import Any

_EXPORTS = {
    "parse_class": "pypto.frontend.parser",
    "parse_file": "pypto.frontend.parser",
    "parse_jit": "pypto.frontend.parser",
    "parse_text": "pypto.frontend.parser",
    "OutParamWriteDropped": "pypto.frontend.semantic",
}

__all__ = list(_EXPORTS)


def __getattr__(name: str) -> Any:
    # Loaded on first use: a call served by the program cache needs only ``specialize``.
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    try:  # a submodule, as `pypto.frontend.<module>`
        return importlib.import_module(f"{__name__}.{name}")
    except ModuleNotFoundError as e:
        if e.name != f"{__name__}.{name}":
            raise
    raise AttributeError(f"module 'pypto.frontend' has no attribute {name!r}")
