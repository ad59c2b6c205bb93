"""AutoTileMatmulL0: a tile-level matmul of Mat operands too big for L0, in K chunks.

The frontend moves a Mat matmul operand to Left/Right whole (``pl.matmul(q_mat, kv_mat)``).
When that whole operand overflows L0A or L0B (64 KiB each on a2a3), the product is split
along K as the tensor level's matmul is (``_tensor_matmul.py``): each chunk extracted from
the Mat tile into L0, ``matmul`` then ``matmul_acc`` into one Acc tile. Only a move used by
this matmul alone, of a whole Mat tile, in the matmul's block, is taken over; a move that
fits is left as written.
Test: tests/passes/test_auto_tile_matmul_l0.py
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from typing import Any

from pypto.ir.bind import bind_call
from pypto.ir.enums import FunctionType, MemorySpace
from pypto.ir.expr import Call, Var, tile_type
from pypto.ir.names import NameSupply
from pypto.ir.stmt import Assign, Function, Program, Stmt
from pypto.ir.types import TileType
from pypto.ir.visit import nodes_of, rewrite, walk
from pypto.passes._scan import defined_names, with_functions
from pypto.passes._tensor_matmul import Cube, convert_matmul
from pypto.passes.context import PassContext

_MATMULS = ("tile.matmul", "tile.matmul_acc")
_BLOCKS = ("body", "then_body", "else_body")


def auto_tile_matmul_l0(program: Program, ctx: PassContext) -> Program:
    """Every kernel's whole-operand matmuls that overflow L0, split along K."""
    fns = [
        rewrite(fn, _Tiler(fn, ctx).node) if fn.kind is not FunctionType.Orchestration else fn
        for fn in program.functions
    ]
    return with_functions(program, tuple(fns))


class _Tiler:
    def __init__(self, fn: Function, ctx: PassContext) -> None:
        self.p = ctx.platform
        self.calls = {s.var.name: s.value for s in walk(fn.body) if isinstance(s, Assign)}
        self.uses = Counter(v.name for v in nodes_of(fn.body, Var))  # definition + reads
        self.names = NameSupply(defined_names(fn.body) | {q.var.name for q in fn.params})
        self.limits: dict[MemorySpace | None, int] = {
            MemorySpace.Left: self.p.l0a_bytes,
            MemorySpace.Right: self.p.l0b_bytes,
        }

    def node(self, n: Any) -> Any:
        fields = {f: getattr(n, f) for f in _BLOCKS if isinstance(getattr(n, f, None), tuple)}
        changed = {f: new for f, b in fields.items() if (new := self.block(b)) is not None}
        return dataclasses.replace(n, **changed) if changed else None

    def block(self, stmts: tuple[Stmt, ...]) -> tuple[Stmt, ...] | None:
        out: list[Stmt] = []
        for s in stmts:
            sources = self.sources(s, out)
            if sources is None:
                out.append(s)
                continue
            moves = {v.name for v in sources[2:]}
            out = [x for x in out if not (isinstance(x, Assign) and x.var.name in moves)]
            assert isinstance(s, Assign)  # sources() is None for any other statement
            out.extend(self.chunks(s, sources[0], sources[1]))
        return tuple(out) if len(out) != len(stmts) or any(x is not y for x, y in zip(out, stmts)) else None

    def sources(self, s: Stmt, before: list[Stmt]) -> tuple[Var, Var, Var, Var] | None:
        """(lhs Mat tile, rhs Mat tile, lhs move, rhs move) of a matmul to split, else None."""
        if not (isinstance(s, Assign) and isinstance(s.value, Call) and s.value.op in _MATMULS):
            return None
        lhs, rhs = s.value.var_arg("lhs"), s.value.var_arg("rhs")
        a, b = self.whole_mat(lhs), self.whole_mat(rhs)
        here = {x.var.name for x in before if isinstance(x, Assign)}
        if a is None or b is None or not {lhs.name, rhs.name} <= here:
            return None
        over = any(
            tile_type(v).nbytes > self.limits.get(tile_type(v).memory, float("inf")) for v in (lhs, rhs)
        )
        return (a, b, lhs, rhs) if over else None

    def whole_mat(self, v: Any) -> Var | None:
        """The whole Mat tile ``v`` is a move of, when only the matmul reads ``v``."""
        move = self.calls.get(v.name) if isinstance(v, Var) else None
        if not (isinstance(move, Call) and move.op == "tile.move" and self.uses[v.name] == 2):
            return None
        src = move.arg("tile")
        if (
            not (isinstance(src, Var) and isinstance(src.type, TileType))
            or src.type.memory is not MemorySpace.Mat
        ):
            return None
        made = self.calls.get(src.name)
        return None if isinstance(made, Call) and made.op == "tile.slice" else src

    def chunks(self, s: Assign, a: Var, b: Var) -> list[Stmt]:
        """The K chunks of ``s`` (a matmul), its product keeping ``s``'s name."""
        out: list[Stmt] = []

        def emit(base: str, op: str, args: list, **kw: Any) -> Var:
            call, t = bind_call(op, args, kw, span=s.span)
            var = Var(self.names.fresh(base), t, span=s.span)
            out.append(Assign(var, call, span=s.span))
            return var

        c = s.value
        assert isinstance(c, Call)
        cube = Cube(emit, self.p.l0a_bytes, self.p.l0b_bytes, self.p.l0c_bytes, s.span)
        acc = c.var_arg("acc") if c.op == "tile.matmul_acc" else None
        convert_matmul(cube, c, s.var.name, a, b, acc)
        last = out[-1]
        assert isinstance(last, Assign)
        out[-1] = dataclasses.replace(last, var=s.var)
        return out
