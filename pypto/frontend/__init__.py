"""The pypto frontend: kernel source → IR.

Three layers, as in the language/semantic/code-generator split of Triton: the DSL objects
(:mod:`pypto.language`), typing and placement rules (:mod:`.semantic`, on top of the op
table), and the AST walker (:mod:`.parser`, :mod:`.function`, :mod:`.control`,
:mod:`.exprs`). Errors are :class:`pypto.errors.CompileError` subclasses pointing at the
user's ``file:line:col``.
"""

from pypto._lazy import lazy_exports

_EXPORTS = {
    "pypto.frontend.parser": ("parse_class", "parse_file", "parse_jit", "parse_text"),
    "pypto.frontend.semantic": ("OutParamWriteDropped",),
}

# Loaded on first use: a call served by the program cache needs only ``specialize``;
# other names are submodules, as `pypto.frontend.<module>`.
__all__, __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, submodules=True)
