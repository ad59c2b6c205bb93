"""A kernel's source is found from the line Python recorded, by indentation, and is the same
text, tree and user-file positions as ``inspect.getsourcelines`` gives, however the definition
is laid out (decorators, nesting, continuation lines and strings at column 0, comments)."""

from __future__ import annotations

import ast
import importlib.util
import inspect
from pathlib import Path

import pytest

from pypto.frontend import source as source_mod
from pypto.frontend.source import KernelSource

MODULE = '''
import functools


def deco(f):
    return f


@deco
def plain(a, b):
    x = a + b
    return x


def after_plain():
    return 0


class Holder:
    @deco
    @functools.lru_cache(
        maxsize=None)
    def method(self, a,
               b):
        # a comment at the method's own depth
        y = a * 2
        return y  # trailing

    # a comment after the method, before the next one
    def other(self):
        return 1


@deco
@functools.lru_cache(
maxsize=None)
def wrapped(a,
b):
# a comment at column 0 inside the body
    return a


def docstring_at_column_0(a):
    """First line
of a docstring whose second line starts at column 0."""
    return a


def one_liner(a): return a + 1
VALUE = 3


def continued(a):
    total = a + \\
1
    return total


def last_in_file(a):
    return a
    # trailing comment
'''


@pytest.fixture(scope="module")
def module(tmp_path_factory: pytest.TempPathFactory):
    path = tmp_path_factory.mktemp("src") / "kernels_mod.py"
    path.write_text(MODULE)
    spec = importlib.util.spec_from_file_location("kernels_mod", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


FUNCTIONS = [
    "plain",
    "Holder.method",
    "Holder.other",
    "docstring_at_column_0",
    "one_liner",
    "continued",
    "last_in_file",
]


def _lookup(mod, dotted: str):
    obj = mod
    for part in dotted.split("."):
        obj = getattr(obj, part)
    return getattr(obj, "__wrapped__", obj)


def _by_inspect(fn) -> KernelSource:
    lines, first = inspect.getsourcelines(fn)
    return KernelSource._from_lines(lines, first, fn.__code__.co_filename, fn.__globals__, {})


@pytest.mark.parametrize("name", FUNCTIONS)
def test_the_source_matches_inspects(module, name: str) -> None:
    fn = _lookup(module, name)
    ours, theirs = KernelSource.from_function(fn), _by_inspect(fn)
    assert ast.dump(ours.tree, include_attributes=True) == ast.dump(theirs.tree, include_attributes=True)
    assert (ours.line_offset, ours.col_offset, ours.file) == (
        theirs.line_offset,
        theirs.col_offset,
        theirs.file,
    )
    assert ours.text.rstrip() == theirs.text.rstrip()


def test_definitions_the_indentation_cannot_delimit_go_to_inspect(module) -> None:
    names = ("wrapped", "continued", "plain")
    found = {name: "".join(source_mod._def_lines(_lookup(module, name)) or []) for name in names}
    assert "return a" not in found["wrapped"]  # cut at `b):`, which does not parse
    assert "return total" not in found["continued"]  # cut at the continued line's `1`
    assert KernelSource.from_function(_lookup(module, "wrapped")).tree.body[0].name == "wrapped"
    assert found["plain"].rstrip().endswith("return x")  # the common case: read here


def test_a_kernel_in_a_file_reads_its_real_positions(module, tmp_path: Path) -> None:
    src = KernelSource.from_function(module.plain)
    ret = src.tree.body[0].body[-1]
    span = src.span(ret)
    assert span is not None and (span.line, span.col) == (MODULE.splitlines().index("    return x") + 1, 4)
