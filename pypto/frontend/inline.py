"""Calls of ``@pl.jit.inline`` helpers (a part of :class:`~pypto.frontend.function.FunctionParser`).

The helper's body is parsed in the caller, statement by statement, with its parameters
bound to the call's arguments and its own globals/closure for name lookup; spans point at
the helper's lines. Its names stay local: the caller's environment is restored afterwards
and the IR names it introduced are unique in the caller."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

from pypto.errors import TypeCheckError, UnsupportedSyntaxError
from pypto.frontend.consteval import NOT_CONST, Folder
from pypto.frontend.source import KernelSource
from pypto.ir.expr import Expr, Var, type_of
from pypto.ir.types import ArrayType, Type

if TYPE_CHECKING:
    from pypto.frontend.state import ParserState

_MAX_DEPTH = 16


class InlineCalls:
    """Expands ``helper(args...)`` where ``helper`` is a ``@pl.jit.inline`` function."""

    def __init__(self, p: ParserState) -> None:
        self.p = p
        self._inline_depth = 0

    def inline_call(self, helper: Any, node: ast.Call) -> tuple[Expr | None, Type | None]:
        if node.keywords:
            raise UnsupportedSyntaxError(
                "call @pl.jit.inline helpers with positional arguments", self.p.span(node)
            )
        depth = self._inline_depth
        if depth >= _MAX_DEPTH:
            raise UnsupportedSyntaxError(
                f"@pl.jit.inline helpers nest deeper than {_MAX_DEPTH} (recursive helper?)", self.p.span(node)
            )
        args = [self._inline_arg(a) for a in node.args]
        src = KernelSource.from_function(helper.fn)
        fdef = src.tree.body[0]
        assert isinstance(fdef, ast.FunctionDef)
        params = [a.arg for a in fdef.args.args]
        if len(args) != len(params) or fdef.args.vararg or fdef.args.kwonlyargs:
            raise TypeCheckError(
                f"{helper.name} takes {len(params)} positional arguments, got {len(args)}", self.p.span(node)
            )
        saved = (self.p.src, self.p.folder, self.p.env, self.p.inner_defs)
        self.p.src, self.p.env, self.p.inner_defs = src, dict(zip(params, args)), {}
        self.p.folder = Folder(src, self.p.lookup_local)
        self._inline_depth = depth + 1
        try:
            result = self._inline_body(fdef)
            after = dict(self.p.env)
        finally:
            self.p.src, self.p.folder, self.p.env, self.p.inner_defs = saved
            self._inline_depth = depth
        # A pl.array the helper updates (`tids[0] = tid`) is the caller's array updated, as the
        # helper's way to hand TaskIds back: the caller's name takes the new value.
        for pname, node_arg, arg in zip(params, node.args, args):
            new = after.get(pname)
            array = isinstance(arg, Var) and isinstance(arg.type, ArrayType)
            if array and isinstance(node_arg, ast.Name) and new is not arg:
                self.p.env[node_arg.id] = new
        return result

    def _inline_arg(self, node: ast.expr) -> Any:
        folded = self.p.folder.fold(node)
        return folded if folded is not NOT_CONST else self.p.exprs.value(node)

    def _inline_body(self, fdef: ast.FunctionDef) -> tuple[Expr | None, Type | None]:
        body = [s for s in fdef.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
        ret = body[-1] if body and isinstance(body[-1], ast.Return) else None
        for stmt in body[:-1] if ret else body:
            if isinstance(stmt, ast.Return):
                raise UnsupportedSyntaxError(
                    "`return` must be the last statement of a helper", self.p.span(stmt)
                )
            self.p.stmt(stmt)
        if ret is None or ret.value is None:
            return None, None
        value = self.p.exprs.value(ret.value)
        return value, type_of(value)
