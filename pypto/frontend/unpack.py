"""Tuple assignment: ``a, b = 2, 3`` of compile-time values binds constants; ``a, b = x, y``
of run-time values reads every value before it binds any name, as Python does (so
``a, b = b, a`` swaps)."""

from __future__ import annotations

import ast
import dataclasses
from typing import TYPE_CHECKING

from pypto.errors import TypeCheckError, UnsupportedSyntaxError
from pypto.frontend.consteval import NOT_CONST
from pypto.ir.expr import ListExpr
from pypto.ir.stmt import Eval
from pypto.language.decorators import InlineFunction, JitFunction, KernelFunction
from pypto.language.markers import ScopeMarker

if TYPE_CHECKING:
    from pypto.frontend.state import ParserState


def unpack(p: ParserState, target: ast.Tuple | ast.List, value: ast.expr) -> None:
    """``a, b = value``: bind each name of ``target``."""
    folded = p.folder.fold(value)
    names = [t for t in target.elts if isinstance(t, ast.Name)]
    if folded is NOT_CONST and _unpack_values(p, target, names, value):
        return
    marker = p.folder.fold(value.func) if isinstance(value, ast.Call) else None
    if (
        isinstance(value, ast.Call)
        and isinstance(marker, ScopeMarker)
        and marker.dsl_name in ("submit", "spmd_submit")
    ):
        p.spmd.submit(target, value, marker.dsl_name)
        return
    if folded is NOT_CONST and _unpack_call(p, target, names, value):
        return
    if folded is NOT_CONST or len(names) != len(target.elts) or not isinstance(folded, (tuple, list)):
        raise UnsupportedSyntaxError(
            "tuple assignment is only supported for compile-time values", p.span(target)
        )
    if len(folded) != len(names):
        raise TypeCheckError(f"cannot unpack {len(folded)} values into {len(names)} names", p.span(target))
    for n, v in zip(names, folded):
        p.env[n.id] = v


def _unpack_call(
    p: ParserState, target: ast.Tuple | ast.List, names: list[ast.Name], value: ast.expr
) -> bool:
    """``a, b = kernel(x, a, b)`` in orchestration (each name stands for the tensor argument the
    kernel returns in its place), or ``a, b = helper(...)`` of a ``@pl.jit.inline`` helper ending
    ``return x, y`` (each name takes its value). False when the value is neither call."""
    if isinstance(value, ast.Call) and _self_call(value):
        assert isinstance(value.func, ast.Attribute)
        if len(names) != len(target.elts):
            raise UnsupportedSyntaxError("unpack a call into plain names: `a, b = f(...)`", p.span(target))
        args, no_dep = p.exprs.kernel_args(value)
        call, values = p.program.call_method_unpacked(p, value.func.attr, args, value)
        p.emit(Eval(dataclasses.replace(call, no_dep=no_dep), span=p.span(value)))
        _bind(p, target, names, values, value.func.attr)
        return True
    fn = p.folder.fold(value.func) if isinstance(value, ast.Call) else None
    if not isinstance(value, ast.Call) or not isinstance(fn, (JitFunction, KernelFunction, InlineFunction)):
        return False
    if len(names) != len(target.elts):
        raise UnsupportedSyntaxError("unpack a call into plain names: `a, b = f(...)`", p.span(target))
    if isinstance(fn, InlineFunction):
        result, _ = p.inline_call(fn, value)
        values = list(result.items) if isinstance(result, ListExpr) else [] if result is None else [result]
    else:
        if value.keywords:
            raise UnsupportedSyntaxError("call kernels with positional arguments", p.span(value))
        args, no_dep = p.exprs.kernel_args(value)
        call, values = p.program.call_kernel_unpacked(p, fn, args, value)
        p.emit(Eval(dataclasses.replace(call, no_dep=no_dep), span=p.span(value)))
    _bind(p, target, names, values, fn.name)
    return True


def unpacked_for_effect(p: ParserState, value: ast.Call) -> bool:
    """``self.<name>(...)`` as a statement, of a program method returning several tensors: the
    call for what it writes (its values are its pl.Out / pl.InOut arguments, as ``a, b = ...``
    would bind them). How a printed program spells an unpacked call. False for other calls."""
    if not _self_call(value):
        return False
    assert isinstance(value.func, ast.Attribute)
    returns = p.program.signatures.get(value.func.attr, ((), ()))[1]
    if len(returns) < 2:
        return False
    args, no_dep = p.exprs.kernel_args(value)
    call, _ = p.program.call_method_unpacked(p, value.func.attr, args, value)
    p.emit(Eval(dataclasses.replace(call, no_dep=no_dep), span=p.span(value)))
    return True


def _self_call(value: ast.Call) -> bool:
    f = value.func
    return isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "self"


def _bind(p: ParserState, target: ast.expr, names: list[ast.Name], values: list, callee: str) -> None:
    if len(values) != len(names):
        raise TypeCheckError(f"`{callee}` returns {len(values)} values, not {len(names)}", p.span(target))
    for n, v in zip(names, values):
        p.env[n.id] = v


def _unpack_values(
    p: ParserState, target: ast.Tuple | ast.List, names: list[ast.Name], value: ast.expr
) -> bool:
    """``a, b = x, y`` with run-time values: every value is read before any name is bound
    (as Python does), so ``a, b = b, a`` swaps. False when the value is not such a tuple."""
    if not isinstance(value, (ast.Tuple, ast.List)) or len(names) != len(target.elts):
        return False
    if len(value.elts) != len(names):
        raise TypeCheckError(
            f"cannot unpack {len(value.elts)} values into {len(names)} names", p.span(target)
        )
    targets = {n.id for n in names}
    reads_target = any(isinstance(n, ast.Name) and n.id in targets for v in value.elts for n in ast.walk(v))
    if not reads_target:
        for n, v in zip(names, value.elts):
            p.assign(ast.copy_location(ast.Assign([n], v), n))
        return True
    temps = [ast.copy_location(ast.Name(p.names.claim(f"{n.id}_new"), ast.Store()), n) for n in names]
    for t, v in zip(temps, value.elts):
        p.assign(ast.copy_location(ast.Assign([t], v), t))
    for n, t in zip(names, temps):
        p.assign(ast.copy_location(ast.Assign([n], ast.Name(t.id, ast.Load())), n))
    return True
