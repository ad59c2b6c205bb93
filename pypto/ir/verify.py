"""The IR verifier: run it after the frontend and after every pass.

``verify(program)`` raises :class:`pypto.errors.VerifyError` at the first problem, with the
span of the offending node. It checks that

* names are defined before use and defined once per function (SSA), each use repeating
  its definition's type, and loop/branch bodies do not leak names except through
  ``results`` (a ``pl.at`` scope does not hide names);
* every call is of a known op, in normal form, well typed by the op table, and the
  assigned variable's type agrees with the op's result (refinements: memory space when
  the op leaves it open, a memref);
* loop-carried values are consistent: ``init``, iter arg and result share one type, the
  body ends in a ``Yield`` of matching shape and dtype;
* placement: tile/tensor ops of an orchestration function sit inside ``pl.at`` scopes,
  scopes only appear in orchestration functions and do not nest;
* calls between functions match the callee's parameters; ``Return`` ends a function and
  matches its ``return_types``; external functions have no body;
* the pipelining records name real values: a loop's ``staged`` tiles are defined in its
  body, and every name of a kernel's ``pipeline_groups`` is defined in the kernel.
"""

from __future__ import annotations

from collections.abc import Iterable

from pypto.errors import SourceSpan, TypeCheckError, VerifyError
from pypto.ir.bind import check_call
from pypto.ir.enums import Direction, ForKind, FunctionType
from pypto.ir.expr import BinOp, Call, Const, Expr, FuncCall, ListExpr, Literal, UnaryOp, Var, type_of
from pypto.ir.ops import OPS
from pypto.ir.stmt import Assign, Eval, For, Function, If, Program, Return, Scope, Stmt, TaskRegion, Yield
from pypto.ir.types import (
    ScalarType,
    TensorType,
    TileType,
    Type,
    format_type,
    passes_as,
    refines,
    same_shape_dtype,
)


class _Verifier:
    def __init__(self, program: Program, fn: Function) -> None:
        self.program = program
        self.fn = fn
        self.seen: set[str] = set()
        self.in_scope = False
        self.handles: set[str] = set()
        self.stmt_span: SourceSpan | None = None
        self.memrefs: dict[str, tuple[int, SourceSpan | None]] = {}  # name -> (slots, first use)

    def fail(self, message: str, span: SourceSpan | None) -> VerifyError:
        # Builder-made nodes have no spans: fall back to the statement, then the function.
        return VerifyError(f"in function `{self.fn.name}`: {message}", span or self.stmt_span or self.fn.span)

    # --- names and expressions ----------------------------------------------------------------
    def define(self, env: dict[str, Type], var: Var) -> None:
        if var.name in self.seen:
            raise self.fail(f"`{var.name}` is defined twice (IR names are single-assignment)", var.span)
        self.check_type(env, var.type, var.span)
        self.seen.add(var.name)
        env[var.name] = var.type

    def check_type(self, env: dict[str, Type], t: Type, span: SourceSpan | None) -> None:
        if not isinstance(t, TileType) or t.memref is None:
            return
        m = t.memref
        if t.memory is None:
            raise self.fail("a tile bound to a pl.MemRef needs a memory space", span)
        if m.slots < 1:
            raise self.fail(f"pl.MemRef {m.name!r} has {m.slots} slots", span)
        first = self.memrefs.setdefault(m.name, (m.slots, span))
        if first[0] != m.slots:
            where = f" (at {first[1]})" if first[1] is not None else ""
            raise self.fail(
                f"pl.MemRef {m.name!r} is declared with slots={m.slots} here but slots={first[0]} "
                f"earlier{where}; one buffer has one slot count",
                span,
            )
        if m.index is not None:
            self.scalar(env, m.index, "memref slot index")
            if isinstance(m.index, Const) and not 0 <= m.index.value < m.slots:
                raise self.fail(
                    f"slot index {m.index.value} is outside pl.MemRef({m.name!r}, slots={m.slots})", span
                )
        if m.offset is not None and m.size is None:  # (a size alone is a PTOAS region)
            raise self.fail(f"pl.MemRef {m.name!r} needs both an offset and a size", span)
        if m.size is not None and m.size < t.nbytes:
            raise self.fail(f"pl.MemRef {m.name!r} slot is {m.size} B but the tile needs {t.nbytes} B", span)

    def expr(self, env: dict[str, Type], e: Expr) -> None:
        if isinstance(e, Var):
            if e.name not in env:
                raise self.fail(f"`{e.name}` is used before it is defined", e.span)
            if env[e.name] != e.type:
                raise self.fail(
                    f"`{e.name}` is used as {format_type(e.type)} but defined as {format_type(env[e.name])}",
                    e.span,
                )
        elif isinstance(e, (BinOp, UnaryOp)):
            for side in (e.lhs, e.rhs) if isinstance(e, BinOp) else (e.operand,):
                self.scalar(env, side, f"operand of `{e.op}`")
        elif isinstance(e, ListExpr):
            for item in e.items:
                self.expr(env, item)
        elif isinstance(e, (Call, FuncCall)):
            raise self.fail("calls must not nest: bind the inner call to a name first", e.span)
        elif not isinstance(e, (Const, Literal)):
            raise self.fail(f"unknown expression {type(e).__name__}", e.span)

    def scalar(self, env: dict[str, Type], e: Expr, what: str) -> None:
        self.expr(env, e)
        if not isinstance(type_of(e), ScalarType):
            raise self.fail(f"{what} must be a scalar", e.span)

    def call(self, env: dict[str, Type], e: Expr) -> Type:
        """Check the right-hand side of an assignment or an evaluated call."""
        if isinstance(e, Call):
            for a in e.args:
                self.expr(env, a)
            self.placement(e)
            try:
                return check_call(e)
            except TypeCheckError as err:
                raise self.fail(err.message, e.span) from None
        if isinstance(e, FuncCall):
            return self.func_call(env, e)
        self.expr(env, e)
        t = type_of(e)
        if t is None:
            raise self.fail("the value of an assignment must be a scalar, a call or a variable", e.span)
        return t

    def placement(self, e: Call) -> None:
        op = OPS.get(e.op)
        if op is None:
            raise self.fail(f"unknown op `{e.op}`", e.span)
        orchestration = self.fn.kind in (FunctionType.Orchestration, FunctionType.Group)
        incore = self.in_scope or not orchestration
        if op.allowed(incore):
            return
        if not incore:
            raise self.fail(f"Misplaced tensor op `pl.{e.op}`: it should be inside InCore block", e.span)
        raise self.fail(f"`pl.{e.op}` belongs in orchestration code, not in an InCore kernel", e.span)

    def task_deps(self, deps: tuple[str, ...], span) -> None:
        for d in deps:
            if d not in self.handles:
                raise self.fail(
                    f"deps names `{d}`, which is not an earlier `with pl.at(...) as` handle", span
                )

    def func_call(self, env: dict[str, Type], e: FuncCall) -> Type:
        self.task_deps(e.deps, e.span)
        if e.handle is not None:
            self.handles.add(e.handle)
        try:
            callee = self.program.get(e.callee)
        except KeyError:
            raise self.fail(f"call of unknown function `{e.callee}`", e.span) from None
        if len(e.args) != len(callee.params):
            raise self.fail(f"`{e.callee}` takes {len(callee.params)} arguments, got {len(e.args)}", e.span)
        for a, p in zip(e.args, callee.params):
            self.expr(env, a)
            t = type_of(a)
            want = p.var.type
            if not passes_as(t, want):
                raise self.fail(
                    f"argument for `{p.var.name}` of `{e.callee}` is {format_type(t)}, "
                    f"expected {format_type(want)}",
                    e.span,
                )
            if p.direction is not Direction.In and not isinstance(a, Var):
                raise self.fail(f"`{p.var.name}` of `{e.callee}` is written: pass a tensor variable", e.span)
        rets = callee.return_types
        expected = rets[0] if len(rets) == 1 else e.type
        if e.type != expected and not (isinstance(e.type, TensorType) and passes_as(e.type, expected)):
            raise self.fail(
                f"call of `{e.callee}` is typed {format_type(e.type)}, expected {format_type(expected)}",
                e.span,
            )
        return e.type

    # --- statements ----------------------------------------------------------------------------------
    def block(
        self, env: dict[str, Type], body: Iterable[Stmt], carried: int | None = None, top: bool = False
    ) -> tuple | None:
        """Check a body; when ``carried`` is given it must end in a Yield of that many values."""
        stmts = list(body)
        last = stmts[-1] if stmts else None
        for s in stmts:
            if isinstance(s, Yield) and (s is not last or carried is None):
                raise self.fail(
                    "pl.yield_ must be the last statement of a loop or branch that carries values", s.span
                )
            if isinstance(s, Return) and (s is not last or not top):
                raise self.fail("return must be the last statement of the function", s.span)
            self.stmt(env, s)
        if carried:
            if not isinstance(last, Yield) or len(last.values) != carried:
                raise self.fail(
                    f"the body must end with pl.yield_ of {carried} values", last.span if last else None
                )
            return tuple(type_of(v) for v in last.values)
        return None

    def stmt(self, env: dict[str, Type], s: Stmt) -> None:
        self.stmt_span = s.span
        if isinstance(s, Assign):
            t = self.call(env, s.value)
            if not refines(s.var.type, t):
                raise self.fail(
                    f"`{s.var.name}` is declared {format_type(s.var.type)} but the value is {format_type(t)}",
                    s.span,
                )
            self.define(env, s.var)
        elif isinstance(s, Eval):
            if not isinstance(s.value, (Call, FuncCall)):
                raise self.fail("only calls can be evaluated as statements", s.span)
            self.call(env, s.value)
        elif isinstance(s, For):
            self.for_(env, s)
        elif isinstance(s, If):
            self.if_(env, s)
        elif isinstance(s, Scope):
            self.scope(env, s)
        elif isinstance(s, TaskRegion):  # a region of orchestration: its names stay visible
            for inner in s.body:
                self.stmt(env, inner)
        elif isinstance(s, Return):
            self.return_(env, s)
        elif isinstance(s, Yield):
            for v in s.values:
                self.expr(env, v)
        else:
            raise self.fail(f"unknown statement {type(s).__name__}", s.span)

    def for_(self, env: dict[str, Type], s: For) -> None:
        for bound in (s.start, s.stop, s.step):
            self.scalar(env, bound, "a loop bound")
        if (s.stage is not None) != (s.kind is ForKind.pipeline) or (s.stage is not None and s.stage < 1):
            raise self.fail("pl.pipeline needs stage >= 1 and other loops take no stage", s.span)
        if isinstance(s.step, Const) and s.step.value == 0:
            raise self.fail("loop step must not be 0", s.span)
        inner = dict(env)
        for a in s.iter_args:
            self.expr(env, a.init)
            if type_of(a.init) != a.var.type:
                raise self.fail(
                    f"loop-carried `{a.var.name}` is {format_type(a.var.type)} but starts from "
                    f"{format_type(type_of(a.init))}",
                    a.span,
                )
        self.define(inner, s.var)
        for a in s.iter_args:
            self.define(inner, a.var)
        if s.cond is not None:
            self.scalar(inner, s.cond, "a pl.while_ condition")
        before = set(self.seen)
        yields = self.block(inner, s.body, len(s.iter_args) if s.iter_args else None) or ()
        if s.staged is not None:
            if s.kind is not ForKind.pipeline:
                raise self.fail("only a pl.pipeline loop has a plan (staged=)", s.span)
            self.names_defined(s.staged, self.seen - before, "the pl.pipeline plan (staged=)", s.span)
        if len(s.results) != len(s.iter_args):
            raise self.fail("a loop needs one result per loop-carried value", s.span)
        for a, r, y in zip(s.iter_args, s.results, yields):
            if r.type != a.var.type or not _carry_ok(a.var.type, y):
                raise self.fail(f"loop-carried `{a.var.name}` changes type around the loop", s.span)
            self.define(env, r)

    def if_(self, env: dict[str, Type], s: If) -> None:
        self.scalar(env, s.cond, "an if condition")
        n = len(s.results) or None
        then_t = self.block(dict(env), s.then_body, n) or ()
        else_t = self.block(dict(env), s.else_body, n) or ()
        for r, a, b in zip(s.results, then_t, else_t):
            if r.type != a or not _carry_ok(a, b):
                raise self.fail(f"if-result `{r.name}` has different types in the two branches", s.span)
            self.define(env, r)

    def scope(self, env: dict[str, Type], s: Scope) -> None:
        if self.fn.kind not in (FunctionType.Orchestration, FunctionType.Group):
            raise self.fail("pl.at scopes belong in orchestration functions", s.span)
        if self.in_scope:
            raise self.fail("pl.at scopes cannot be nested", s.span)
        self.task_deps(s.deps, s.span)
        self.in_scope = True
        self.block(env, s.body)
        self.in_scope = False
        if s.handle is not None:
            self.handles.add(s.handle)

    def return_(self, env: dict[str, Type], s: Return) -> None:
        for v in s.values:
            self.expr(env, v)
        got = tuple(type_of(v) for v in s.values)
        if got != self.fn.return_types:
            raise self.fail("return values do not match the function's return types", s.span)

    def names_defined(self, names: tuple[str, ...], defined: set[str], what: str, span) -> None:
        missing = [n for n in names if n not in defined]
        if missing:
            raise self.fail(f"{what} names `{missing[0]}`, which is not defined there", span)

    def run(self) -> None:
        env: dict[str, Type] = {}
        for p in self.fn.params:
            self.define(env, p.var)
        if self.fn.external_source is not None and self.fn.body:
            raise self.fail("a function with external_source has no body (write `...`)", self.fn.span)
        self.block(env, self.fn.body, top=True)
        for g in self.fn.pipeline_groups:
            if not self.fn.kind.is_incore:
                raise self.fail("pipeline_groups belong to InCore kernels", g.span)
            for block in g.blocks:
                for c in block:
                    names = c.staged + c.defs + c.hoisted
                    self.names_defined(names, self.seen, f"pipeline group {g.name}", c.span or g.span)
        ends_in_return = bool(self.fn.body) and isinstance(self.fn.body[-1], Return)
        if self.fn.return_types and not ends_in_return and self.fn.external_source is None:
            raise self.fail("the function declares return types but does not end in return", self.fn.span)


def _carry_ok(want: Type, got: Type | None) -> bool:
    if isinstance(want, (TileType, TensorType)):
        return got is not None and type(got) is type(want) and same_shape_dtype(want, got)
    return want == got


def verify(program: Program) -> Program:
    """Check ``program``; returns it unchanged so the call can sit in a pipeline."""
    names: set[str] = set()
    for fn in program.functions:
        if fn.name in names:
            raise VerifyError(f"function `{fn.name}` is defined twice", fn.span)
        names.add(fn.name)
        _Verifier(program, fn).run()
    return program
