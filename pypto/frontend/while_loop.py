"""``pl.while_`` loops (a part of the function parser), as upstream PyPTO spells them::

    for (x, acc) in pl.while_(init_values=(x0, acc0)):
        pl.cond(x < n)
        ...
        x_out, acc_out = pl.yield_(x_next, acc_next)

The IR is a ``For`` with ``cond`` set: each trip tests the condition over the carried
values first. Only InCore code may loop on a run-time condition (orchestration is planned
ahead of the run).
"""

from __future__ import annotations

import ast

from pypto.errors import MisplacedOpError, TypeCheckError, UnsupportedSyntaxError
from pypto.frontend.control import LoopCarry, name_list
from pypto.ir.dtypes import BOOL
from pypto.ir.enums import ForKind
from pypto.ir.expr import Const, Var, type_of, value_type
from pypto.ir.stmt import For, IterArg, Yield
from pypto.ir.types import INDEX_TYPE, ScalarType
from pypto.language.markers import CondMarker

_MAX_TRIPS = 2**62  # the loop ends on its condition; this only caps the trip counter


class WhileLoop(LoopCarry):
    """``for (...) in pl.while_(init_values=(...)):`` handling."""

    def while_(self, node: ast.For) -> None:
        if not (self.p.kind.is_incore or self.p.ctx.in_scope):
            raise MisplacedOpError(
                "pl.while_ loops on a run-time condition, so it belongs in InCore code (inside pl.at)",
                self.p.span(node),
            )
        names, init_nodes = self._while_header(node)
        cond_node, body_nodes, (targets, yield_call) = self._while_parts(node, len(names))
        saved = dict(self.p.env)
        inits = [self.p.exprs.value(n) for n in init_nodes]
        self._need_values(names, inits, node)
        iters = [
            Var(self.p.names.claim(n), value_type(i), span=self.p.span(node.target))
            for n, i in zip(names, inits)
        ]
        self.p.env.update(zip(names, iters))
        cond = self._while_cond(cond_node)
        body = self.p.block(body_nodes)
        yields = self._lower_in(body, yield_call.args)
        self._check_carry(names, [i.type for i in iters], yields, node)
        body.append(Yield(tuple(yields), span=self.p.span(node.body[-1])))
        self._leave(saved, f"the loop at line {node.lineno + self.p.src.line_offset}")
        counter = Var(self.p.names.claim("while_trip"), INDEX_TYPE, span=self.p.span(node))
        results = [Var(self.p.names.claim(n), i.type, span=self.p.span(node)) for n, i in zip(targets, iters)]
        self.p.env.update(zip(targets, results))
        carried = tuple(IterArg(v, i, span=v.span) for v, i in zip(iters, inits))
        bounds = (Const(0), Const(_MAX_TRIPS), Const(1))
        self.p.emit(
            For(
                counter,
                *bounds,
                ForKind.range,
                tuple(body),
                carried,
                tuple(results),
                cond=cond,
                span=self.p.span(node),
            )
        )

    def _while_header(self, node: ast.For) -> tuple[list[str], list[ast.expr]]:
        call = node.iter
        kw = {k.arg: k.value for k in call.keywords} if isinstance(call, ast.Call) else {}
        init_values = kw.get("init_values")
        if (
            not isinstance(call, ast.Call)
            or call.args
            or set(kw) != {"init_values"}
            or not isinstance(init_values, (ast.Tuple, ast.List))
        ):
            raise TypeCheckError("write pl.while_(init_values=(v0, ...))", self.p.span(call))
        target = node.target
        names = name_list(target) if isinstance(target, ast.Tuple) else None
        if names is None:
            raise UnsupportedSyntaxError(
                "write `for (a, b) in pl.while_(init_values=(a0, b0)):`", self.p.span(target)
            )
        inits = list(init_values.elts)
        if len(names) != len(inits):
            raise TypeCheckError(
                f"{len(names)} loop-carried names but {len(inits)} init_values", self.p.span(target)
            )
        return names, inits

    def _while_parts(self, node: ast.For, n: int):
        first = node.body[0]
        cond = first.value if isinstance(first, ast.Expr) and isinstance(first.value, ast.Call) else None
        if (
            cond is None
            or not isinstance(self.p.folder.fold(cond.func), CondMarker)
            or len(cond.args) != 1
            or cond.keywords
        ):
            raise UnsupportedSyntaxError(
                "a pl.while_ body starts with `pl.cond(condition)`", self.p.span(first)
            )
        last = self._yield_assign(node.body[-1]) if len(node.body) > 1 else None
        if last is None:
            raise UnsupportedSyntaxError(
                "a pl.while_ body ends with `names = pl.yield_(...)`", self.p.span(node.body[-1])
            )
        if len(last[0]) != n or len(last[1].args) != n:
            raise TypeCheckError(f"pl.yield_ must carry {n} values", self.p.span(node.body[-1]))
        return cond.args[0], node.body[1:-1], last

    def _while_cond(self, node: ast.expr):
        scratch: list = []
        self.p.blocks.append(scratch)
        try:
            cond = self.p.exprs.value(node)
        finally:
            self.p.blocks.pop()
        t = type_of(cond)
        if scratch or not isinstance(t, ScalarType):
            raise TypeCheckError(
                f"pl.cond needs a scalar expression of the carried values, got `{ast.unparse(node)}`",
                self.p.span(node),
            )
        if t.dtype != BOOL and not t.dtype.is_integer:
            raise TypeCheckError(
                f"pl.cond needs a bool or integer condition, got {t.dtype}", self.p.span(node)
            )
        return cond
