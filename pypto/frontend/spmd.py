"""``pl.spmd`` scopes (a mixin of :class:`FunctionParser`), in upstream PyPTO's two forms::

    with pl.spmd(n, name_hint=..., deps=[...]) as handle:   # the body reads pl.get_block_idx()
        ...
    for i in pl.spmd(n):                                    # i is the block index
        ...

Either is one InCore kernel dispatched as ``n`` tasks at once, task ``b`` reading ``b`` from
``pl.get_block_idx()``: no block waits for another, so the scheduler spreads them on the cores.
A ``with`` body that is one call of an InCore kernel dispatches that kernel the same way.
"""

from __future__ import annotations

import ast
import dataclasses

from pypto.errors import MisplacedOpError, TypeCheckError, UnsupportedSyntaxError
from pypto.ir.enums import FunctionType, Level
from pypto.ir.expr import BinOp, Call, Const, Expr, FuncCall, Var
from pypto.ir.stmt import MAX_BLOCKS, Assign, Eval, Scope, Stmt
from pypto.ir.types import INDEX_TYPE, DynDim
from pypto.ir.visit import nodes_of
from pypto.language.decorators import JitFunction, KernelFunction

_COUNT_OPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.FloorDiv: "//", ast.Mod: "%"}


class SpmdScopes:
    """``with pl.spmd(n):`` and ``for i in pl.spmd(n):`` handling."""

    def spmd_with(self, node: ast.With) -> None:
        item = node.items[0]
        blocks, name_hint, deps = self._spmd_args(item.context_expr)  # type: ignore[arg-type]
        handle = item.optional_vars
        if handle is not None and not isinstance(handle, ast.Name):
            raise UnsupportedSyntaxError("write `with pl.spmd(n) as name:`", self.span(handle))
        name = handle.id if handle is not None else None
        direct = self._spmd_direct(node, blocks, deps, name)
        if direct is not None:
            self.emit(direct)
        else:
            body = self._spmd_body(node.body, node)
            if not any(
                isinstance(c, Call) and c.op == "tile.get_block_idx" for c in nodes_of(tuple(body), Call)
            ):
                raise TypeCheckError(
                    f"the pl.spmd({blocks}) body never reads pl.get_block_idx(), so every block "
                    "would do the same work: read it to pick the block's data, or use pl.at",
                    self.span(node),
                )
            self.emit(
                Scope(
                    Level.CORE_GROUP, tuple(body), name_hint, tuple(deps), name, blocks, span=self.span(node)
                )
            )
        if name is not None:
            self.handles.add(name)

    def spmd_for(self, node: ast.For) -> None:
        if node.orelse:
            raise UnsupportedSyntaxError(
                "`for ... else` is not supported inside a pypto kernel", self.span(node)
            )
        if not isinstance(node.target, ast.Name):
            raise UnsupportedSyntaxError("write `for i in pl.spmd(n):` with one name", self.span(node.target))
        blocks, name_hint, deps = self._spmd_args(node.iter)  # type: ignore[arg-type]
        index = Var(self.names.claim(node.target.id), INDEX_TYPE, span=self.span(node.target))
        saved = dict(self.env)
        self.env[node.target.id] = index
        try:
            first = Call("tile.get_block_idx", (), span=self.span(node.target))
            body = [Assign(index, first, span=self.span(node.target)), *self._spmd_body(node.body, node)]
        finally:
            self.env = saved
        self.emit(
            Scope(Level.CORE_GROUP, tuple(body), name_hint, tuple(deps), None, blocks, span=self.span(node))
        )

    def _spmd_body(self, body: list[ast.stmt], node: ast.AST) -> list[Stmt]:
        if self.kind is not FunctionType.Orchestration:
            raise MisplacedOpError(
                "pl.spmd belongs in a @pl.jit (orchestration) body; an InCore kernel already runs on a core",
                self.span(node),
            )
        if self.ctx.in_scope:
            raise MisplacedOpError("pl.spmd cannot be nested in pl.at or pl.spmd", self.span(node))
        self.ctx.in_scope = True
        try:
            return self.block(body)
        finally:
            self.ctx.in_scope = False

    def _spmd_direct(
        self, node: ast.With, blocks: int | Expr, deps: list[str], name: str | None
    ) -> Stmt | None:
        """A body that is one call of an InCore kernel: that kernel, ``blocks`` times."""
        if len(node.body) != 1 or not isinstance(node.body[0], (ast.Assign, ast.AnnAssign, ast.Expr)):
            return None
        value = node.body[0].value
        if not isinstance(value, ast.Call) or not self._is_kernel_call(value):
            return None
        if self.kind is not FunctionType.Orchestration:
            return None  # _spmd_body words the error
        stmts = self.block(node.body)
        call = stmts[-1].value if stmts and isinstance(stmts[-1], (Assign, Eval)) else None
        if not isinstance(call, FuncCall):
            return None
        if call.handle is not None or call.deps:
            raise UnsupportedSyntaxError(
                "give deps= (and `as name`) to pl.spmd, not to the kernel call inside it", self.span(value)
            )
        for s in stmts[:-1]:
            self.emit(s)
        return dataclasses.replace(
            stmts[-1], value=dataclasses.replace(call, deps=tuple(deps), handle=name, blocks=blocks)
        )

    def _is_kernel_call(self, call: ast.Call) -> bool:
        f = call.func
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "self":
            return True
        return isinstance(self.folder.fold(f), (JitFunction, KernelFunction))

    def spmd_blocks(self, node: ast.expr) -> int | Expr:
        """The block count: a compile-time integer, or an expression of ``pl.dynamic`` dims
        (``pl.spmd(M // 16)``) that the launch plan evaluates with each call's sizes."""
        n = self.folder.fold(node)
        if isinstance(n, int) and not isinstance(n, bool) and 1 <= n <= MAX_BLOCKS:
            return n
        dynamic = self._dynamic_count(node) if not isinstance(n, (int, float)) else None
        if dynamic is not None and any(isinstance(v, Var) for v in nodes_of(dynamic, Var)):
            return dynamic
        shown = f" = {n!r}" if isinstance(n, (int, float)) else ""
        raise TypeCheckError(
            f"pl.spmd block count must be a compile-time integer in [1, {MAX_BLOCKS}] or an "
            f"expression of pl.dynamic dims, got `{ast.unparse(node)}`{shown}",
            self.span(node),
        )

    def _dynamic_count(self, node: ast.expr) -> Expr | None:
        """``node`` as an index expression over the entry's dynamic dims (None: not one)."""
        n = self.folder.fold(node)
        if isinstance(n, int) and not isinstance(n, bool):
            return Const(n, span=self.span(node))
        if isinstance(n, DynDim):
            if not any(d == n for p in self.params for d in getattr(p.var.type, "shape", ())):
                raise TypeCheckError(
                    f"dynamic dim {n.name} sizes no tensor parameter of this function", self.span(node)
                )
            return Var(n.name, INDEX_TYPE, span=self.span(node))
        if isinstance(node, ast.BinOp) and type(node.op) in _COUNT_OPS:
            lhs, rhs = self._dynamic_count(node.left), self._dynamic_count(node.right)
            if lhs is not None and rhs is not None:
                return BinOp(_COUNT_OPS[type(node.op)], lhs, rhs, span=self.span(node))
        return None

    def _spmd_args(self, call: ast.expr) -> tuple[int | Expr, str | None, list[str]]:
        if not isinstance(call, ast.Call) or len(call.args) != 1:
            raise TypeCheckError("write pl.spmd(n) with the block count n first", self.span(call))
        kw = {}
        for k in call.keywords:
            if k.arg not in ("name_hint", "deps"):
                raise TypeCheckError(f"pl.spmd has no parameter `{k.arg}` (n, name_hint, deps)", self.span(k))
            kw[k.arg] = k.value
        n = self.spmd_blocks(call.args[0])
        hint = self.folder.fold(kw["name_hint"]) if "name_hint" in kw else None
        if hint is not None and not isinstance(hint, str):
            raise TypeCheckError("pl.spmd name_hint must be a string", self.span(kw["name_hint"]))
        return n, hint, self.task_deps(kw.get("deps"))
