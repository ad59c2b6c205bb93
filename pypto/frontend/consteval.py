"""Compile-time evaluation of kernel expressions.

Module constants, closure values, kernel-local constants and ``pl.*`` objects fold to
Python values (``NT * TR`` → 512, ``pl.Mem.Vec`` → the enum member, ``pl.exp`` → its
marker). Anything involving a kernel variable is ``NOT_CONST`` and is lowered to IR by the
expression layer instead. Only side-effect-free operations are evaluated.
"""

from __future__ import annotations

import ast
import builtins
import operator
import types
from collections.abc import Callable
from typing import Any

from pypto.errors import CompileError, TypeCheckError, UnknownNameError
from pypto.frontend.source import KernelSource
from pypto.ir.expr import Expr, as_expr
from pypto.ir.types import DynDim, MemRef, TensorType, TileType
from pypto.language import annotations as ann
from pypto.language.decorators import HostFunction
from pypto.language.markers import Namespace
from pypto.language.memref import ir_memref


class _NotConst:
    def __repr__(self) -> str:
        return "NOT_CONST"


NOT_CONST: Any = _NotConst()
MISSING: Any = object()

# Builtins a kernel may use on compile-time values (all pure).
_BUILTINS = {n: getattr(builtins, n) for n in ("min", "max", "len", "int", "float", "abs", "bool", "range")}
_PURE_CALLS = {min, max, len, int, float, abs, bool, range, ann.MemRef, ann.TensorView}
_SUBSCRIPTABLE = (
    tuple,
    list,
    dict,
    str,
    ann.TensorSpec,
    ann.TileSpec,
    ann.ScalarSpec,
    ann.ArraySpec,
    ann.DirectionSpec,
    MemRef,
)

_BINOPS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Div: operator.truediv,
    ast.Pow: operator.pow,
    ast.LShift: operator.lshift,
    ast.RShift: operator.rshift,
    ast.BitAnd: operator.and_,
    ast.BitOr: operator.or_,
    ast.BitXor: operator.xor,
}
_CMPOPS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.Is: operator.is_,
    ast.IsNot: operator.is_not,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
}


class Folder:
    """Folds AST expressions to Python values; ``lookup_local`` resolves kernel locals."""

    def __init__(self, src: KernelSource, lookup_local: Callable[[str], Any]) -> None:
        self.src = src
        self.lookup_local = lookup_local

    def resolve_name(self, name: str) -> Any:
        """A name's value: kernel local (a ``Var`` or a constant), closure, global, builtin."""
        value = self.lookup_local(name)
        if value is not MISSING:
            return value
        for scope in (self.src.closure, self.src.globals, _BUILTINS):
            if name in scope:
                return scope[name]
        return MISSING

    def fold(self, node: ast.AST) -> Any:
        """The compile-time value of ``node``, or ``NOT_CONST``."""
        method = getattr(self, f"_fold_{type(node).__name__}", None)
        if method is None:
            return NOT_CONST
        try:
            return method(node)
        except CompileError:
            raise
        except (ArithmeticError, TypeError, ValueError, IndexError, KeyError) as err:
            raise TypeCheckError(
                f"cannot evaluate `{ast.unparse(node)}`: {err}", self.src.span(node)
            ) from None

    def _fold_Constant(self, node: ast.Constant) -> Any:
        return node.value

    def _fold_Name(self, node: ast.Name) -> Any:
        value = self.resolve_name(node.id)
        return NOT_CONST if value is MISSING or isinstance(value, Expr) else value

    def _fold_Attribute(self, node: ast.Attribute) -> Any:
        if isinstance(node.value, ast.Name):
            local = self.lookup_local(node.value.id)
            is_array = isinstance(getattr(local, "type", None), (TensorType, TileType))
            if is_array and node.attr in ("shape", "dtype"):  # static facts of a kernel value
                return getattr(local.type, node.attr)
        base = self.fold(node.value)
        if base is NOT_CONST:
            return NOT_CONST
        try:
            return getattr(base, node.attr)
        except AttributeError:
            raise self.unknown_attribute(node, base) from None

    def unknown_attribute(self, node: ast.Attribute, base: Any) -> UnknownNameError:
        import difflib  # here: only an error needs it, and every first compile imports this module

        names = dir(base)
        close = difflib.get_close_matches(node.attr, [n for n in names if not n.startswith("_")], n=1)
        hint = f" (did you mean `{ast.unparse(node.value)}.{close[0]}`?)" if close else ""
        what = (
            "pypto.language" if getattr(base, "__name__", "") == "pypto.language" else ast.unparse(node.value)
        )
        if isinstance(base, Namespace):
            what = f"pl.{base._prefix}"
        return UnknownNameError(
            f"`{ast.unparse(node)}` is not defined: {what} has no `{node.attr}`{hint}", self.src.span(node)
        )

    def _fold_Tuple(self, node: ast.Tuple) -> Any:
        items = [self.fold(e) for e in node.elts]
        return NOT_CONST if any(i is NOT_CONST for i in items) else tuple(items)

    def _fold_List(self, node: ast.List) -> Any:
        items = [self.fold(e) for e in node.elts]
        return NOT_CONST if any(i is NOT_CONST for i in items) else items

    def _fold_BinOp(self, node: ast.BinOp) -> Any:
        lhs, rhs = self.fold(node.left), self.fold(node.right)
        fn = _BINOPS.get(type(node.op))
        if lhs is NOT_CONST or rhs is NOT_CONST or fn is None or not _plain(lhs) or not _plain(rhs):
            return NOT_CONST
        return fn(lhs, rhs)

    def _fold_UnaryOp(self, node: ast.UnaryOp) -> Any:
        v = self.fold(node.operand)
        if v is NOT_CONST or not _plain(v):
            return NOT_CONST
        ops: dict[type, Callable[[Any], Any]] = {
            ast.USub: operator.neg,
            ast.UAdd: operator.pos,
            ast.Not: operator.not_,
            ast.Invert: operator.inv,
        }
        return ops[type(node.op)](v)

    def _fold_Compare(self, node: ast.Compare) -> Any:
        left = self.fold(node.left)
        rights = [self.fold(c) for c in node.comparators]
        if any(v is NOT_CONST or isinstance(v, DynDim) for v in (left, *rights)):
            return NOT_CONST
        for op, right in zip(node.ops, rights):
            if not _CMPOPS[type(op)](left, right):
                return False
            left = right
        return True

    def _fold_BoolOp(self, node: ast.BoolOp) -> Any:
        values = [self.fold(v) for v in node.values]
        if any(v is NOT_CONST for v in values):
            return NOT_CONST
        return all(values) if isinstance(node.op, ast.And) else any(values)

    def _fold_IfExp(self, node: ast.IfExp) -> Any:
        cond = self.fold(node.test)
        if cond is NOT_CONST:
            return NOT_CONST
        return self.fold(node.body if cond else node.orelse)

    def _fold_Subscript(self, node: ast.Subscript) -> Any:
        base = self.fold(node.value)
        index = self.fold(node.slice)
        if base is NOT_CONST or index is NOT_CONST:
            return NOT_CONST
        if not isinstance(base, _SUBSCRIPTABLE):
            return NOT_CONST
        if isinstance(base, MemRef):  # slot selection: the index becomes an IR expression
            return ir_memref(base).at(as_expr(index))
        return base[index]

    def _fold_Slice(self, node: ast.Slice) -> Any:
        parts = [self.fold(p) if p is not None else None for p in (node.lower, node.upper, node.step)]
        return NOT_CONST if any(p is NOT_CONST for p in parts) else slice(*parts)

    def _fold_Call(self, node: ast.Call) -> Any:
        fn = self.fold(node.func)
        if getattr(fn, "candidates", None) == ("tensor.dim",):  # pl.dim / pl.tensor.dim
            return self._fold_dim(node)
        if fn is NOT_CONST or not (fn in _PURE_CALLS or isinstance(fn, HostFunction)):
            return NOT_CONST
        args = [self.fold(a) for a in node.args]
        if any(k.arg is None for k in node.keywords):  # f(**mapping)
            return NOT_CONST
        kwargs = {str(k.arg): self.fold(k.value) for k in node.keywords}
        if any(a is NOT_CONST for a in args) or any(v is NOT_CONST for v in kwargs.values()):
            return NOT_CONST
        if fn is ann.MemRef and not args and "name" not in kwargs:
            # an unnamed buffer spelled in kernel source: named after that spelling
            kwargs["name"] = f"memref_l{node.lineno + self.src.line_offset}c{node.col_offset}"
        return fn(*args, **kwargs)

    def _fold_dim(self, node: ast.Call) -> Any:
        """``pl.tensor.dim(t, axis)``: shapes are static, so the size is a compile-time int."""
        if len(node.args) != 2 or node.keywords or not isinstance(node.args[0], ast.Name):
            raise TypeCheckError("write pl.dim(tensor, axis)", self.src.span(node))
        t = getattr(self.lookup_local(node.args[0].id), "type", None)
        axis = self.fold(node.args[1])
        if not isinstance(t, TensorType):
            raise TypeCheckError(
                f"pl.tensor.dim needs a tensor, got `{node.args[0].id}`", self.src.span(node)
            )
        if not isinstance(axis, int) or not -len(t.shape) <= axis < len(t.shape):
            raise TypeCheckError(f"pl.tensor.dim: axis {axis!r} is out of range for shape {list(t.shape)}",
                                 self.src.span(node))  # fmt: skip
        return t.shape[axis] if isinstance(t.shape[axis], int) else NOT_CONST  # pl.dynamic: run time


def _plain(value: Any) -> bool:
    """Values arithmetic may fold over: numbers, and tuples/strings for + and *."""
    return isinstance(value, (int, float, bool, tuple, str)) and not isinstance(value, types.ModuleType)
