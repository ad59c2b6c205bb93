"""Loops, branches and ``pl.at`` scopes, for :class:`~pypto.frontend.function.FunctionParser`.

Two spellings of loop-carried values are accepted:

* implicit, as users write kernels: a name bound before a loop and rebound inside it is
  carried (``acc = pl.matmul_acc(acc, l, r)``); likewise a name rebound in an ``if``;
* explicit, as the printer writes IR: ``for i, (acc,) in pl.range(n, init_values=(a0,)):``
  with the body ending in ``acc_out = pl.yield_(acc_next)``.

Both produce the same IR: ``For.iter_args`` / ``results`` and a trailing ``Yield``.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NamedTuple, TypeGuard

from pypto.errors import (
    MisplacedOpError,
    SourceSpan,
    TypeCheckError,
    UnknownNameError,
    UnsupportedSyntaxError,
)
from pypto.frontend import pipeline_attrs, semantic
from pypto.frontend.bounds import loop_interval
from pypto.frontend.cluster import Optimizations, parse_optimizations
from pypto.frontend.consteval import NOT_CONST
from pypto.frontend.split_aiv import merge_regions
from pypto.ir.enums import ForKind, FunctionType, Level, ScopeMode, SplitMode
from pypto.ir.expr import Call, Const, Expr, FuncCall, Var, type_of, value_type
from pypto.ir.stmt import Assign, Eval, For, If, IterArg, Scope, Stmt, TaskRegion, Yield
from pypto.ir.types import (
    INDEX_TYPE,
    ArrayType,
    ScalarType,
    TensorType,
    TileType,
    Type,
    format_type,
    is_task_ids,
    same_shape_dtype,
)
from pypto.ir.visit import nodes_of
from pypto.language.markers import LoopMarker, ScopeMarker, YieldMarker

if TYPE_CHECKING:
    from pypto.frontend.state import ParserState

Bounds = tuple[Expr, Expr, Expr]
Staged = tuple[str, ...] | None  # a pl.pipeline plan, read back from a dump


def assigned_names(body: list[ast.stmt]) -> list[str]:
    """Names a block (re)binds, in first-binding order; loop variables and ``as`` handles
    are not included (they are not visible after their statement)."""
    found: dict[str, None] = {}

    def targets(t: ast.expr) -> None:
        if isinstance(t, ast.Name):
            found.setdefault(t.id)
        elif isinstance(t, (ast.Tuple, ast.List)):
            for e in t.elts:
                targets(e)
        elif isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name):
            found.setdefault(t.value.id)  # dst[...] = x rebinds dst to the assembled value

    for stmt in body:
        if isinstance(stmt, ast.Assign):
            for t in stmt.targets:
                targets(t)
        elif isinstance(stmt, (ast.AnnAssign, ast.AugAssign)):
            targets(stmt.target)
        elif isinstance(stmt, (ast.For, ast.If, ast.With)):
            for name in assigned_names(stmt.body + getattr(stmt, "orelse", [])):
                found.setdefault(name)
    return list(found)


def _reads(name: str, node: ast.AST) -> bool:
    return any(
        isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load) for n in ast.walk(node)
    )


def _binds(name: str, stmt: ast.stmt) -> bool:
    """``stmt`` is a plain ``name = ...`` at this level (it rebinds ``name`` on every path)."""
    if isinstance(stmt, ast.Assign):
        return any(isinstance(t, ast.Name) and t.id == name for t in stmt.targets)
    return isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.target.id == name


def _first_use(name: str, body: list[ast.stmt]) -> str | None:
    """``"read"`` or ``"bound"``: what ``body`` surely does to ``name`` first (a ``with``
    block runs its body once, in line), or None when neither."""
    for stmt in body:
        if isinstance(stmt, ast.With):
            if any(_reads(name, item) for item in stmt.items):
                return "read"
            first = _first_use(name, stmt.body)
            if first is not None:
                return first
        elif _reads(name, stmt):
            return "read"
        elif _binds(name, stmt):
            return "bound"
    return None


def read_before_bound(name: str, body: list[ast.stmt]) -> bool:
    """A trip of ``body`` may read ``name`` before binding it: the previous trip's value."""
    return _first_use(name, body) == "read"


def read_after(name: str, loop: ast.For, tree: ast.AST) -> bool:
    """Code after ``loop`` may read ``name``'s value from it: later in the source, or a loop
    around it whose next trip reads ``name`` before binding it."""
    parents = {id(c): n for n in ast.walk(tree) for c in ast.iter_child_nodes(n)}
    n = parents.get(id(loop))
    while n is not None:
        if isinstance(n, (ast.For, ast.While)) and read_before_bound(name, n.body):
            return True
        n = parents.get(id(n))
    inside = {id(n) for n in ast.walk(loop)}
    end = (loop.end_lineno or loop.lineno, loop.end_col_offset or 0)
    return any(
        isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)
        and id(n) not in inside and (n.lineno, n.col_offset) >= end
        for n in ast.walk(tree)
    )  # fmt: skip


def name_list(node: ast.expr) -> list[str] | None:
    """The names of ``(a, b, ...)`` / ``[a, b, ...]`` when every element is a plain name."""
    if not isinstance(node, (ast.Tuple, ast.List)):
        return None
    names = [e.id for e in node.elts if isinstance(e, ast.Name)]
    return names if len(names) == len(node.elts) else None


def _carry_compatible(want: Type | None, got: Type | None) -> bool:
    if isinstance(want, (TileType, TensorType)):
        return type(got) is type(want) and same_shape_dtype(want, got)
    return isinstance(want, (ScalarType, ArrayType)) and want == got


class LoopCarry:
    """Values carried around loops and branches (shared by ``for``/``if`` and ``pl.while_``)."""

    def __init__(self, p: ParserState) -> None:
        self.p = p

    def is_yield(self, node: ast.AST | None) -> TypeGuard[ast.Call]:
        return isinstance(node, ast.Call) and isinstance(self.p.folder.fold(node.func), YieldMarker)

    def _yield_assign(self, stmt: ast.stmt) -> tuple[list[str], ast.Call] | None:
        """``a, b = pl.yield_(x, y)`` → (["a", "b"], call)."""
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and self.is_yield(stmt.value):
            t = stmt.targets[0]
            elts = t.elts if isinstance(t, (ast.Tuple, ast.List)) else [t]
            names = [e.id for e in elts if isinstance(e, ast.Name)]
            if len(names) == len(elts):
                return names, stmt.value
        if (
            isinstance(stmt, ast.AnnAssign)
            and isinstance(stmt.target, ast.Name)
            and self.is_yield(stmt.value)
        ):
            return [stmt.target.id], stmt.value
        return None

    def _yield_of(self, stmt: ast.stmt) -> tuple[list[str], ast.Call]:
        """The ``names = pl.yield_(...)`` a caller has already recognised in ``stmt``."""
        tail = self._yield_assign(stmt)
        if tail is None:
            raise UnsupportedSyntaxError("expected `names = pl.yield_(...)` here", self.p.span(stmt))
        return tail

    def _lower_in(self, body: list[Stmt], nodes: list[ast.expr]) -> list[Expr]:
        """Lower expressions with ``body`` as the current block (temporaries land there)."""
        self.p.blocks.append(body)
        try:
            return [self.p.exprs.value(n) for n in nodes]
        finally:
            self.p.blocks.pop()

    def _widened(self, body: list[Stmt], want: list[Type], got: list[Expr], node: ast.AST) -> list[Expr]:
        """Each carried integer scalar whose next value is of an integer dtype it holds every
        value of (an INT64 carry given an INDEX, an INT32 sum widened): converted at the end
        of the trip, losing nothing, as the carry's declared dtype."""
        out = []
        for w, g in zip(want, got):
            t = type_of(g)
            if isinstance(w, ScalarType) and isinstance(t, ScalarType) and semantic.widens(t.dtype, w.dtype):
                self.p.blocks.append(body)
                try:
                    g, _ = self.p.exprs.cast_scalar(g, w.dtype, node)
                finally:
                    self.p.blocks.pop()
            out.append(g)
        return out

    def _check_carry(
        self, names: list[str], want: list[Type | None], got: list[Expr], node: ast.AST
    ) -> list[Type]:
        """``want``, checked to be the types of values whose types ``got`` keeps."""
        for n, w, g in zip(names, want, got):
            if w is None or not _carry_compatible(w, type_of(g)):
                got_t = type_of(g)
                raise TypeCheckError(
                    f"`{n}` is carried around the loop/branch but its type changes: "
                    f"{format_type(w) if w else 'not a value'} before, "
                    f"{format_type(got_t) if got_t else 'not a value'} after",
                    self.p.span(node),
                )
        return [w for w in want if w is not None]

    def _need_values(self, names: list[str], values: list[Expr], node: ast.AST) -> None:
        """Every carried value is a tile, tensor or scalar (``value_type`` holds after this)."""
        for n, v in zip(names, values):
            if type_of(v) is None:
                raise TypeCheckError(
                    f"`{n}` cannot be carried around a loop (it is not a tile, tensor or scalar)",
                    self.p.span(node),
                )

    def _leave(self, saved: dict[str, Any], where: str, loop: bool = True) -> None:
        """Back to the names before the block; one only the block defined is reported where
        used. A tensor version written in a loop (``t2 = pl.store(tile, offs, t)``) names the
        same GM buffer as the tensor it wrote, so after the loop it is that tensor (a branch's
        may not have run: its names stay inside)."""
        outer = {v.name for v in saved.values() if isinstance(v, Var)}
        for name, value in self.p.env.items():
            if name in saved:
                continue
            root = self.p.written.get(value.name) if isinstance(value, Var) else None
            if root is not None and root.name in outer and loop:
                saved[name] = root
            else:
                self.p.inner_defs[name] = where
        self.p.env = saved


class ControlFlow(LoopCarry):
    """``for`` / ``if`` / ``with pl.at`` handling; see the module docstring."""

    in_manual = False  # inside `with pl.manual_scope():`

    # --- for ---------------------------------------------------------------------------------
    def for_(self, node: ast.For) -> None:
        kind, bounds, init_nodes, stage, staged = self._loop_header(node)
        target, iter_names = self._loop_target(node.target, init_nodes)
        saved, saved_ranges = dict(self.p.env), dict(self.p.ctx.ranges)
        loop_var = Var(self.p.names.claim(target), INDEX_TYPE, span=self.p.span(node.target))
        if init_nodes is None:  # implicit: names bound before the loop and rebound inside it
            names = [n for n in assigned_names(node.body) if n in self.p.env and n != target]
            # whose value a later trip or the code after the loop may read (a name rebound
            # afresh in every trip and never read after the loop is not carried: an L0 tile
            # rebound that way has no on-chip copy to keep one buffer around the loop)
            tree = self.p.src.tree
            names = [n for n in names if read_before_bound(n, node.body) or read_after(n, node, tree)]
            inits = [self.p.value_of(n, node) for n in names]
            body_nodes, yield_targets = node.body, names
        else:
            names, inits = iter_names, [self.p.exprs.value(n) for n in init_nodes]
            body_nodes, yield_targets = self._explicit_body(node, target, iter_names)
        self._need_values(names, inits, node)
        iters = [
            Var(self.p.names.claim(n), value_type(i), span=self.p.span(node.target))
            for n, i in zip(names, inits)
        ]
        self.p.env[target] = loop_var
        self.p.env.update(zip(names, iters))
        interval = loop_interval(*bounds)
        if interval is not None:
            self.p.ctx.ranges[loop_var.name] = interval
        body = self.p.block(body_nodes)
        if init_nodes is None:
            yields = [self.p.value_of(n, node) for n in names]
        else:
            yields = self._lower_in(body, self._yield_of(node.body[-1])[1].args)
        yields = self._widened(body, [i.type for i in iters], yields, node)
        self._check_carry(names, [i.type for i in iters], yields, node)
        if init_nodes is not None:
            self._same_tensors(saved, [target, *names], node)
        if iters:
            body.append(Yield(tuple(yields), span=self.p.span(node.body[-1])))
        self._leave(saved, f"the loop at line {node.lineno + self.p.src.line_offset}")
        self.p.ctx.ranges = saved_ranges
        results = [
            Var(self.p.names.claim(n), i.type, span=self.p.span(node)) for n, i in zip(yield_targets, iters)
        ]
        self.p.env.update(zip(yield_targets, results))
        self._same_buffer_results(iters, inits, yields, results)
        carried = tuple(IterArg(v, i, span=v.span) for v, i in zip(iters, inits))
        span = self.p.span(node)
        self.p.emit(
            For(
                loop_var, *bounds, kind, tuple(body), carried, tuple(results), stage, staged=staged, span=span
            )
        )

    def _loop_header(self, node: ast.For) -> tuple[ForKind, Bounds, list | None, int | None, Staged]:
        """``(kind, (start, stop, step), init_values nodes, stage, staged)``."""
        if node.orelse:
            raise UnsupportedSyntaxError(
                "`for ... else` is not supported inside a pypto kernel", self.p.span(node)
            )
        call = node.iter
        marker = self.p.folder.fold(call.func) if isinstance(call, ast.Call) else None
        if not isinstance(call, ast.Call) or not isinstance(marker, LoopMarker):
            raise UnsupportedSyntaxError(
                "kernel loops iterate over pl.range / pl.parallel / pl.pipeline / pl.unroll(...)",
                self.p.span(node.iter),
            )
        bounds, init_nodes, stage, staged = self._loop_args(marker.kind, call)
        return marker.kind, bounds, init_nodes, stage, staged

    def _loop_args(self, kind: ForKind, call: ast.Call) -> tuple[Bounds, list | None, int | None, Staged]:
        name = f"pl.{kind.name}"
        if not 1 <= len(call.args) <= 3:
            raise TypeCheckError(
                f"{name} takes 1 to 3 positional arguments (stop | start, stop[, step])", self.p.span(call)
            )
        values = [self.p.exprs.index(a) for a in call.args]
        start, stop, step = (
            (Const(0), values[0], Const(1))
            if len(values) == 1
            else (values[0], values[1], values[2] if len(values) == 3 else Const(1))
        )
        init_nodes, stage, staged = None, None, None
        for kw in call.keywords:
            if kw.arg == "init_values":
                if not isinstance(kw.value, (ast.Tuple, ast.List)):
                    raise TypeCheckError("init_values must be a tuple of values", self.p.span(kw.value))
                init_nodes = list(kw.value.elts)
            elif kw.arg == "stage" and kind is ForKind.pipeline:
                stage = self.p.folder.fold(kw.value)
                if not isinstance(stage, int) or isinstance(stage, bool) or stage < 1:
                    raise TypeCheckError(
                        "pl.pipeline stage must be a compile-time int >= 1", self.p.span(kw.value)
                    )
            elif kw.arg == "staged" and kind is ForKind.pipeline:  # PlanPipelineLoops' plan, in dumps
                staged = pipeline_attrs.staged(kw.value, self.p.program.ir_form, self.p.span)
            else:
                raise TypeCheckError(f"{name} has no parameter `{kw.arg}`", self.p.span(kw))
        if kind is ForKind.pipeline and stage is None:
            raise TypeCheckError(
                "pl.pipeline needs stage=<depth>, e.g. pl.pipeline(n, stage=2)", self.p.span(call)
            )
        if isinstance(step, Const) and step.value == 0:
            raise TypeCheckError(f"{name} step must not be 0", self.p.span(call))
        if kind is ForKind.unroll and not all(isinstance(v, Const) for v in (start, stop, step)):
            raise TypeCheckError("pl.unroll bounds must be compile-time constants", self.p.span(call))
        return (start, stop, step), init_nodes, stage, staged

    def _loop_target(self, target: ast.expr, init_nodes: list | None) -> tuple[str, list[str]]:
        if isinstance(target, ast.Name) and init_nodes is None:
            return target.id, []
        pair = target.elts if isinstance(target, ast.Tuple) and len(target.elts) == 2 else None
        index = pair[0] if pair is not None and isinstance(pair[0], ast.Name) else None
        names = name_list(pair[1]) if pair is not None else None
        if index is None or names is None or init_nodes is None:
            raise UnsupportedSyntaxError(
                "write `for i in pl.range(...)`, or `for i, (a, b) in pl.range(..., init_values=(a0, b0))`",
                self.p.span(target),
            )
        if len(names) != len(init_nodes):
            raise TypeCheckError(
                f"{len(names)} loop-carried names but {len(init_nodes)} init_values", self.p.span(target)
            )
        return index.id, names

    def _explicit_body(self, node: ast.For, target: str, iter_names: list[str]) -> tuple[list, list[str]]:
        last = self._yield_assign(node.body[-1]) if node.body else None
        if last is None:
            raise UnsupportedSyntaxError(
                "a loop with init_values must end with `x = pl.yield_(...)`",
                self.p.span(node.body[-1] if node.body else node),
            )
        if len(last[0]) != len(iter_names) or len(last[1].args) != len(iter_names):
            raise TypeCheckError(f"pl.yield_ must carry {len(iter_names)} values", self.p.span(node.body[-1]))
        skip = {target, *iter_names}
        rebound = [n for n in assigned_names(node.body[:-1]) if n in self.p.env and n not in skip]
        # a tensor rebound to what a kernel wrote into it is the same tensor: checked after the body
        refused = [n for n in rebound if not self._tensor_in_orchestration(n)]
        if refused:
            raise _carry_it(refused[0], self.p.span(node))
        return node.body[:-1], last[0]

    def _tensor_in_orchestration(self, name: str) -> bool:
        return self.p.kind is FunctionType.Orchestration and isinstance(type_of(self.p.env[name]), TensorType)

    def _same_tensors(self, saved: dict[str, Any], names: list[str], node: ast.For) -> None:
        """Tensors the body rebound (outside ``names``, the carried ones) name the buffer they
        named before the loop: a kernel's write into it (``out, tid = pl.submit(k, ..., out)``)."""
        for name, before in saved.items():
            now = self.p.env.get(name)
            if name in names or now is before or not self._tensor_in_orchestration(name):
                continue
            if self._root(now) != self._root(before):
                raise _carry_it(name, self.p.span(node))

    def _root(self, v: Any) -> Any:
        """The tensor a tensor version names (a store's result, a kernel's write, a loop's
        result carried unchanged): the buffer it was written into."""
        return self.p.written.get(v.name, v) if isinstance(v, Var) else v

    def _same_buffer_results(
        self, iters: list[Var], inits: list[Expr], yields: list[Expr], results: list[Var]
    ) -> None:
        """A tensor carried around a loop whose body only writes into it (each trip yields a
        version of the trip's own tensor) is, after the loop, the tensor it started as."""
        for it, init, y, result in zip(iters, inits, yields, results):
            if isinstance(it.type, TensorType) and self._root(y) == it:
                self.p.written[result.name] = self._root(init)

    # --- if ---------------------------------------------------------------------------------------
    def if_(self, node: ast.If) -> None:
        cond = self.p.folder.fold(node.test)
        if cond is not NOT_CONST:  # a compile-time condition selects one branch, inline
            self._static_branch(node.body if cond else node.orelse)
            return
        test = self.p.exprs.value(node.test)
        if not isinstance(type_of(test), ScalarType):
            raise TypeCheckError(
                f"an if condition must be a scalar, got `{ast.unparse(node.test)}`", self.p.span(node.test)
            )
        saved = dict(self.p.env)
        explicit = bool(node.body) and self._yield_assign(node.body[-1]) is not None
        branches = []
        for stmts in (node.body, node.orelse):
            self.p.env = dict(saved)
            body_nodes = stmts[:-1] if explicit and stmts else stmts
            body = self.p.block(body_nodes)
            branches.append((body, self.p.env, stmts))
        names = self._merge_names(node, saved, branches, explicit)
        values = [self._branch_values(node, names, b, explicit) for b in branches]
        want = self._check_carry(names, [type_of(v) for v in values[0]], values[1], node)
        where = f"an if branch at line {node.lineno + self.p.src.line_offset}"
        for _, env, _ in branches:
            self.p.env = env
            self._leave(dict(saved), where, loop=False)
        self.p.env = saved
        results = [Var(self.p.names.claim(n), t, span=self.p.span(node)) for n, t in zip(names, want)]
        for (body, _, stmts), vals in zip(branches, values):
            if names:
                body.append(Yield(tuple(vals), span=self.p.span(stmts[-1] if stmts else node)))
        self.p.env.update(zip(names, results))
        self.p.emit(
            If(test, tuple(branches[0][0]), tuple(branches[1][0]), tuple(results), span=self.p.span(node))
        )

    def _static_branch(self, stmts: list[ast.stmt]) -> None:
        """The branch a compile-time condition keeps, inline; its closing
        ``names = pl.yield_(values)`` binds the names as the merged if would."""
        tail = self._yield_assign(stmts[-1]) if stmts else None
        for stmt in stmts[:-1] if tail else stmts:
            self.p.stmt(stmt)
        if tail is None:
            return
        names, call = tail
        if len(names) != len(call.args):
            raise TypeCheckError(
                f"pl.yield_ gives {len(call.args)} values for {len(names)} names", self.p.span(stmts[-1])
            )
        for name, arg in zip(names, call.args):
            self.p.env[name] = self.p.exprs.value(arg)

    def _merge_names(self, node: ast.If, saved: dict, branches: list, explicit: bool) -> list[str]:
        if not explicit:
            (_, then_env, _), (_, else_env, _) = branches
            return [
                n
                for n in assigned_names(node.body + node.orelse)
                if n in then_env and n in else_env and then_env[n] is not else_env[n]
            ]
        first, second = (self._yield_assign(s[-1]) if s else None for _, _, s in branches)
        if first is None or second is None or first[0] != second[0]:
            raise UnsupportedSyntaxError(
                "both branches must end with `names = pl.yield_(...)` naming the same results",
                self.p.span(node),
            )
        return first[0]

    def _branch_values(self, node: ast.If, names: list[str], branch: tuple, explicit: bool) -> list[Expr]:
        body, env, stmts = branch
        if explicit:
            call = self._yield_of(stmts[-1])[1]
            self.p.env = env
            return self._lower_in(body, call.args)
        return [self.p.value_of(n, node, env) for n in names]

    # --- with pl.at ------------------------------------------------------------------------------
    def with_(self, node: ast.With) -> None:
        item = node.items[0]
        call = item.context_expr
        marker = self.p.folder.fold(call.func if isinstance(call, ast.Call) else call)
        if len(node.items) != 1 or not isinstance(marker, ScopeMarker) or not isinstance(call, ast.Call):
            raise UnsupportedSyntaxError(
                "`with` is only supported for pl.at(...) inside a kernel", self.p.span(node)
            )
        if marker.dsl_name in ("scope", "manual_scope"):
            self._task_region(node, call, marker.dsl_name == "manual_scope")
            return
        if marker.dsl_name not in ("at", "cluster"):
            raise UnsupportedSyntaxError(
                f"`with pl.{marker.dsl_name}(...)` is not a scope", self.p.span(node)
            )
        cluster = marker.dsl_name == "cluster"
        # OutlineIncoreScopes leaves a cluster scope (pl.cluster, or a pl.at mixing cube and
        # vector work) in a Group function of its own, as dumps print it
        if self.p.kind not in (FunctionType.Orchestration, FunctionType.Group):
            raise MisplacedOpError(
                "pl.at belongs in a @pl.jit (orchestration) body; an InCore kernel already runs on a core",
                self.p.span(node),
            )
        if self.p.ctx.in_scope and self.p.ctx.cluster_ats is not None and not cluster:
            self._at_in_cluster(node, call)
            return
        if self.p.ctx.in_scope:
            raise MisplacedOpError(
                "pl.at scopes cannot be nested (inside pl.cluster a pl.at names the cluster's work)",
                self.p.span(node),
            )
        plain = not call.keywords  # pl.cluster() with no name_hint=, deps=, ...
        if cluster:  # pl.cluster(name_hint=..., deps=[...]): pl.at's level is implied
            call = ast.Call(call.func, [], [*call.keywords, ast.keyword("level", ast.Constant(None))])
        level, name_hint, deps, opts, hints = self._scope_args(call)
        handle = item.optional_vars
        if handle is not None and not isinstance(handle, ast.Name):
            raise UnsupportedSyntaxError("write `with pl.at(...) as name:`", self.p.span(handle))
        self.p.ctx.in_scope = True
        self.p.ctx.cluster_ats = [] if cluster else None
        self.p.ctx.aiv_splits = []
        try:
            body = self.p.block(node.body)
            ats, regions = self.p.ctx.cluster_ats, self.p.ctx.aiv_splits
        finally:
            self.p.ctx.in_scope = False
            self.p.ctx.cluster_ats = self.p.ctx.aiv_splits = None
        if cluster and plain and handle is None and not ats and _one_dispatch(body):
            for stmt in body:  # one whole kernel's blocks: nothing to co-schedule with it
                self.p.emit(stmt)
            return
        if ats and not _explicit_pipes(body):  # pl.at scopes in a cluster: the compiler's pipes
            cluster, opts = False, _one_for_all(ats, self.p.span(node))
        elif ats and any(a.split or a.slots is not None for a in ats):
            raise TypeCheckError(
                "this pl.cluster hands tiles over itself (pl.tpush_* / pl.tpop_*), so its pipes "
                "say how the AIVs share each tile: optimizations= on its pl.at scopes has no meaning",
                self.p.span(node),
            )
        if regions and cluster:
            raise TypeCheckError(
                "this pl.cluster hands tiles over itself (pl.tpush_* / pl.tpop_*), so its pipes say "
                "how the AIVs share each tile: a pl.split_aiv region in it has no meaning",
                regions[0][1],
            )
        opts = opts._replace(split=merge_regions(opts.split, regions, self.p.span(node)))
        name = handle.id if handle is not None else None
        scope = Scope(
            level,
            tuple(body),
            name_hint,
            tuple(deps),
            name,
            cluster=cluster,
            split=opts.split,
            slots=opts.slots,
            early_resolve=hints.early_resolve,
            no_dep=hints.no_dep,
            dep_values=hints.dep_values,
            span=self.p.span(node),
        )
        self.p.emit(scope)
        if name is not None:
            self.p.handles.add(name)
            self.p.env[name] = TaskHandle(name)

    def _at_in_cluster(self, node: ast.With, call: ast.Call) -> None:
        """``with pl.at(level=pl.Level.CORE_GROUP):`` inside ``with pl.cluster():`` names work of
        the cluster's one task: its statements join the cluster's body, each on the core its
        work needs; the values crossing cores get the compiler's pipes (as in a mixed pl.at)."""
        level, hint, deps, opts, hints = self._scope_args(call)
        given = [kw.arg for kw in call.keywords if kw.arg not in ("level", "optimizations")]
        if level is not Level.CORE_GROUP or given or node.items[0].optional_vars is not None:
            raise TypeCheckError(
                "a pl.at inside pl.cluster is part of the cluster's one task: it takes "
                "level=pl.Level.CORE_GROUP (and optimizations=[pl.split(...)]) only; give "
                "name_hint=, deps= and `as` to pl.cluster",
                self.p.span(node),
            )
        ats = self.p.ctx.cluster_ats
        assert ats is not None  # the caller saw a pl.at inside pl.cluster
        ats.append(opts)
        for s in self.p.block(node.body):
            self.p.emit(s)

    def _task_region(self, node: ast.With, call: ast.Call, manual: bool) -> None:
        """``with pl.scope(mode=...):`` / ``with pl.manual_scope():`` in orchestration."""
        args = {k.arg: self.p.folder.fold(k.value) for k in call.keywords}
        if call.args or set(args) - {"mode"} or (manual and args):
            raise TypeCheckError(
                "write pl.scope(mode=pl.ScopeMode.AUTO | MANUAL) or pl.manual_scope()", self.p.span(call)
            )
        mode = args.get("mode", ScopeMode.MANUAL if manual else ScopeMode.AUTO)
        if not isinstance(mode, ScopeMode):
            raise TypeCheckError(f"pl.scope mode must be a pl.ScopeMode, got {mode!r}", self.p.span(call))
        if self.p.kind is not FunctionType.Orchestration or self.p.ctx.in_scope:
            raise MisplacedOpError(
                "a task scope belongs in orchestration code, outside pl.at", self.p.span(node)
            )
        if self.in_manual:
            raise MisplacedOpError(
                "a task scope cannot be nested in a manual one (nothing would be inferred inside it)",
                self.p.span(node),
            )
        outer, self.in_manual = self.in_manual, mode is ScopeMode.MANUAL
        try:
            body = self.p.block(node.body)
        finally:
            self.in_manual = outer
        self.p.emit(TaskRegion(tuple(body), mode is ScopeMode.MANUAL, span=self.p.span(node)))

    def _scope_args(self, call: ast.Call) -> tuple[Level, str | None, list[str], Optimizations, TaskHints]:
        args: dict[str, ast.expr] = dict(zip(("level",), call.args))
        if len(call.args) > 1:
            raise TypeCheckError("pl.at takes level= (and name_hint=, deps=) only", self.p.span(call))
        known = ("level", "name_hint", "deps", "optimizations", *TASK_HINTS)
        for kw in call.keywords:
            if kw.arg not in known or kw.arg in args:
                raise TypeCheckError(
                    f"pl.at has no parameter `{kw.arg}` ({', '.join(known)})", self.p.span(kw)
                )
            args[kw.arg] = kw.value
        opts = parse_optimizations(args.get("optimizations"), self.p.folder.fold, self.p.span)
        level = self.p.folder.fold(args["level"]) if "level" in args else Level.CORE_GROUP
        level = Level.CORE_GROUP if level is None else level
        if not isinstance(level, Level):
            raise TypeCheckError(
                "pl.at level must be a pl.Level, e.g. pl.Level.CORE_GROUP", self.p.span(call)
            )
        hint = name_hint(self.p, args["name_hint"], ast.unparse(call.func)) if "name_hint" in args else None
        names, values = task_deps(self.p, args.get("deps"))
        return level, hint, names, opts, task_hints(self.p, args)._replace(dep_values=values)


def name_hint(p: Any, node: ast.expr, form: str) -> str:
    """A scope's ``name_hint=``: the kernel's name in reports and dumps, any text but a path
    (its files get a plain name derived from it)."""
    hint = p.folder.fold(node)
    if not isinstance(hint, str) or not hint or any(c in hint for c in "/\\\0"):
        raise TypeCheckError(
            f"{form} name_hint names the kernel: a non-empty string without / \\ or NUL, got {hint!r}",
            p.span(node),
        )
    return hint


class TaskHints(NamedTuple):
    """What ``allow_early_resolve=`` and ``no_dep_args=`` say about a task (see ir.stmt.Scope)."""

    early_resolve: bool = False
    no_dep: tuple[Var, ...] = ()
    dep_values: tuple[Expr, ...] = ()  # deps= entries that are TaskId values, not handles
    sync_start: bool = False  # pl.spmd(sync_start=True): every block admitted at once (a hint)


TASK_HINTS = ("allow_early_resolve", "no_dep_args")


def task_hints(p: ParserState, args: Mapping[str, ast.expr]) -> TaskHints:
    """``allow_early_resolve=True`` and ``no_dep_args=[t, ...]`` of a task (pl.at, pl.spmd, or
    an outlined call in a dump): a bool, and tensors of the orchestration function; and
    ``sync_start=`` of a pl.spmd launch (its callers admit the keyword)."""
    early = p.folder.fold(args["allow_early_resolve"]) if "allow_early_resolve" in args else False
    if not isinstance(early, bool):
        raise TypeCheckError(
            "allow_early_resolve= must be True or False", p.span(args["allow_early_resolve"])
        )
    node = args.get("no_dep_args")
    items = node.elts if isinstance(node, (ast.List, ast.Tuple)) else [] if node is None else [node]
    tensors = []
    for item in items:
        v = p.lookup_local(item.id) if isinstance(item, ast.Name) else None
        if not (isinstance(v, Var) and isinstance(v.type, TensorType)):
            raise TypeCheckError(
                f"no_dep_args= lists tensors of this function; `{ast.unparse(item)}` is not one", p.span(item)
            )
        tensors.append(v)
    sync = p.folder.fold(args["sync_start"]) if "sync_start" in args else False
    if not isinstance(sync, bool):
        raise TypeCheckError("sync_start= must be True or False", p.span(args["sync_start"]))
    return TaskHints(early, tuple(tensors), sync_start=sync)


class TaskHandle:
    """What ``with pl.at(...) as tid`` binds ``tid`` to: used as a value (stored in a
    ``pl.array``, passed to a helper, joined by ``task_dummy``) it is that scope's latest task."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name


def task_deps(p: ParserState, node: ast.expr | None) -> tuple[list[str], tuple[Expr, ...]]:
    """``deps=[...]``: (handles of earlier ``with pl.at(...) as h:`` scopes, TaskId values:
    ``pl.TASK_ID`` scalars and arrays). A list comprehension over a compile-time range is
    expanded (``deps=[tids[i] for i in range(4)]``)."""
    names: list[str] = []
    values: list[Expr] = []
    for item, bound in _dep_items(p, node):
        if isinstance(item, ast.Name) and item.id in p.handles and not bound:
            names.append(item.id)
            continue
        saved = dict(p.env)
        p.env.update(bound)
        try:
            v = p.exprs.value(item)
        finally:
            p.env = saved
        if not is_task_ids(type_of(v)):
            raise UnknownNameError(
                f"deps names `{ast.unparse(item)}`, which is neither the handle of an earlier "
                "`with pl.at(...) as <name>:` nor a pl.TASK_ID value",
                p.span(item),
            )
        values.append(v)
    return names, tuple(values)


def _dep_items(p: ParserState, node: ast.expr | None) -> list[tuple[ast.expr, dict[str, Any]]]:
    """The entries of ``deps=``, each with the comprehension variables it is evaluated under."""
    if node is None:
        return []
    if isinstance(node, ast.ListComp) and len(node.generators) == 1 and not node.generators[0].ifs:
        gen = node.generators[0]
        values = p.folder.fold(gen.iter)
        if not isinstance(gen.target, ast.Name) or values is NOT_CONST:
            raise UnsupportedSyntaxError("deps=[... for i in <compile-time range>]", p.span(node))
        return [(node.elt, {gen.target.id: v}) for v in values]
    return [(d, {}) for d in (node.elts if isinstance(node, (ast.List, ast.Tuple)) else [node])]


_PIPE_OPS = ("tile.tpush_to_aiv", "tile.tpush_to_aic", "tile.tpop_from_aic", "tile.tpop_from_aiv")


def _explicit_pipes(body: list[Stmt]) -> bool:
    """Whether a cluster body hands tiles over itself (pl.tpush_* / pl.tpop_*)."""
    return any(c.op in _PIPE_OPS for c in nodes_of(tuple(body), Call))


def _one_for_all(ats: list[Optimizations], span: SourceSpan | None) -> Optimizations:
    """The split mode and ring depth of a cluster's pl.at scopes (they share its AIVs and its
    pipes): one of each for all."""
    splits = {a.split for a in ats if a.split is not None}
    depths = {a.slots for a in ats if a.slots is not None}
    if len(splits) > 1:
        raise TypeCheckError(
            "the pl.at scopes of one pl.cluster share its AIVs: give them one pl.split mode, "
            f"not {sorted(m.name for m in splits)}",
            span,
        )
    if len(depths) > 1:
        raise TypeCheckError(
            "the pl.at scopes of one pl.cluster share its pipes: give them one "
            f"pl.cross_core_slot, not slot_num {sorted(depths)}",
            span,
        )
    return Optimizations(splits.pop() if splits else SplitMode.NONE, depths.pop() if depths else None)


def _carry_it(name: str, span: Any) -> UnsupportedSyntaxError:
    return UnsupportedSyntaxError(
        f"the loop rebinds `{name}`, defined before it; with init_values, carry it explicitly", span
    )


def _one_dispatch(body: list[Stmt]) -> bool:
    """A body that is one call of a whole kernel (``pl.spmd`` of it, or a plain call), after the
    scalars its arguments are converted to."""
    if not body:
        return False
    *before, last = body
    scalars = all(isinstance(s, Assign) and isinstance(s.var.type, ScalarType) for s in before)
    return scalars and isinstance(last, (Eval, Assign)) and isinstance(last.value, FuncCall)
