"""The outside values a kernel's source reads, and whether they still hold.

The frontend folds module constants and closure values into the program it compiles, so a
compiled program is only valid while those values are unchanged. Both caches ask here: the
in-process cache checks :func:`changed` on every call (a few dictionary lookups) and compiles
again when a constant was rebound; the program cache on disk records the same names by value.
"""

from __future__ import annotations

import ast
import copy
import dataclasses
import enum
import types
from typing import Any

from pypto.ir.dtypes import DataType

ABSENT = ("absent",)
# Versioned packages: their values cannot change under a running kernel.
VALUE_PACKAGES = ("pypto", "numpy", "ml_dtypes", "torch")
_PLAIN = (type(None), bool, int, float, complex, str, bytes, DataType, enum.Enum)

# (namespace, name, value when compiled): a module's or a kernel's globals dict and a key, or
# a closure cell and None.
Guard = tuple[Any, Any, Any]


def names_in(tree: ast.AST) -> tuple[set[str], frozenset[str]]:
    """The free names the source reads (its parameters and assigned names are the kernel's
    own: the frontend never looks them up outside) and every attribute name it mentions."""
    read: set[str] = set()
    bound: set[str] = set()
    attrs: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (read if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.Attribute):
            attrs.add(node.attr)
    return read - bound, frozenset(attrs)


def resolve(fn: Any, name: str) -> Any:
    """``name`` as the frontend resolves it: a closure cell, else a module global."""
    cell = _cell(fn, name)
    if cell is not None:
        try:
            return cell.cell_contents
        except ValueError:
            pass
    return fn.__globals__.get(name, ABSENT)


def guards(fn: Any, record: tuple | None = None) -> tuple[Guard, ...]:
    """What :func:`changed` checks for ``fn``: each plain value (number, string, dtype, enum,
    a tuple/list/dict or dataclass of those) its source reads from its closure, its module or a
    user module's attribute, and the same for every kernel, inline helper or host function it
    calls (directly or through a module attribute) and every plain function a host function
    calls.

    ``record``: the program cache's dependency record of ``fn`` (``program_cache._record_fn``),
    which names what the source reads; with it the source is not read and parsed again (most of
    a new process's first call of a cached kernel)."""
    out: list[Guard] = []
    if record is None:
        _collect(fn, out, set())
    else:
        _collect_recorded(fn, record, out, set())
    return tuple(out)


def changed(found: tuple[Guard, ...]) -> str | None:
    """The first name whose value is no longer the one compiled in (None: all hold)."""
    for ns, name, value in found:
        if name is None:
            try:
                now = ns.cell_contents
            except ValueError:
                return "a closure value"
        else:
            now = ns.get(name, ABSENT)
        if now is not value and not _same(now, value):
            return name or "a closure value"
    return None


def _same(now: Any, value: Any) -> bool:
    try:
        if type(now) is not type(value):
            return False
        if dataclasses.is_dataclass(now):  # field by field, whatever its eq= says
            return all(_same(getattr(now, f.name), getattr(value, f.name)) for f in dataclasses.fields(now))
        return bool(now == value)
    except Exception:  # a value whose == does not give one truth value
        return False


def _collect(fn: Any, out: list[Guard], seen: set[int], runs: bool = False) -> None:
    """Guards what ``fn``'s source reads, and what the kernels and helpers it calls read.
    ``runs``: ``fn`` runs while the kernel compiles (a host function, or a plain function one
    calls), so the plain functions it calls run too and their reads count."""
    from pypto.frontend.source import KernelSource
    from pypto.language.decorators import HostFunction, InlineFunction, JitFunction, KernelFunction

    code = getattr(fn, "__code__", None)
    if code is None or id(code) in seen:
        return
    seen.add(id(code))
    try:
        tree = KernelSource.from_function(fn).tree
    except Exception:  # no source to read (it was compiled from elsewhere): nothing to guard
        return
    names, attrs = names_in(tree)
    for name in sorted(names):
        value = _guard_name(fn, name, out)
        if isinstance(value, types.ModuleType):
            for _, found in _module_attrs(value, attrs, out):  # a kernel or helper reached through it
                _collect(found.fn, out, seen, isinstance(found, HostFunction))
        elif isinstance(value, (JitFunction, KernelFunction, InlineFunction, HostFunction)):  # it calls these
            _collect(value.fn, out, seen, isinstance(value, HostFunction))
        elif runs and isinstance(value, types.FunctionType):
            _collect(value, out, seen, True)


def _collect_recorded(fn: Any, record: tuple, out: list[Guard], seen: set[int]) -> None:
    """:func:`_collect` with the names read from ``record`` ("fn", file sha, where, ((name,
    value record), ...)): a module's record lists the attributes read from it, a called
    kernel's or an inline helper's record ends with its own function record."""
    from pypto.language.decorators import HostFunction, InlineFunction, JitFunction, KernelFunction

    code = getattr(fn, "__code__", None)
    if code is None or id(code) in seen:
        return
    seen.add(id(code))
    for name, rec in record[3]:
        value = _guard_name(fn, name, out)
        if isinstance(value, types.ModuleType):
            subs = dict(rec[2])
            for attr, found in _module_attrs(value, frozenset(subs), out):
                _collect_recorded(found.fn, subs[attr][-1], out, seen)
        elif isinstance(value, (JitFunction, KernelFunction, InlineFunction, HostFunction)):
            _collect_recorded(value.fn, rec[-1], out, seen)
        elif isinstance(value, types.FunctionType) and rec[0] == "called":  # a host function's helper
            _collect_recorded(value, rec[1], out, seen)


def _guard_name(fn: Any, name: str, out: list[Guard]) -> Any:
    """``name``'s value as ``fn`` sees it, guarded when it is a plain value."""
    cell = _cell(fn, name)
    value = resolve(fn, name)
    if _plain(value):
        where = (cell, None) if cell is not None else (fn.__globals__, name)
        out.append((*where, _snapshot(value)))
    return value


def _module_attrs(module: types.ModuleType, attrs: frozenset[str], out: list[Guard]) -> list[tuple[str, Any]]:
    """Guards the plain values among ``module``'s attributes ``attrs``; returns the kernels and
    helpers among them, by name (what the source calls through the module), whose reads count
    too."""
    from pypto.language.decorators import HostFunction, InlineFunction, JitFunction, KernelFunction

    if module.__name__.split(".")[0] in VALUE_PACKAGES:
        return []
    ns = vars(module)
    out.extend((ns, a, _snapshot(ns[a])) for a in sorted(attrs) if a in ns and _plain(ns[a]))
    kinds = (JitFunction, KernelFunction, InlineFunction, HostFunction)
    return [(a, ns[a]) for a in sorted(attrs) if a in ns and isinstance(ns[a], kinds)]


def _cell(fn: Any, name: str) -> Any:
    code = fn.__code__
    if name in code.co_freevars and fn.__closure__:
        return fn.__closure__[code.co_freevars.index(name)]
    return None


def _plain(value: Any) -> bool:
    if isinstance(value, (tuple, list)):
        return all(_plain(v) for v in value)
    if isinstance(value, dict):
        return all(_plain(k) and _plain(v) for k, v in value.items())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):  # a model's config
        return all(_plain(getattr(value, f.name)) for f in dataclasses.fields(value))
    return isinstance(value, _PLAIN)


def _snapshot(value: Any) -> Any:
    """A mutable container (or dataclass) is copied, so an in-place change is seen as one."""
    if isinstance(value, list):
        return [_snapshot(v) for v in value]
    if isinstance(value, dict):
        return {k: _snapshot(v) for k, v in value.items()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        params: Any = type(value).__dataclass_params__  # type: ignore[attr-defined]
        return value if params.frozen else copy.deepcopy(value)
    return value
