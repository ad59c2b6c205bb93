"""LowerTensorOps: tensor-level ops inside InCore functions become tile ops.

``a[:, k0:k1]`` is a window view (no data moves); ``pl.matmul`` on tensors loads its
operands GM → Mat, moves them to Left/Right and multiplies into Acc, in K chunks sized to
L0A/L0B (``matmul`` then ``matmul_acc``); ``pl.full`` is a filled Vec tile;
elementwise ops (``pl.add``, ``pl.exp``, ``pl.cast`` ...) on tensors load each tensor operand
whole into Vec and become the tile op; ``pl.assemble(target, src, offset, atomic=)`` — and
``dst[r0:r1, :] = src``, ``out[:] = expr``, which the frontend spells as it — stores the
source into the target's window (FIXPIPE from Acc, MTE3 from Vec; a tensor source is
loaded to Vec first). Anything else at tensor level is reported, not guessed.
Tests: tests/passes/test_lower_tensor_ops.py (the pass alone), tests/e2e/test_tensor_ops.py,
tests/e2e/test_cube_kernels.py, tests/e2e/test_split_k.py
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from pypto.errors import CompileError, SourceSpan, TypeCheckError
from pypto.ir.bind import bind_call
from pypto.ir.enums import MemorySpace
from pypto.ir.expr import Call, Expr, ListExpr, Var, as_expr, make_binop
from pypto.ir.names import NameSupply
from pypto.ir.ops import BINARY, UNARY, Kind, get_op
from pypto.ir.stmt import Assign, For, Function, If, Program, Stmt
from pypto.ir.types import TensorType, TileType, is_static
from pypto.passes._scan import defined_names
from pypto.passes.context import PassContext

_MAX_K_CHUNKS = 16
_EXT = ("maximum", "minimum", "maximums", "minimums", "rsqrt", "sin", "cos")
_ELEMENTWISE = frozenset((*BINARY, *(f"{n}s" for n in BINARY), *UNARY, "cast", *_EXT))


@dataclass(frozen=True)
class _View:
    base: Var  # a tensor parameter (or an alias of one)
    offsets: tuple[Expr, ...]
    shape: tuple[int, ...]


class _Lowerer:
    def __init__(self, fn: Function, ctx: PassContext) -> None:
        self.fn, self.ctx = fn, ctx
        self.names = NameSupply(defined_names(fn.body) | {p.var.name for p in fn.params})
        self.views: dict[str, _View] = {}
        self.tiles: dict[str, Var] = {}  # tensor-valued name -> the tile that holds it

    def fresh(self, base: str) -> str:
        return self.names.fresh(base)

    def op(self, out: list[Stmt], base: str, op: str, args: list, span: SourceSpan | None, **kw) -> Var:
        call, t = bind_call(op, args, kw, span=span)
        var = Var(self.fresh(base), t, span=span)
        out.append(Assign(var, call, span=span))
        return var

    def view(self, e: Expr, span: SourceSpan | None) -> _View:
        if isinstance(e, Var) and e.name in self.views:
            return self.views[e.name]
        if isinstance(e, Var) and isinstance(e.type, TensorType):
            return _View(e, tuple(_const(0, span) for _ in e.type.shape), e.type.shape)  # type: ignore[arg-type]
        raise CompileError("expected a tensor (or a slice of one) here", span)

    def computed(self, e: Expr) -> Var | None:
        """The tile holding `e` when it is a value computed in this kernel (a tile, or a
        tensor-level result already lowered to one)."""
        if isinstance(e, Var) and isinstance(e.type, TileType):
            return e
        return self.tiles.get(e.name) if isinstance(e, Var) else None

    def tile_of(self, e: Expr, out: list[Stmt], span: SourceSpan | None) -> Var:
        """`e` as a tile: a computed value as it is, a tensor (or a window of one) loaded to Vec."""
        tile = self.computed(e)
        if tile is not None:
            return tile
        v = self.view(e, span)
        return self.op(out, f"{v.base.name}_ub", "tile.load", [v.base, list(v.offsets), list(v.shape)], span)

    def block(self, body: tuple[Stmt, ...]) -> tuple[Stmt, ...]:
        out: list[Stmt] = []
        for s in body:
            if isinstance(s, For):
                out.append(dataclasses.replace(s, body=self.block(s.body)))
            elif isinstance(s, If):
                out.append(
                    dataclasses.replace(
                        s, then_body=self.block(s.then_body), else_body=self.block(s.else_body)
                    )
                )
            elif isinstance(s, Assign) and isinstance(s.value, Call) and get_op(s.value.op).level == "tensor":
                self.lower(s, out)
            else:
                out.append(s)
        return tuple(out)

    def lower(self, s: Assign, out: list[Stmt]) -> None:
        c = _call_of(s)
        name = c.op.removeprefix("tensor.")
        computed = self.computed(c.arg("x")) if c.op == "tensor.slice" else None
        if computed is not None:  # a window of a value computed here: an on-chip extract
            args = [computed, c.arg("shape"), c.arg("offset")]
            self.tiles[s.var.name] = self.op(out, s.var.name, "tile.slice", args, s.span)
        elif c.op == "tensor.slice":
            v = self.view(c.arg("x"), s.span)
            offs = tuple(make_binop("+", a, b) for a, b in zip(v.offsets, _items(c.arg("offset"))))
            self.views[s.var.name] = _View(v.base, offs, s.var.type.shape)  # type: ignore[attr-defined]
        elif name in _ELEMENTWISE:
            # tensor operands are loaded whole into Vec; values computed here are used as they are
            kinds = [p.kind for p in get_op(c.op).params]
            args = [self.tile_of(a, out, s.span) if k is Kind.TENSOR else a for k, a in zip(kinds, c.args)]
            self.tiles[s.var.name] = self.op(out, s.var.name, f"tile.{name}", args, s.span)
        elif c.op == "tensor.full":
            t = s.var.type
            self.tiles[s.var.name] = self.op(
                out,
                s.var.name,
                "tile.full",
                [list(t.shape), t.dtype, c.arg("value")],  # type: ignore[attr-defined]
                s.span,
            )
        elif c.op == "tensor.matmul":
            self.tiles[s.var.name] = self.matmul(s, out)
        elif c.op == "tensor.assemble":
            self.assemble(s, out)
        else:
            raise CompileError(
                f"tensor-level {c.op.removeprefix('tensor.')} inside a kernel is not supported "
                "yet; write it with tiles (pl.load / pl.store)",
                s.span,
            )

    def assemble(self, s: Assign, out: list[Stmt]) -> None:
        c = _call_of(s)
        tile = self.tile_of(c.arg("src"), out, s.span)
        target = self.view(c.arg("target"), s.span)
        offs = [make_binop("+", a, b) for a, b in zip(target.offsets, _items(c.arg("offset")))]
        call, _ = bind_call("tile.store", [tile, offs, target.base], {"atomic": c.arg("atomic")}, span=s.span)
        out.append(Assign(s.var, call, span=s.span))
        self.views[s.var.name] = _View(target.base, target.offsets, target.shape)

    def matmul(self, s: Assign, out: list[Stmt]) -> Var:
        c = _call_of(s)
        a, b = self.view(c.arg("lhs"), s.span), self.view(c.arg("rhs"), s.span)
        for name, v in (("lhs", a), ("rhs", b)):
            if not is_static(v.shape):
                raise TypeCheckError(
                    f"pl.matmul of tensors needs compile-time shapes, but `{name}` is {list(v.shape)}: "
                    "multiply windows of a pl.dynamic tensor (pl.load, pl.move, pl.matmul on tiles)",
                    s.span,
                )
        a_trans, b_trans = bool(c.arg("a_trans").value), bool(c.arg("b_trans").value)  # type: ignore[attr-defined]
        m, k = a.shape[-2:][::-1] if a_trans else a.shape[-2:]
        n = b.shape[-2] if b_trans else b.shape[-1]
        ba, bb = (v.shape[0] if len(v.shape) == 3 else 1 for v in (a, b))
        batched = 3 in (len(a.shape), len(b.shape))  # pl.batch_matmul on [B, .., ..] tiles
        kt = self.k_chunk(m, k, n, a.base.type.dtype.itemsize, s.span, (ba, bb, max(ba, bb)))  # type: ignore[attr-defined]
        acc = None
        for k0 in range(0, k, kt):
            la = self.operand(out, a, k0, kt, not a_trans, MemorySpace.Left, s.span)  # A is [M, K]
            rb = self.operand(out, b, k0, kt, b_trans, MemorySpace.Right, s.span)  # B is [K, N]
            flags = {"a_trans": a_trans, "b_trans": b_trans}
            if acc is None and batched:
                acc = self.op(out, s.var.name, "tile.batch_matmul", [la, rb], s.span, **flags)
            elif acc is None:
                acc = self.op(
                    out, s.var.name, "tile.matmul", [la, rb], s.span, out_dtype=c.arg("out_dtype"), **flags
                )
            else:
                name = "tile.batch_matmul_acc" if batched else "tile.matmul_acc"
                acc = self.op(out, s.var.name, name, [acc, la, rb], s.span, **flags)
        assert acc is not None, "k >= 1: at least one chunk"
        return acc

    def operand(
        self,
        out: list[Stmt],
        v: _View,
        k0: int,
        kt: int,
        k_is_cols: bool,
        space: MemorySpace,
        span: SourceSpan | None,
    ) -> Var:
        """The [.., kt] (or [kt, ..]) chunk of one operand (of each batch), loaded to Mat and
        moved to `space`."""
        *lead, r0, c0 = v.offsets
        *batch, rows, cols = v.shape
        if k_is_cols:
            offs, shape = [*lead, r0, make_binop("+", c0, _const(k0, span))], [*batch, rows, kt]
        else:
            offs, shape = [*lead, make_binop("+", r0, _const(k0, span)), c0], [*batch, kt, cols]
        mat = self.op(
            out, f"{v.base.name}_mat", "tile.load", [v.base, offs, shape], span, target_memory=MemorySpace.Mat
        )
        return self.op(out, f"{v.base.name}_l0", "tile.move", [mat, space], span)

    def k_chunk(
        self, m: int, k: int, n: int, esize: int, span: SourceSpan | None, batches: tuple = (1, 1, 1)
    ) -> int:
        """The largest K chunk (a multiple of 16 dividing K) whose operands fit L0A and L0B;
        ``batches``: of the left operand, the right one and the result."""
        p = self.ctx.platform
        ba, bb, bc = batches
        if bc * m * n * 4 > p.l0c_bytes:
            shown = f"{bc} x [{m}, {n}]" if bc > 1 else f"[{m}, {n}]"
            raise CompileError(
                f"matmul output {shown} fp32 needs {bc * m * n * 4} B of Acc but L0C holds "
                f"{p.l0c_bytes} B; split M or N across tasks",
                span,
            )
        for kt in range(k, 0, -16):
            if k % kt == 0 and ba * m * kt * esize <= p.l0a_bytes and bb * kt * n * esize <= p.l0b_bytes:
                if k // kt > _MAX_K_CHUNKS:
                    break
                return kt
        raise CompileError(
            f"matmul operands [{m}, {k}] x [{k}, {n}] do not tile onto L0A/L0B "
            f"({p.l0a_bytes} B each) in at most {_MAX_K_CHUNKS} K chunks",
            span,
        )


def _call_of(s: Assign) -> Call:
    assert isinstance(s.value, Call), "block() lowers op calls only"
    return s.value


def _items(e: Expr) -> tuple[Expr, ...]:
    return e.items if isinstance(e, ListExpr) else (e,)


def _const(v: int, span: SourceSpan | None) -> Expr:
    return as_expr(v, span)


def lower_tensor_ops(program: Program, ctx: PassContext) -> Program:
    """Rewrite tensor-level ops of every generated InCore function into tile ops."""
    fns = []
    for fn in program.functions:
        if fn.kind.is_incore and fn.external_source is None:
            fn = dataclasses.replace(fn, body=_Lowerer(fn, ctx).block(fn.body))
        fns.append(fn)
    return dataclasses.replace(program, functions=tuple(fns))
