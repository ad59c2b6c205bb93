"""ExpandPipelineLoops: ``pl.pipeline(start, stop, step, stage=F)`` → replicated range loops.

Consumes the plan PlanPipelineLoops put on each loop (``For.staged``). For each pipeline
loop, innermost first:

* ``stage=1``: the loop becomes a plain ``pl.range`` loop.
* otherwise the body is cloned F times per outer iteration and the outer loop strides by
  ``F * step``; clone ``k`` sees ``i + k * step`` and has its own names, so each clone's tiles
  get their own storage. Loads (and the index arithmetic they need) of every clone are
  moved ahead of all compute in the replicated body, so clone k+1's load overlaps clone k's
  compute. L1 → L0 feeds (a move or extract out of a Mat tile, on MTE1) count as loads.
  A load from a tensor the body also writes stays in place.
* static bounds: the trip count ``n`` is known; ``n % F`` leftover clones follow the loop as
  straight-line code (also loads first). A loop of no trips leaves no copy of its body, and
  the groups the pipeline loops nested in it recorded are dropped with it.
* dynamic bounds: the loop end is computed (``start + (stop - start) // (F*step) * F*step``)
  and a remainder ``pl.range`` loop of the original body runs from there to ``stop``; both
  sit in a branch on the loop running at all (with carried values, the branch yields the
  remainder's results, or the initial values when the loop does not run).

Loop-carried values (``init_values``) chain through the clones: clone k starts from clone
k-1's yielded values. Each expansion of an InCore kernel records a
:class:`~pypto.ir.stmt.PipelineGroup` in the kernel's ``pipeline_groups`` (printed in the
``@pl.function`` decorator): which statements are whose clone, which of them were hoisted,
and each clone's copies of the staged tiles — what AllocateMemoryAddr's capacity gate reads.
Test: tests/passes/test_expand_pipeline_loops.py
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TypeGuard

from pypto._dataclass import dataclass
from pypto.errors import CompileError, SourceSpan
from pypto.ir.enums import ForKind, MemorySpace
from pypto.ir.expr import BinOp, Call, Const, Expr, Var, as_const, make_binop, type_of
from pypto.ir.names import NameSupply
from pypto.ir.stmt import Assign, For, Function, If, PipelineClone, PipelineGroup, Program, Stmt, Yield
from pypto.ir.types import INDEX_TYPE, TensorType, TileType
from pypto.ir.visit import nodes_of, rewrite, walk
from pypto.passes._scan import defined_in_order, defined_names, with_functions
from pypto.passes.context import PassContext


@dataclass(frozen=True)
class _Plan:
    """One planned pl.pipeline loop, read off the loop: depth, constant step, staged tiles."""

    name: str
    depth: int
    step: int
    staged: tuple[str, ...]
    span: SourceSpan | None


def _plan_of(s: For) -> _Plan:
    if s.staged is None or not isinstance(s.step, Const) or s.stage is None:
        raise CompileError(
            f"pl.pipeline loop `{s.var.name}` has no plan (staged=): run PlanPipelineLoops first", s.span
        )
    return _Plan(s.var.name, s.stage, int(s.step.value), s.staged, s.span)


def _subst(node: tuple[Stmt, ...], names: dict[str, str], values: dict[str, Expr]) -> tuple[Stmt, ...]:
    """``node`` with defined names renamed and the given vars replaced (constants folded)."""

    def fix(x):
        if isinstance(x, Var):
            if x.name in values:
                return values[x.name]
            if x.name in names:
                return dataclasses.replace(x, name=names[x.name])
        if isinstance(x, BinOp) and isinstance(x.lhs, Const) and isinstance(x.rhs, Const):
            return make_binop(x.op, x.lhs, x.rhs, x.span)
        return None

    return tuple(rewrite(st, fix) for st in node)


def _written_tensors(body: tuple[Stmt, ...]) -> set[str]:
    out: set[str] = set()
    for call in nodes_of(body, Call):
        if call.op != "tile.load":
            out |= {a.name for a in call.args if isinstance(a, Var) and isinstance(a.type, TensorType)}
    return out


_FEEDS = ("tile.extract", "tile.move")


def _in_mat(v: Var) -> bool:
    return isinstance(v.type, TileType) and v.type.memory is MemorySpace.Mat


def _hoistable(s: Stmt, blocked: set[str], written: set[str]) -> TypeGuard[Assign]:
    """A tile.load from a tensor the body does not write, or scalar index arithmetic, whose
    inputs are all defined before the replicated body (or by hoisted statements)."""
    if not isinstance(s, Assign) or {v.name for v in nodes_of(s.value, Var)} & blocked:
        return False
    if isinstance(s.value, Call):
        src = s.value.args[0] if s.value.args else None
        if s.value.op == "tile.load":
            return isinstance(src, Var) and src.name not in written
        # L1 → L0 feeds (MTE1) are the loads of an inner cube loop: hoisting them double-buffers L0.
        return s.value.op in _FEEDS and isinstance(src, Var) and _in_mat(src)
    return not isinstance(s.var.type, (TileType, TensorType)) and not nodes_of(s.value, Call)


class _Expander:
    def __init__(self, fn: Function) -> None:
        self.fn = fn
        self.groups: list[PipelineGroup] = []
        self.names = NameSupply(defined_names(fn.body) | {p.var.name for p in fn.params})

    def fresh(self, base: str) -> str:
        return self.names.fresh(base)

    def block(self, body: tuple[Stmt, ...]) -> tuple[Stmt, ...]:
        out: list[Stmt] = []
        for s in body:
            if isinstance(s, For):
                nested = len(self.groups)
                s = dataclasses.replace(s, body=self.block(s.body))
                out += self.loop(s, nested) if s.kind is ForKind.pipeline else [s]
            elif isinstance(s, If):
                out.append(
                    dataclasses.replace(
                        s, then_body=self.block(s.then_body), else_body=self.block(s.else_body)
                    )
                )
            else:
                out.append(s)
        return tuple(out)

    # --- one pipeline loop -------------------------------------------------------------------
    def loop(self, s: For, nested: int) -> list[Stmt]:
        """``nested``: how many of ``self.groups`` were there before the loops nested in ``s``
        recorded theirs."""
        plan = _plan_of(s)
        plain = dataclasses.replace(s, kind=ForKind.range, stage=None, staged=None)
        if plan.depth == 1:
            return [plain]
        if all(isinstance(b, Const) for b in (s.start, s.stop)):
            return self.static(plain, plan, nested)
        return self.dynamic(plain, plan)

    def static(self, s: For, plan: _Plan, nested: int) -> list[Stmt]:
        f, step, start = plan.depth, plan.step, int(as_const(s.start).value)
        n = len(range(start, int(as_const(s.stop).value), step))
        main, rest = divmod(n, f)
        out: list[Stmt] = []
        blocks = []
        carried: list[Expr] = [it.init for it in s.iter_args]
        if main:
            loop, clones = self.main_loop(s, plan, Const(start + main * f * step), bool(rest))
            out.append(loop)
            blocks.append(clones)
            carried = list(loop.results)
        if rest:
            base = start + main * f * step
            idx = [Const(base + k * step) for k in range(rest)]
            # With no main loop the first leftover clone is the body's only copy: it keeps the
            # body's names, which the groups of pipeline loops nested in it already name.
            stmts, clones, final = self.replicate(s, plan, idx, carried, keep_first=not main)
            out += stmts
            out += [Assign(r, v, span=s.span) for r, v in zip(s.results, final)]
            blocks.append(clones)
        if not main and not rest:
            # No trips: no copy of the body is left, so neither are the groups of the pipeline
            # loops nested in it (they would name tiles nothing defines).
            del self.groups[nested:]
            out += [Assign(r, it.init, span=s.span) for r, it in zip(s.results, s.iter_args)]
        self.record(plan, blocks)
        return out

    def main_loop(self, s: For, plan: _Plan, stop: Expr, fresh_results: bool) -> tuple[For, tuple]:
        f, step = plan.depth, plan.step
        idx = [s.var if k == 0 else make_binop("+", s.var, Const(k * step)) for k in range(f)]
        carried = [it.var for it in s.iter_args]
        stmts, clones, final = self.replicate(s, plan, idx, carried, keep_first=True)
        if s.iter_args:
            stmts.append(Yield(tuple(final), span=s.span))
        results = s.results
        if fresh_results:
            results = tuple(dataclasses.replace(r, name=self.fresh(r.name)) for r in s.results)
        loop = dataclasses.replace(s, stop=stop, step=Const(f * step), body=tuple(stmts), results=results)
        return loop, clones

    def dynamic(self, s: For, plan: _Plan) -> list[Stmt]:
        span = Const(plan.depth * plan.step)
        full = make_binop("//", make_binop("-", s.stop, s.start), span)
        end_value = make_binop("+", s.start, make_binop("*", full, span))
        # the end has the bounds' integer type: an INT32 trip count (a pl.read of an INT32
        # tensor) keeps INT32, as the loop it ends would have compared against it
        end = Var(self.fresh(f"{s.var.name}_end"), type_of(end_value) or INDEX_TYPE, span=s.span)
        loop, clones = self.main_loop(s, plan, end, bool(s.iter_args))
        rem = self.remainder(s, end, loop.results)
        cond = make_binop(">" if plan.step > 0 else "<", s.stop, s.start)
        body: tuple[Stmt, ...] = (
            Assign(end, end_value, span=s.span),
            loop,
            rem,
        )
        self.record(plan, [clones])
        if not s.iter_args:
            return [If(cond, body, (), span=s.span)]
        # carried values: the branch yields the remainder's results, or the initial values when
        # the loop does not run at all
        inits = tuple(it.init for it in s.iter_args)
        then_body = (*body, Yield(tuple(rem.results), span=s.span))
        return [If(cond, then_body, (Yield(inits, span=s.span),), results=s.results, span=s.span)]

    def remainder(self, s: For, start: Var, inits: tuple[Var, ...]) -> For:
        """The original body from ``start`` to the end, carrying on from ``inits``: fresh
        names throughout (the loop variable, its carried values, what the body defines)."""
        rem_var = dataclasses.replace(s.var, name=self.fresh(f"{s.var.name}_rem"))
        names = {n: self.fresh(n) for n in defined_names(s.body)}
        carried = [dataclasses.replace(it.var, name=self.fresh(it.var.name)) for it in s.iter_args]
        values: dict[str, Expr] = {it.var.name: v for it, v in zip(s.iter_args, carried)}
        values[s.var.name] = rem_var
        iters = tuple(dataclasses.replace(it, var=v, init=i) for it, v, i in zip(s.iter_args, carried, inits))
        results = tuple(dataclasses.replace(r, name=self.fresh(r.name)) for r in s.results)
        body = _subst(s.body, names, values)
        return dataclasses.replace(s, var=rem_var, start=start, body=body, iter_args=iters, results=results)

    def replicate(self, s: For, plan: _Plan, idx: Sequence[Expr], carried: Sequence[Expr], keep_first: bool):
        """The clones of ``s.body`` at the given loop values: (statements with the loads of
        every clone first, the clones' records, the last clone's yielded values)."""
        written = _written_tensors(s.body)
        staged = plan.staged
        heads: list[Stmt] = []
        tails: list[Stmt] = []
        clones: list[PipelineClone] = []
        blocked: set[str] = set()
        for k, value in enumerate(idx):
            body = s.body
            names = {n: self.fresh(n) for n in defined_names(body)} if k or not keep_first else {}
            values = {s.var.name: value} if value is not s.var else {}
            values |= {it.var.name: c for it, c in zip(s.iter_args, carried) if c is not it.var}
            if names or values:
                body = _subst(body, names, values)
            if body and isinstance(body[-1], Yield):
                carried, body = list(body[-1].values), body[:-1]
            hoisted: list[str] = []
            for st in body:
                if _hoistable(st, blocked, written):
                    heads.append(st)
                    hoisted.append(st.var.name)
                else:
                    tails.append(st)
                    blocked |= defined_names((st,))
            mine = tuple(names.get(n, n) for n in staged)
            clones.append(PipelineClone(mine, defined_in_order(body), tuple(hoisted), span=s.span))
        return heads + tails, tuple(clones), carried

    def record(self, plan: _Plan, blocks: list) -> None:
        if blocks and self.fn.kind.is_incore:
            self.groups.append(PipelineGroup(plan.name, plan.depth, tuple(blocks), span=plan.span))


def expand_pipeline_loops(program: Program, ctx: PassContext) -> Program:
    """Replace every pl.pipeline loop by its replicated form (see the module docstring)."""
    fns = []
    for fn in program.functions:
        if fn.external_source is None and any(
            isinstance(n, For) and n.kind is ForKind.pipeline for n in walk(fn.body)
        ):
            ex = _Expander(fn)
            body = ex.block(fn.body)
            fn = dataclasses.replace(fn, body=body, pipeline_groups=fn.pipeline_groups + tuple(ex.groups))
        fns.append(fn)
    return with_functions(program, tuple(fns))
