"""``pypto/_native.pyi`` is what mypy believes about the compiled module: every name it declares
exists, every binding is declared, and each function's parameters (names, order, which have
defaults) are the ones pybind11 reports for the binding, so a call mypy accepts is one the
binding accepts."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import pypto
from pypto import _native

STUB = ast.parse((Path(pypto.__file__).parent / "_native.pyi").read_text())


def _split_top(text: str) -> list[str]:
    """``text`` split at the commas outside brackets."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += (ch in "[(") - (ch in "])")
        if ch == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    tail = text[start:].strip()
    return parts + ([tail] if tail else [])


def _native_params(obj: object) -> list[tuple[str, bool]]:
    """(name, has a default) of each parameter, from the signature pybind11 writes first in the
    docstring (``name(a: int, b: bool = False) -> None``); ``self`` left out."""
    first = (obj.__doc__ or "").splitlines()[0]
    inner = first[first.index("(") + 1 : first.rindex(") ->")]
    params = [(p.split(":")[0].strip(), "=" in p) for p in _split_top(inner)]
    return [p for p in params if p[0] != "self"]


def _stub_params(fn: ast.FunctionDef) -> list[tuple[str, bool]]:
    args = fn.args.args
    first_default = len(args) - len(fn.args.defaults)
    return [(a.arg, i >= first_default) for i, a in enumerate(args) if a.arg != "self"]


def _stub_functions() -> list[tuple[str, ast.FunctionDef]]:
    found = []
    for node in STUB.body:
        if isinstance(node, ast.FunctionDef):
            found.append((node.name, node))
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and not item.decorator_list:  # not a property
                    found.append((f"{node.name}.{item.name}", item))
    return found


def _resolve(dotted: str) -> object:
    obj: object = _native
    for part in dotted.split("."):
        obj = getattr(obj, part)
    return obj


def test_the_stub_declares_every_binding_and_nothing_else():
    declared = {n.name for n in STUB.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    declared |= {
        n.target.id for n in STUB.body if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)
    }
    declared = {name for name in declared if not name.startswith("_")}  # stub-only aliases
    public = {name for name in dir(_native) if not name.startswith("_")}
    assert declared == public


@pytest.mark.parametrize(("name", "fn"), _stub_functions(), ids=lambda v: v if isinstance(v, str) else "")
def test_each_stub_signature_is_the_bindings(name, fn):
    native = _resolve(name)
    if re.match(r"Initialize self", native.__doc__ or ""):  # a class pybind11 gives no __init__
        pytest.fail(f"{name} is declared but the binding has no constructor")
    assert _stub_params(fn) == _native_params(native)


def test_hardware_facts_has_the_keys_the_stub_declares():
    facts = next(n for n in STUB.body if isinstance(n, ast.ClassDef) and n.name == "_HardwareFacts")
    keys = [
        n.target.id for n in facts.body if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)
    ]
    assert sorted(keys) == sorted(_native.hardware_facts())
