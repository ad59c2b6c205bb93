"""``pl.spmd`` scopes (a part of the function parser), in upstream PyPTO's two forms::

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
from typing import TYPE_CHECKING

from pypto.errors import MisplacedOpError, TypeCheckError, UnsupportedSyntaxError
from pypto.frontend.cluster import Optimizations, parse_optimizations
from pypto.frontend.control import TASK_HINTS, TaskHandle, TaskHints, name_hint, task_deps, task_hints
from pypto.ir.bind import bind_call
from pypto.ir.enums import FunctionType, Level
from pypto.ir.expr import BinOp, Call, Const, Expr, FuncCall, Var
from pypto.ir.stmt import MAX_BLOCKS, Assign, Eval, Scope, Stmt
from pypto.ir.types import INDEX_TYPE, DynDim
from pypto.ir.visit import nodes_of
from pypto.language.decorators import JitFunction, KernelFunction

if TYPE_CHECKING:
    from pypto.frontend.state import ParserState

_COUNT_OPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.FloorDiv: "//", ast.Mod: "%"}


class SpmdScopes:
    """``with pl.spmd(n):`` and ``for i in pl.spmd(n):`` handling."""

    def __init__(self, p: ParserState) -> None:
        self.p = p

    def spmd_with(self, node: ast.With) -> None:
        item = node.items[0]
        blocks, name_hint, deps, hints, opts = self._spmd_args(item.context_expr)
        handle = item.optional_vars
        if handle is not None and not isinstance(handle, ast.Name):
            raise UnsupportedSyntaxError("write `with pl.spmd(n) as name:`", self.p.span(handle))
        name = handle.id if handle is not None else None
        direct = self._spmd_direct(node, blocks, deps, name, hints)
        if direct is not None and opts != Optimizations():
            raise TypeCheckError(
                "optimizations= of pl.spmd applies to the scope it outlines; a pl.spmd body that "
                "calls a kernel has none: give the split to the pl.at inside that kernel",
                self.p.span(item.context_expr),
            )
        if direct is not None:
            self.p.emit(direct)
        else:
            body = self._spmd_body(node.body, node)
            if not any(
                isinstance(c, Call) and c.op == "tile.get_block_idx" for c in nodes_of(tuple(body), Call)
            ):
                raise TypeCheckError(
                    f"the pl.spmd({blocks}) body never reads pl.get_block_idx(), so every block "
                    "would do the same work: read it to pick the block's data, or use pl.at",
                    self.p.span(node),
                )
            self.p.emit(
                Scope(
                    Level.CORE_GROUP,
                    tuple(body),
                    name_hint,
                    tuple(deps),
                    name,
                    blocks,
                    split=opts.split,
                    slots=opts.slots,
                    early_resolve=hints.early_resolve,
                    no_dep=hints.no_dep,
                    dep_values=hints.dep_values,
                    sync_start=hints.sync_start,
                    span=self.p.span(node),
                )
            )
        if name is not None:
            self.p.handles.add(name)
            self.p.env[name] = TaskHandle(name)

    def spmd_for(self, node: ast.For) -> None:
        if node.orelse:
            raise UnsupportedSyntaxError(
                "`for ... else` is not supported inside a pypto kernel", self.p.span(node)
            )
        if not isinstance(node.target, ast.Name):
            raise UnsupportedSyntaxError(
                "write `for i in pl.spmd(n):` with one name", self.p.span(node.target)
            )
        blocks, name_hint, deps, hints, opts = self._spmd_args(node.iter)
        index = Var(self.p.names.claim(node.target.id), INDEX_TYPE, span=self.p.span(node.target))
        saved = dict(self.p.env)
        self.p.env[node.target.id] = index
        try:
            first, _ = bind_call("tile.get_block_idx", [], span=self.p.span(node.target))
            body = [Assign(index, first, span=self.p.span(node.target)), *self._spmd_body(node.body, node)]
        finally:
            self.p.env = saved
        scope = Scope(
            Level.CORE_GROUP,
            tuple(body),
            name_hint,
            tuple(deps),
            None,
            blocks,
            split=opts.split,
            slots=opts.slots,
            span=self.p.span(node),
        )
        self.p.emit(dataclasses.replace(scope, **hints._asdict()))

    def submit(self, target: ast.Tuple | ast.List, value: ast.Call, form: str) -> None:
        """``out, tid = pl.spmd_submit(kernel, *args, core_num=n, deps=[...])`` (and
        ``pl.submit``, one block): upstream's call form of ``with pl.spmd(n, deps=[...]) as
        tid: out = kernel(*args)``, which it is parsed as."""
        span = self.p.span(value)
        names = [t for t in target.elts if isinstance(t, ast.Name)]
        if len(target.elts) != 2 or len(names) != 2 or not value.args:
            raise UnsupportedSyntaxError(f"write `out, tid = pl.{form}(kernel, *args, ...)`", span)
        kw = {k.arg: k for k in value.keywords}
        known = (*(("core_num",) if form == "spmd_submit" else ()), "deps", "sync_start", *TASK_HINTS)
        for k in value.keywords:
            if k.arg not in known:
                raise TypeCheckError(
                    f"pl.{form} has no parameter `{k.arg}` ({', '.join(known)})", self.p.span(k)
                )
        if form == "spmd_submit" and "core_num" not in kw:
            raise TypeCheckError("pl.spmd_submit needs core_num=, the block count", span)
        count = kw["core_num"].value if "core_num" in kw else ast.copy_location(ast.Constant(1), value)
        hints = ("deps", "sync_start", *TASK_HINTS)
        scope = ast.Call(value.func, [count], [k for k in value.keywords if k.arg in hints])
        call = ast.Call(value.args[0], value.args[1:], [])
        out = ast.Name(names[0].id, ast.Store())
        body: list[ast.stmt] = [ast.Assign([out], call)]
        node = ast.With([ast.withitem(scope, ast.Name(names[1].id, ast.Store()))], body)
        for n in (scope, call, out, *body, node):
            ast.copy_location(n, value)
        if not self._is_kernel_call(call):
            raise TypeCheckError(f"pl.{form} launches a kernel: its first argument must be one", span)
        self.spmd_with(node)

    def _spmd_body(self, body: list[ast.stmt], node: ast.AST) -> list[Stmt]:
        if self.p.kind is not FunctionType.Orchestration:
            raise MisplacedOpError(
                "pl.spmd belongs in a @pl.jit (orchestration) body; an InCore kernel already runs on a core",
                self.p.span(node),
            )
        if self.p.ctx.in_scope:
            raise MisplacedOpError("pl.spmd cannot be nested in pl.at or pl.spmd", self.p.span(node))
        self.p.ctx.in_scope = True
        try:
            return self.p.block(body)
        finally:
            self.p.ctx.in_scope = False

    def _spmd_direct(
        self, node: ast.With, blocks: int | Expr, deps: list[str], name: str | None, hints: TaskHints
    ) -> Stmt | None:
        """A body that is one call of an InCore kernel: that kernel, ``blocks`` times."""
        if len(node.body) != 1 or not isinstance(node.body[0], (ast.Assign, ast.AnnAssign, ast.Expr)):
            return None
        value = node.body[0].value
        if not isinstance(value, ast.Call) or not self._is_kernel_call(value):
            return None
        if self.p.kind is not FunctionType.Orchestration:
            return None  # _spmd_body words the error
        stmts = self.p.block(node.body)
        last = stmts[-1] if stmts else None
        call = last.value if isinstance(last, (Assign, Eval)) else None
        if not isinstance(last, (Assign, Eval)) or not isinstance(call, FuncCall):
            return None
        if call.handle is not None or call.deps:
            raise UnsupportedSyntaxError(
                "give deps= (and `as name`) to pl.spmd, not to the kernel call inside it", self.p.span(value)
            )
        for s in stmts[:-1]:
            self.p.emit(s)
        call = dataclasses.replace(call, deps=tuple(deps), handle=name, blocks=blocks)
        return dataclasses.replace(last, value=dataclasses.replace(call, **hints._asdict()))

    def _is_kernel_call(self, call: ast.Call) -> bool:
        f = call.func
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "self":
            return True
        return isinstance(self.p.folder.fold(f), (JitFunction, KernelFunction))

    def _spmd_args(
        self, call: ast.expr
    ) -> tuple[int | Expr, str | None, list[str], TaskHints, Optimizations]:
        """The block count, name_hint=, deps=, task hints and optimizations= (upstream: the
        split and ring depth of the InCore scope it outlines, as pl.at's) of a pl.spmd call."""
        named = [k.value for k in call.keywords if k.arg == "core_num"] if isinstance(call, ast.Call) else []
        if not isinstance(call, ast.Call) or len(call.args) + len(named) != 1:  # core_num: upstream's name
            raise TypeCheckError("write pl.spmd(n) with the block count n first", self.p.span(call))
        kw = {}
        known = ("name_hint", "deps", "optimizations", "sync_start", *TASK_HINTS)
        for k in call.keywords:
            if k.arg == "core_num":
                continue
            if k.arg not in known:
                raise TypeCheckError(
                    f"pl.spmd has no parameter `{k.arg}` (n, {', '.join(known)})", self.p.span(k)
                )
            kw[k.arg] = k.value
        n = spmd_blocks(self.p, (call.args or named)[0])
        hint = name_hint(self.p, kw["name_hint"], "pl.spmd") if "name_hint" in kw else None
        names, values = task_deps(self.p, kw.get("deps"))
        hints = task_hints(self.p, kw)._replace(dep_values=values)
        # one block is admitted at once by any launch: nothing to record
        hints = hints._replace(sync_start=hints.sync_start and not (isinstance(n, int) and n == 1))
        return (
            n,
            hint,
            names,
            hints,
            parse_optimizations(kw.get("optimizations"), self.p.folder.fold, self.p.span),
        )


def spmd_blocks(p: ParserState, node: ast.expr) -> int | Expr:
    """The block count of ``pl.spmd(n)`` / ``pl.submit(blocks=n)``: a compile-time integer,
    or an expression of ``pl.dynamic`` dims (``pl.spmd(M // 16)``) that the launch plan
    evaluates with each call's sizes."""
    n = p.folder.fold(node)
    if isinstance(n, int) and not isinstance(n, bool) and 1 <= n <= MAX_BLOCKS:
        return n
    dynamic = _dynamic_count(p, node) if not isinstance(n, (int, float)) else None
    if dynamic is not None and any(isinstance(v, Var) for v in nodes_of(dynamic, Var)):
        return dynamic
    if not isinstance(n, (int, float)) and p.kind is FunctionType.Orchestration:
        count = p.exprs.index(node)  # a scalar of orchestration code: evaluated per call
        if nodes_of(count, Var):
            return count
    shown = f" = {n!r}" if isinstance(n, (int, float)) else ""
    raise TypeCheckError(
        f"pl.spmd block count must be a compile-time integer in [1, {MAX_BLOCKS}] or a scalar "
        f"of orchestration code, got `{ast.unparse(node)}`{shown}",
        p.span(node),
    )


def _dynamic_count(p: ParserState, node: ast.expr) -> Expr | None:
    """``node`` as an index expression over the entry's dynamic dims (None: not one)."""
    n = p.folder.fold(node)
    if isinstance(n, int) and not isinstance(n, bool):
        return Const(n, span=p.span(node))
    if isinstance(n, DynDim):
        if not any(d == n for prm in p.params for d in getattr(prm.var.type, "shape", ())):
            raise TypeCheckError(
                f"dynamic dim {n.name} sizes no tensor parameter of this function", p.span(node)
            )
        return Var(n.name, INDEX_TYPE, span=p.span(node))
    if isinstance(node, ast.BinOp) and type(node.op) in _COUNT_OPS:
        lhs, rhs = _dynamic_count(p, node.left), _dynamic_count(p, node.right)
        if lhs is not None and rhs is not None:
            return BinOp(_COUNT_OPS[type(node.op)], lhs, rhs, span=p.span(node))
    return None
