"""Binding call arguments to an op's parameters, and typing the resulting ``Call``.

This is the one place where a call is normalised (positional order, defaults filled,
literal scalars given their operand's dtype) and checked against the op table, so the
frontend, the builder and the verifier agree on what a well-formed call is.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping, Sequence

from pypto.errors import SourceSpan, TypeCheckError
from pypto.ir import op_rules as R
from pypto.ir.dtypes import BOOL, DataType, range_error
from pypto.ir.enums import AtomicType, MemorySpace, PadValue, Pipe, SplitMode
from pypto.ir.expr import Call, Const, Expr, ListExpr, Literal, Var, as_expr, type_of
from pypto.ir.op_levels import reject_tile_only
from pypto.ir.ops import OPS, Kind, OpDef, ParamSpec, _accepts
from pypto.ir.types import ArrayType, ScalarType, TensorType, TileType, Type, format_type, is_task_ids

_ENUM_KINDS: dict[Kind, type[enum.Enum]] = {
    Kind.MEMSPACE: MemorySpace,
    Kind.ATOMIC: AtomicType,
    Kind.PAD: PadValue,
    Kind.PIPE: Pipe,
}


def describe(e: Expr) -> str:
    """A short description of an argument for error messages."""
    if isinstance(e, Var):
        return f"`{e.name}` ({format_type(e.type)})"
    if isinstance(e, (Const, Literal)):
        return repr(e.value)
    if isinstance(e, ListExpr):
        return f"a list of {len(e.items)}"
    t = type_of(e)
    return f"an expression of type {format_type(t)}" if t is not None else type(e).__name__


def _is_int_scalar(e: Expr) -> bool:
    t = type_of(e)
    return isinstance(t, ScalarType) and t.dtype.is_integer


def _kind_ok(p: ParamSpec, e: Expr) -> bool:
    k = p.kind
    if k in (Kind.TILE, Kind.TENSOR, Kind.ARRAY):
        return isinstance(e, Var) and _accepts(k, e.type, e)
    if k is Kind.SCALAR:
        return isinstance(type_of(e), ScalarType)
    if k is Kind.SEQ:
        return isinstance(type_of(e), ArrayType)
    if k is Kind.TASKS:
        return isinstance(e, ListExpr) and all(is_task_ids(type_of(i)) for i in e.items)
    if k is Kind.INDICES:
        return isinstance(e, ListExpr) and all(_is_int_scalar(i) for i in e.items)
    if k is Kind.SHAPE:
        return isinstance(e, ListExpr) and all(
            isinstance(i, Const) and type(i.value) is int and i.value > 0 for i in e.items
        )
    if k is Kind.BOOL:
        return isinstance(e, Const) and e.dtype == BOOL
    if k is Kind.INT:
        return isinstance(e, Const) and type(e.value) is int
    if k is Kind.SPLIT:  # upstream spells the mode as a number too
        if isinstance(e, Const) and type(e.value) is int:
            return e.value in (0, 1, 2)
        return isinstance(e, Literal) and isinstance(e.value, SplitMode)
    if not isinstance(e, Literal):
        return False
    if k is Kind.DTYPE:
        return isinstance(e.value, DataType)
    if k is Kind.STR:
        return isinstance(e.value, str)
    return isinstance(e.value, _ENUM_KINDS[k])


def _check_sizes(display: str, p: ParamSpec, e: Expr, span: SourceSpan | None) -> None:
    """A shape of compile-time integers with a zero or negative size: say which dim and why."""
    if p.kind is not Kind.SHAPE or not isinstance(e, ListExpr):
        return
    values = [i.value for i in e.items if isinstance(i, Const) and type(i.value) is int]
    if len(values) == len(e.items):
        d = next(d for d, v in enumerate(values) if v <= 0)
        raise TypeCheckError(
            f"{display}: `{p.name}` {values} has size {values[d]} on dim {d}; sizes must be positive", span
        )


def _target_dtype(p: ParamSpec, bound: Mapping[str, Expr]) -> DataType | None:
    src = bound.get(p.dtype_of or "")
    if src is None:
        return None
    if isinstance(src, Literal) and isinstance(src.value, DataType):
        return src.value
    t = type_of(src)
    return t.dtype if isinstance(t, (TileType, TensorType)) else None


def _coerce_scalar(display: str, p: ParamSpec, e: Expr, dtype: DataType | None, span) -> Expr:
    """A literal takes the operand's dtype; a scalar value must already have it."""
    if dtype is None:
        return e
    if isinstance(e, Const):
        problem = range_error(e.value, dtype)
        if problem is not None:
            raise TypeCheckError(f"{display}: `{p.name}` = {problem}", span)
        if dtype.is_float:
            return Const(float(e.value), dtype, span=e.span)
        if dtype == BOOL:
            return Const(bool(e.value), dtype, span=e.span)
        return Const(int(e.value), dtype, span=e.span)
    got = type_of(e)
    if isinstance(got, ScalarType) and got.dtype != dtype:
        raise TypeCheckError(
            f"{display}: scalar `{p.name}` is {got.dtype} but the operand is {dtype} "
            "(no implicit promotion; use pl.cast)",
            span,
        )
    return e


def _collect(op: OpDef, display: str, args: Sequence[Expr], kwargs: Mapping[str, Expr], span):
    positional = [p for p in op.params if not p.kw_only]
    if len(args) > len(positional):
        if op.tile_only:  # pl.row_sum(x, tmp) with x a tensor: the extra argument is the scratch
            reject_tile_only(op, op.tile_only[0], display, span)
        raise TypeCheckError(
            f"{display} takes at most {len(positional)} positional arguments, got {len(args)}", span
        )
    given: dict[str, Expr] = {p.name: a for p, a in zip(positional, args)}
    names = {p.name for p in op.params}
    for key, value in kwargs.items():
        if key not in names:
            reject_tile_only(op, key, display, span)
            raise TypeCheckError(f"{display} has no parameter `{key}` (parameters: {sorted(names)})", span)
        if key in given:
            raise TypeCheckError(f"{display} got `{key}` twice", span)
        given[key] = value
    return given


def bind_call(
    op_name: str,
    args: Sequence[object] = (),
    kwargs: Mapping[str, object] | None = None,
    *,
    span: SourceSpan | None = None,
    display: str | None = None,
) -> tuple[Call, Type]:
    """Normalise and type-check a call of ``op_name``; returns the ``Call`` and its type.

    ``args``/``kwargs`` may hold IR expressions or plain Python values (lists, numbers,
    dtypes, enum members). Raises ``TypeCheckError`` with ``span`` on any mismatch.
    """
    op = OPS[op_name]
    display = display or f"pl.{op_name}"
    given = _collect(
        op,
        display,
        [as_expr(a, span) for a in args],
        {k: as_expr(v, span) for k, v in (kwargs or {}).items()},
        span,
    )
    bound: dict[str, Expr] = {}
    for p in op.params:
        if p.name in given:
            e = given[p.name]
        elif p.required:
            raise TypeCheckError(f"{display} is missing required argument `{p.name}`", span)
        else:
            e = as_expr(p.default, span)
        if not (p.optional and isinstance(e, Literal) and e.value is None) and not _kind_ok(p, e):
            _check_sizes(display, p, e, span)
            raise TypeCheckError(f"{display}: `{p.name}` must be {p.kind.value}, got {describe(e)}", span)
        if p.kind is Kind.SCALAR:
            e = _coerce_scalar(display, p, e, _target_dtype(p, bound), span)
        bound[p.name] = e
    t = op.infer(R.Bound(op_name, display, bound, span))
    return Call(op_name, tuple(bound.values()), t, span=span), t


def check_call(call: Call, display: str | None = None) -> Type:
    """Re-check an existing ``Call`` (as the verifier does) and return its result type."""
    op = OPS.get(call.op)
    if op is None:
        raise TypeCheckError(f"unknown op `{call.op}`", call.span)
    if len(call.args) != len(op.params):
        raise TypeCheckError(
            f"{call.op} needs {len(op.params)} arguments (defaults filled), got {len(call.args)}", call.span
        )
    positional = [a for p, a in zip(op.params, call.args) if not p.kw_only]
    keywords = {p.name: a for p, a in zip(op.params, call.args) if p.kw_only}
    rebound, t = bind_call(call.op, positional, keywords, span=call.span, display=display)
    if rebound.args != call.args:
        raise TypeCheckError(
            f"{call.op}: arguments are not in normal form (a literal has the wrong dtype)", call.span
        )
    if call.type != t:
        raise TypeCheckError(
            f"{call.op}: the call records result type {format_type(call.type)} but its arguments "
            f"give {format_type(t)}",
            call.span,
        )
    return t


def infer_call_type(call: Call) -> Type:
    """The result type the arguments of a well-formed ``Call`` give (computed afresh; the call
    itself records it as ``call.type``)."""
    op = OPS[call.op]
    bound = dict(zip((p.name for p in op.params), call.args))
    return op.infer(R.Bound(call.op, f"pl.{call.op}", bound, call.span))


def with_args(call: Call, args: Sequence[Expr]) -> Call:
    """``call`` with new arguments (same op, same parameter order) and the result type they give."""
    new = dataclasses.replace(call, args=tuple(args))
    return dataclasses.replace(new, type=infer_call_type(new))
