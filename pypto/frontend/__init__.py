"""The pypto frontend: kernel source → IR.

Three layers, as in the language/semantic/code-generator split of Triton: the DSL objects
(:mod:`pypto.language`), typing and placement rules (:mod:`.semantic`, on top of the op
table), and the AST walker (:mod:`.parser`, :mod:`.function`, :mod:`.control`,
:mod:`.exprs`). Errors are :class:`pypto.errors.CompileError` subclasses pointing at the
user's ``file:line:col``.
"""

from pypto.frontend.parser import parse_class, parse_file, parse_jit, parse_text
from pypto.frontend.semantic import OutParamWriteDropped

__all__ = ["parse_class", "parse_file", "parse_jit", "parse_text", "OutParamWriteDropped"]
