"""Where kernel source comes from, and how AST positions map back to the user's file.

A kernel's source is read (from the line Python recorded, else with ``inspect``), dedented
and parsed; every AST position is then shifted by the function's first line and the removed
indentation, so spans point into the user's real file (``file:line:col``), not into the
dedented copy.
"""

from __future__ import annotations

import ast
import contextlib
import inspect
import itertools
import linecache
import textwrap
from dataclasses import field
from typing import Any

from pypto._dataclass import dataclass
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
    def from_function(cls, fn: Any, outer: dict[str, Any] | None = None) -> KernelSource:
        """Source of a Python function (a ``@pl.jit`` kernel); ``outer``: the variables of the
        function it is defined in, under its own closure's."""
        code = getattr(fn, "__code__", None)
        closure = {**(outer or {}), **closure_values(fn)}
        quick = _def_lines(fn)
        if quick is not None and code is not None:
            check_unchanged(fn, code.co_filename)
            with contextlib.suppress(CompileError):  # not the whole def after all: inspect's way
                src = cls._from_lines(quick, code.co_firstlineno, code.co_filename, fn.__globals__, closure)
                if _is_def_of(src.tree, fn):
                    return src
        try:
            lines, first = inspect.getsourcelines(fn)
        except (OSError, TypeError) as err:
            raise CompileError(
                f"cannot read the source of kernel {getattr(fn, '__name__', fn)!r}: {err}; "
                "define kernels in a .py file"
            ) from None
        file = inspect.getsourcefile(fn) or (code.co_filename if code else "<unknown>")
        check_unchanged(fn, file)
        return cls._from_lines(lines, first, file, fn.__globals__, closure)

    @classmethod
    def from_class(cls, klass: type, outer: dict[str, Any]) -> KernelSource:
        """Source of a ``@pl.program`` class; closure values are gathered from its methods,
        over ``outer``, the variables of the function the class is defined in (names only its
        annotations use are in no method's closure)."""
        try:
            lines, first = inspect.getsourcelines(klass)
        except (OSError, TypeError) as err:
            raise CompileError(f"cannot read the source of program {klass.__name__!r}: {err}") from None
        module = inspect.getmodule(klass)
        closure: dict[str, Any] = dict(outer)
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


def _def_lines(fn: Any) -> list[str] | None:
    """The lines of ``fn``'s definition, decorators included, found by indentation from the line
    Python recorded: ``inspect.getsourcelines`` tokenizes the file from there and first searches
    every module for the function's, a few milliseconds of a new process's first compile. The
    block ends before the first statement line indented no deeper than the ``def``; a cut inside
    a bracket or string does not parse, and then the caller asks ``inspect``. None: no file lines."""
    code = getattr(fn, "__code__", None)
    if code is None or code.co_name == "<lambda>":
        return None
    linecache.checkcache(code.co_filename)  # an edited file is read again, as inspect does
    lines = linecache.getlines(code.co_filename, getattr(fn, "__globals__", None))
    start = code.co_firstlineno - 1
    if not 0 <= start < len(lines):
        return None
    indent = _indent(lines[start])
    head = next(
        (i for i in range(start, len(lines)) if lines[i].lstrip().startswith(("def ", "async def "))), None
    )
    if head is None:
        return None
    end = next((i for i in range(head + 1, len(lines)) if _ends_block(lines[i], indent)), len(lines))
    while end > head + 1 and _trails(lines[end - 1], indent):
        end -= 1
    return lines[start:end]


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _ends_block(line: str, indent: int) -> bool:
    text = line.lstrip()
    return bool(text) and not text.startswith("#") and _indent(line) <= indent


def _trails(line: str, indent: int) -> bool:
    """A blank line after the body, or a comment no deeper than the ``def`` (deeper ones stay
    with the body, as ``inspect`` keeps them)."""
    text = line.lstrip()
    return not text or (text.startswith("#") and _indent(line) <= indent)


def _is_def_of(tree: ast.Module, fn: Any) -> bool:
    """Whether ``tree`` is exactly one definition of ``fn`` (by name)."""
    body = tree.body
    return (
        len(body) == 1
        and isinstance(body[0], (ast.FunctionDef, ast.AsyncFunctionDef))
        and body[0].name == fn.__name__
    )


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
