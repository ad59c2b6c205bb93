"""Where kernel source comes from, and how AST positions map back to the user's file.

A kernel's source is read with ``inspect``, dedented and parsed; every AST position is then
shifted by the function's first line and the removed indentation, so spans point into
the user's real file (``file:line:col``), not into the dedented copy.
"""

from __future__ import annotations

import ast
import inspect
import itertools
import linecache
import textwrap
from dataclasses import dataclass, field
from typing import Any

from pypto.errors import CompileError, SourceSpan
from pypto.frontend.source_stamps import check_unchanged


@dataclass
class KernelSource:
    """Parsed source of one function, class or text, with its name-resolution scopes."""

    text: str
    tree: ast.Module
    file: str
    line_offset: int = 0  # added to ast line numbers
    col_offset: int = 0  # added to ast columns (indentation removed by dedent)
    globals: dict[str, Any] = field(default_factory=dict)
    closure: dict[str, Any] = field(default_factory=dict)

    def span(self, node: ast.AST | None) -> SourceSpan | None:
        """The user-file position of ``node``."""
        line, col = getattr(node, "lineno", None), getattr(node, "col_offset", 0)
        if line is None:
            return None
        return SourceSpan(self.file, line + self.line_offset, col + self.col_offset)

    @classmethod
    def from_function(cls, fn: Any) -> KernelSource:
        """Source of a Python function (a ``@pl.jit`` kernel)."""
        code = getattr(fn, "__code__", None)
        try:
            lines, first = inspect.getsourcelines(fn)
        except (OSError, TypeError) as err:
            raise CompileError(
                f"cannot read the source of kernel {getattr(fn, '__name__', fn)!r}: {err}; "
                "define kernels in a .py file"
            ) from None
        file = inspect.getsourcefile(fn) or (code.co_filename if code else "<unknown>")
        check_unchanged(fn, file)
        return cls._from_lines(lines, first, file, fn.__globals__, closure_values(fn))

    @classmethod
    def from_class(cls, klass: type) -> KernelSource:
        """Source of a ``@pl.program`` class; closure values are gathered from its methods."""
        try:
            lines, first = inspect.getsourcelines(klass)
        except (OSError, TypeError) as err:
            raise CompileError(f"cannot read the source of program {klass.__name__!r}: {err}") from None
        module = inspect.getmodule(klass)
        closure: dict[str, Any] = {}
        for value in vars(klass).values():
            fn = getattr(value, "fn", value)
            if callable(fn) and hasattr(fn, "__code__"):
                closure.update(closure_values(fn))
        file = inspect.getsourcefile(klass) or "<unknown>"
        return cls._from_lines(lines, first, file, vars(module) if module else {}, closure)

    @classmethod
    def _from_lines(cls, lines: list[str], first: int, file: str, glb: dict, closure: dict) -> KernelSource:
        raw = "".join(lines)
        text = textwrap.dedent(raw)
        first_raw = next((ln for ln in lines if ln.strip()), "")
        first_new = next((ln for ln in text.splitlines() if ln.strip()), "")
        indent = (len(first_raw) - len(first_raw.lstrip())) - (len(first_new) - len(first_new.lstrip()))
        tree = parse_python(text, file, first - 1)
        return cls(text, tree, file, first - 1, indent, glb, closure)

    @classmethod
    def from_text(cls, text: str, filename: str | None = None) -> KernelSource:
        """Source given as text (a printed program); registered so errors can show lines."""
        file = filename or f"<pypto-program-{next(_TEXT_IDS)}>"
        linecache.cache[file] = (len(text), None, text.splitlines(keepends=True), file)
        return cls(text, parse_python(text, file, 0), file)


_TEXT_IDS = itertools.count()


# The source file's (mtime, size) when each kernel was defined: a kernel is parsed from its file
# (by the line Python recorded), so a file edited after import would be read at the wrong lines.
def parse_python(text: str, file: str, line_offset: int) -> ast.Module:
    """``ast.parse`` with syntax errors turned into a ``CompileError`` at the user's line."""
    try:
        return ast.parse(text, filename=file)
    except SyntaxError as err:
        span = SourceSpan(file, (err.lineno or 1) + line_offset, (err.offset or 1) - 1)
        raise CompileError(f"syntax error: {err.msg}", span) from None


def closure_values(fn: Any) -> dict[str, Any]:
    """The free variables of ``fn`` with their current values (empty cells skipped)."""
    code = getattr(fn, "__code__", None)
    cells = getattr(fn, "__closure__", None) or ()
    out: dict[str, Any] = {}
    if code is None:
        return out
    for name, cell in zip(code.co_freevars, cells):
        try:
            out[name] = cell.cell_contents
        except ValueError:  # not yet assigned in the enclosing function
            continue
    return out
