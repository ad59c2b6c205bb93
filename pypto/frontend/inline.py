"""Calls of ``@pl.jit.inline`` helpers (a mixin of :class:`FunctionParser`).

The helper's body is parsed in the caller, statement by statement, with its parameters
bound to the call's arguments and its own globals/closure for name lookup; spans point at
the helper's lines. Its names stay local: the caller's environment is restored afterwards
and the IR names it introduced are unique in the caller."""

from __future__ import annotations

import ast
from typing import Any

from pypto.errors import TypeCheckError, UnsupportedSyntaxError
from pypto.frontend.consteval import NOT_CONST, Folder
from pypto.frontend.source import KernelSource
from pypto.ir.expr import Expr, type_of
from pypto.ir.types import Type

_MAX_DEPTH = 16


class InlineCalls:
    """Expands ``helper(args...)`` where ``helper`` is a ``@pl.jit.inline`` function."""

    def inline_call(self, helper: Any, node: ast.Call) -> tuple[Expr | None, Type | None]:
        if node.keywords:
            raise UnsupportedSyntaxError(
                "call @pl.jit.inline helpers with positional arguments", self.span(node)
            )
        depth = getattr(self, "_inline_depth", 0)
        if depth >= _MAX_DEPTH:
            raise UnsupportedSyntaxError(
                f"@pl.jit.inline helpers nest deeper than {_MAX_DEPTH} (recursive helper?)", self.span(node)
            )
        args = [self._inline_arg(a) for a in node.args]
        src = KernelSource.from_function(helper.fn)
        fdef = src.tree.body[0]
        assert isinstance(fdef, ast.FunctionDef)
        params = [a.arg for a in fdef.args.args]
        if len(args) != len(params) or fdef.args.vararg or fdef.args.kwonlyargs:
            raise TypeCheckError(
                f"{helper.name} takes {len(params)} positional arguments, got {len(args)}", self.span(node)
            )
        saved = (self.src, self.folder, self.env, self.inner_defs)
        self.src, self.env, self.inner_defs = src, dict(zip(params, args)), {}
        self.folder = Folder(src, self.lookup_local)
        self._inline_depth = depth + 1
        try:
            return self._inline_body(fdef)
        finally:
            self.src, self.folder, self.env, self.inner_defs = saved
            self._inline_depth = depth

    def _inline_arg(self, node: ast.expr) -> Any:
        folded = self.folder.fold(node)
        return folded if folded is not NOT_CONST else self.exprs.value(node)

    def _inline_body(self, fdef: ast.FunctionDef) -> tuple[Expr | None, Type | None]:
        body = [s for s in fdef.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
        ret = body[-1] if body and isinstance(body[-1], ast.Return) else None
        for stmt in body[:-1] if ret else body:
            if isinstance(stmt, ast.Return):
                raise UnsupportedSyntaxError(
                    "`return` must be the last statement of a helper", self.span(stmt)
                )
            self.stmt(stmt)
        if ret is None or ret.value is None:
            return None, None
        value = self.exprs.value(ret.value)
        return value, type_of(value)
