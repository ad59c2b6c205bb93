"""Scalar expressions and names in C++ (Python semantics for ``//`` and ``%``)."""

from __future__ import annotations

import math
import re

from pypto.ir.dtypes import ELEMENT_DTYPES, DataType
from pypto.ir.expr import BinOp, Const, Expr, UnaryOp, Var
from pypto.ir.types import ScalarType, Type

_CPP_BINOP = {
    "+": "+",
    "-": "-",
    "*": "*",
    "/": "/",
    "==": "==",
    "!=": "!=",
    "<": "<",
    "<=": "<=",
    ">": ">",
    ">=": ">=",
    "and": "&&",
    "or": "||",
}

# <pypto/kernel.hpp>'s DType spells each element type as the IR does.
DTYPE_ENUM = {d.name: f"DType::{d.name}" for d in ELEMENT_DTYPES}


def cpp_name(name: str) -> str:
    """A C++ identifier for an IR name (prefixed, so no user name can hit a keyword)."""
    return "v_" + re.sub(r"[^0-9A-Za-z_]", "_", name)


def cpp_scalar_type(t: Type | DataType) -> str:
    dtype = t.dtype if isinstance(t, ScalarType) else t
    assert isinstance(dtype, DataType), t  # a scalar's type, or its dtype
    if dtype.is_float:
        return "double"
    if dtype.name == "BOOL":
        return "bool"
    return "int64_t"


def cpp_const(c: Const) -> str:
    if isinstance(c.value, bool):
        return "true" if c.value else "false"
    if isinstance(c.value, float):
        if math.isnan(c.value):
            return "(0.0 / 0.0)"
        if math.isinf(c.value):
            return "(1.0 / 0.0)" if c.value > 0 else "(-1.0 / 0.0)"
        return repr(c.value)
    return f"int64_t{{{c.value}}}"


def cpp_expr(e: Expr) -> str:
    """The C++ text of a scalar expression."""
    if isinstance(e, Const):
        return cpp_const(e)
    if isinstance(e, Var):
        return cpp_name(e.name)
    if isinstance(e, UnaryOp):
        return f"(!{cpp_expr(e.operand)})" if e.op == "not" else f"(-{cpp_expr(e.operand)})"
    if isinstance(e, BinOp):
        lhs, rhs = cpp_expr(e.lhs), cpp_expr(e.rhs)
        if e.op == "//":
            return f"pypto::floordiv({lhs}, {rhs})"
        if e.op == "%":
            return f"pypto::floormod({lhs}, {rhs})"
        if e.op in ("min", "max"):  # both sides are plain values (no side effects): evaluate twice
            return f"(({lhs}) {'<' if e.op == 'min' else '>'} ({rhs}) ? ({lhs}) : ({rhs}))"
        return f"({lhs} {_CPP_BINOP[e.op]} {rhs})"
    raise TypeError(f"not a scalar expression: {type(e).__name__}")


def c_string(text: str) -> str:
    """A C++ string literal."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
