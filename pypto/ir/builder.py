"""A small builder for IR programs, used by tests and passes.

    b = Builder()
    with b.function("k", FunctionType.InCore):
        a = b.param("a", TensorType((512, 128), FP32))
        out = b.param("out", TensorType((512, 128), FP32), Direction.Out)
        with b.loop("i", 0, 8) as loop:
            t = b.op("tile.load", a, [loop.var * 64, 0], [64, 128])
            b.eval("tile.store", b.op("tile.exp", t), [loop.var * 64, 0], out)
    program = b.program("k")

Calls go through the same binding as the frontend (``pypto.ir.bind``), so built IR equals
what parsing its printed text gives back.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import field
from typing import Any

from pypto._dataclass import dataclass
from pypto.errors import TypeCheckError
from pypto.ir.bind import bind_call
from pypto.ir.enums import Direction, ForKind, FunctionType, Level
from pypto.ir.expr import Expr, FuncCall, Var, as_expr, value_type
from pypto.ir.names import NameSupply
from pypto.ir.stmt import Assign, Eval, For, Function, If, IterArg, Param, Program, Return, Scope, Stmt, Yield
from pypto.ir.types import INDEX_TYPE, Type, VoidType, format_type, refines


@dataclass
class LoopFrame:
    """Handle of a loop under construction: its variable, iter args, and (after) results."""

    var: Var
    iters: tuple[Var, ...]
    results: tuple[Var, ...] = ()


@dataclass
class IfFrame:
    """Handle of an if under construction; use ``then()`` and ``otherwise()`` blocks."""

    builder: Builder
    cond: Expr
    names: tuple[str, ...]
    then_body: list[Stmt] = field(default_factory=list)
    else_body: list[Stmt] = field(default_factory=list)
    results: tuple[Var, ...] = ()

    @contextlib.contextmanager
    def then(self) -> Iterator[None]:
        with self.builder._collect(self.then_body):
            yield

    @contextlib.contextmanager
    def otherwise(self) -> Iterator[None]:
        with self.builder._collect(self.else_body):
            yield


class Builder:
    """Builds functions statement by statement; see the module docstring."""

    def __init__(self) -> None:
        self.functions: list[Function] = []
        self._stack: list[list[Stmt]] = []
        self._params: list[Param] = []
        self._names = NameSupply()

    # --- plumbing ---------------------------------------------------------------------------
    @contextlib.contextmanager
    def _collect(self, target: list[Stmt]) -> Iterator[list[Stmt]]:
        self._stack.append(target)
        try:
            yield target
        finally:
            self._stack.pop()

    def _emit(self, s: Stmt) -> None:
        self._stack[-1].append(s)

    def fresh(self, base: str) -> str:
        """A name not yet used in the current function (``base``, ``base_1``, ...)."""
        return self._names.fresh(base)

    def _new_var(self, name: str | None, base: str, t: Type) -> Var:
        # A requested name that is taken gets a suffix, as a Python rebinding would.
        return Var(self.fresh(name or base), t)

    # --- functions --------------------------------------------------------------------------
    @contextlib.contextmanager
    def function(
        self, name: str, kind: FunctionType = FunctionType.InCore, external_source: str | None = None
    ) -> Iterator[None]:
        """Build one function; its return types come from a trailing ``ret``."""
        body: list[Stmt] = []
        self._params, self._names = [], NameSupply()
        with self._collect(body):
            yield
        rets: tuple[Type, ...] = ()
        if body and isinstance(body[-1], Return):
            rets = tuple(value_type(v) for v in body[-1].values)
        self.functions.append(Function(name, tuple(self._params), kind, tuple(body), rets, external_source))

    def param(self, name: str, t: Type, direction: Direction = Direction.In) -> Var:
        v = self._new_var(name, name, t)
        self._params.append(Param(v, direction))
        return v

    def program(self, name: str) -> Program:
        return Program(name, tuple(self.functions))

    # --- statements ----------------------------------------------------------------------------
    def op(
        self, op_name: str, *args: Any, name: str | None = None, type: Type | None = None, **kwargs: Any
    ) -> Var:
        """``name = pl.<op_name>(*args, **kwargs)``; ``type`` refines the inferred type."""
        call, inferred = bind_call(op_name, args, kwargs)
        declared = type or inferred
        if not refines(declared, inferred):
            raise TypeCheckError(
                f"declared {format_type(declared)} but {op_name} gives {format_type(inferred)}"
            )
        v = self._new_var(name, op_name.split(".")[-1], declared)
        self._emit(Assign(v, call))
        return v

    def eval(self, op_name: str, *args: Any, **kwargs: Any) -> None:
        """``pl.<op_name>(...)`` as a statement (result unused)."""
        call, _ = bind_call(op_name, args, kwargs)
        self._emit(Eval(call))

    def assign(self, name: str, value: Any, type: Type | None = None) -> Var:
        """A scalar (or alias) assignment ``name = value``."""
        e = as_expr(value)
        v = self._new_var(name, name, type or value_type(e))
        self._emit(Assign(v, e))
        return v

    def call_function(self, callee: Function, *args: Any, name: str | None = None) -> Var | None:
        """Call another function of the program; returns its result variable, if any."""
        rets = callee.return_types
        t: Type = rets[0] if len(rets) == 1 else VoidType()
        call = FuncCall(callee.name, tuple(as_expr(a) for a in args), t)
        if isinstance(t, VoidType):
            self._emit(Eval(call))
            return None
        v = self._new_var(name, callee.name, t)
        self._emit(Assign(v, call))
        return v

    def ret(self, *values: Any) -> None:
        self._emit(Return(tuple(as_expr(v) for v in values)))

    def yield_(self, *values: Any) -> None:
        self._emit(Yield(tuple(as_expr(v) for v in values)))

    @contextlib.contextmanager
    def loop(
        self,
        var: str,
        start: Any,
        stop: Any | None = None,
        step: Any = 1,
        *,
        kind: ForKind = ForKind.range,
        stage: int | None = None,
        init: Sequence[Expr] = (),
        names: Sequence[str] = (),
    ) -> Iterator[LoopFrame]:
        """``for var in pl.<kind>(start, stop, step)``; ``init`` makes loop-carried values."""
        if stop is None:
            start, stop = 0, start
        loop_var = self._new_var(var, var, INDEX_TYPE)
        iter_names = list(names) or [f"{getattr(e, 'name', 'carry')}_iter" for e in init]
        iters = tuple(self._new_var(None, n, value_type(e)) for n, e in zip(iter_names, init))
        frame = LoopFrame(loop_var, iters)
        body: list[Stmt] = []
        with self._collect(body):
            yield frame
        frame.results = tuple(self._new_var(None, f"{v.name}_out", v.type) for v in iters)
        iter_args = tuple(IterArg(v, as_expr(e)) for v, e in zip(iters, init))
        self._emit(
            For(
                loop_var,
                as_expr(start),
                as_expr(stop),
                as_expr(step),
                kind,
                tuple(body),
                iter_args,
                frame.results,
                stage,
            )
        )

    @contextlib.contextmanager
    def if_(self, cond: Any, names: Sequence[str] = ()) -> Iterator[IfFrame]:
        """``if cond:`` — fill ``frame.then()`` / ``frame.otherwise()``; ``names`` are results."""
        frame = IfFrame(self, as_expr(cond), tuple(names))
        yield frame
        types: list[Type] = []
        if names:
            last = frame.then_body[-1]
            assert isinstance(last, Yield), "a branch with results must end in yield_"
            types = [value_type(v) for v in last.values]
        frame.results = tuple(self._new_var(None, n, t) for n, t in zip(names, types))
        self._emit(If(frame.cond, tuple(frame.then_body), tuple(frame.else_body), frame.results))

    @contextlib.contextmanager
    def scope(
        self,
        level: Level = Level.CORE_GROUP,
        name_hint: str | None = None,
        deps: Sequence[str] = (),
        handle: str | None = None,
    ) -> Iterator[None]:
        """``with pl.at(level=..., name_hint=..., deps=[...]) as handle:``."""
        body: list[Stmt] = []
        with self._collect(body):
            yield
        self._emit(Scope(level, tuple(body), name_hint, tuple(deps), handle))
