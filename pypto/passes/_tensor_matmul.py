"""``pl.matmul`` / ``pl.matmul_acc`` of tensors as cube tile ops (private to
ConvertTensorToTileOps).

Each operand window is loaded GM → Mat, moved to Left/Right and multiplied into Acc, in K
chunks sized to L0A/L0B: ``matmul`` then ``matmul_acc`` (``matmul_acc`` throughout when the
accumulator comes in); with a batch axis ``batch_matmul`` / ``batch_matmul_acc``. A window
whose M (or N) is short of whole 16 x 16 fractals is loaded into whole ones with its own rows
(columns) valid, so the product is padded the same way; K must be whole fractals.

A product of two tensor windows whose ``[M, N]`` output overflows L0C is tiled along M and N
(:class:`Blocks`): each ``[mt, nt]`` block is its own K walk into one Acc tile, made where the
product is stored and stored before the next block is made, so one block lives in L0C at a
time.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from pypto._dataclass import dataclass
from pypto.errors import CompileError, SourceSpan, TypeCheckError
from pypto.ir.dtypes import BF16, FP16
from pypto.ir.enums import MemorySpace
from pypto.ir.expr import (
    Call,
    Const,
    Expr,
    ListExpr,
    Literal,
    Var,
    as_expr,
    make_binop,
    shaped_type,
    tile_type,
)
from pypto.ir.stmt import Assign, Stmt
from pypto.ir.types import DynDim, TensorType, TileType, is_static
from pypto.ir.visit import nodes_of, walk

_MAX_K_CHUNKS = 16
# M / N blocks times K chunks an oversized product is written out in (each a matmul with its
# loads and moves): past it the kernel would be mostly straight-line cube code.
_MAX_BLOCK_WALK = 256
FRACTAL = 16  # rows and columns of a Left / Right / Acc fractal


@dataclass(frozen=True)
class View:
    """A window of a tensor parameter: ``base[offsets : offsets + shape]``."""

    base: Var
    offsets: tuple[Expr, ...]
    shape: tuple[int | DynDim, ...]  # a window of a pl.dynamic tensor keeps its dim
    valid: Expr | None = None  # pl.slice(..., valid_shape=[r, c]): the part a load reads


# emit(base name, op, args, **keywords) -> the new value (the converter's statement sink)
Emit = Callable[..., Var]


@dataclass(frozen=True)
class Cube:
    """What a matmul conversion needs of its pass: the sink and the L0 capacities."""

    emit: Emit
    l0a: int
    l0b: int
    l0c: int
    span: SourceSpan | None


@dataclass(frozen=True)
class Blocks:
    """A product too large for L0C, as ``[mt, nt]`` blocks made when it is stored
    (:meth:`each`): its operands' windows, ``[M, K, N]`` and the block and K chunk sizes."""

    cube: Cube
    call: Call
    name: str
    a: View
    b: View
    mkn: tuple[int, int, int]
    block: tuple[int, int, int]  # (mt, nt, kt)

    def each(self, store: Callable[[int, int, Var], None]) -> None:
        """Makes each block (row-major) and hands it to ``store`` with its row and column
        offsets, before the next one is made."""
        (m, k, n), (mt, nt, kt) = self.mkn, self.block
        a_trans, b_trans = (bool(self.call.const_arg(f).value) for f in ("a_trans", "b_trans"))
        for i in range(0, m, mt):
            a = _window(self.a, (0, i), (k, mt)) if a_trans else _window(self.a, (i, 0), (mt, k))
            for j in range(0, n, nt):
                b = _window(self.b, (j, 0), (nt, k)) if b_trans else _window(self.b, (0, j), (k, nt))
                store(i, j, _k_walk(self.cube, self.call, self.name, (a, b), (k, kt), None, batched=False))


def convert_matmul(
    cube: Cube, c: Call, name: str, a: View | Var, b: View | Var, acc: Var | None
) -> Var | Blocks:
    """The Acc tile of ``a × b`` (added to ``acc`` when given); an operand is a window of a
    tensor or a Mat tile (a value that crossed from the vector side of a cluster kernel).
    A product of two windows too large for L0C comes back as its :class:`Blocks`."""
    a, b = (_as_view(v) for v in (a, b))
    sa, sb = _static_shape(a, "lhs", cube.span), _static_shape(b, "rhs", cube.span)
    a_trans, b_trans = bool(c.const_arg("a_trans").value), bool(c.const_arg("b_trans").value)
    m, k = sa[-2:][::-1] if a_trans else sa[-2:]
    n = sb[-2] if b_trans else sb[-1]
    ba, bb = (s[0] if len(s) == 3 else 1 for s in (sa, sb))
    batched = 3 in (len(sa), len(sb))  # pl.batch_matmul on [B, .., ..] tiles
    if k % FRACTAL:
        raise CompileError(
            f"matmul operands [{m}, {k}] x [{k}, {n}]: K ({k}) must be a multiple of {FRACTAL}, "
            "whole cube fractals (a short M or N is padded, K is not: pad K with zeros in the "
            "tensors)",
            cube.span,
        )
    esize = shaped_type(a.base).dtype.itemsize
    if m * n * 4 > cube.l0c and acc is None and not batched and _windows(a, b):
        block = _mn_block(cube, m, k, n, esize)
        if block is not None:
            return Blocks(cube, c, name, a, b, (m, k, n), block)
    # M or N short of whole fractals: the window is loaded into whole ones with the real rows /
    # columns valid, and the product is that much taller / wider (fractal_padded)
    pm = fractal_padded(m) if _loaded(a, batched) else m
    pn = fractal_padded(n) if _loaded(b, batched) else n
    kt = _k_chunk(cube, pm, k, pn, esize, (ba, bb, max(ba, bb)))
    return _k_walk(cube, c, name, (a, b), (k, kt), acc, batched, (pm, pn))


def _k_walk(
    cube: Cube,
    c: Call,
    name: str,
    ab: tuple[View, View],
    kk: tuple[int, int],
    acc: Var | None,
    batched: bool,
    sides: tuple[int, int] | None = None,
) -> Var:
    """``a × b`` (added to ``acc`` when given) in K chunks: ``kk`` is (K, the chunk), into one
    Acc tile. ``sides``: its (M, N) when padded past the windows' to whole fractals."""
    (a, b), (k, kt) = ab, kk
    a_trans, b_trans = bool(c.const_arg("a_trans").value), bool(c.const_arg("b_trans").value)
    flags = {"a_trans": a_trans, "b_trans": b_trans}
    for k0 in range(0, k, kt):
        la = _operand(
            cube, a, k0, kt, not a_trans, MemorySpace.Left, sides[0] if sides else None
        )  # A: [M, K]
        rb = _operand(cube, b, k0, kt, b_trans, MemorySpace.Right, sides[1] if sides else None)  # B: [K, N]
        if acc is None and batched:
            acc = cube.emit(name, "tile.batch_matmul", [la, rb], **flags)
        elif acc is None:
            acc = cube.emit(name, "tile.matmul", [la, rb], out_dtype=c.arg("out_dtype"), **flags)
        else:
            op = "tile.batch_matmul_acc" if batched else "tile.matmul_acc"
            acc = cube.emit(name, op, [acc, la, rb], **flags)
    assert acc is not None, "k >= 1: at least one chunk"
    return acc


def _windows(a: View, b: View) -> bool:
    """Both operands windows of tensors, with no valid_shape (which M / N blocks would cut)."""
    return all(isinstance(v.base.type, TensorType) and v.valid is None for v in (a, b))


def _window(v: View, at: tuple[int, int], shape: tuple[int, int]) -> View:
    """The ``shape`` window of ``v`` at ``at`` (rows, columns) from its origin."""
    *lead, r0, c0 = v.offsets
    return View(
        v.base, (*lead, make_binop("+", r0, as_expr(at[0])), make_binop("+", c0, as_expr(at[1]))), shape
    )


def _mn_block(cube: Cube, m: int, k: int, n: int, esize: int) -> tuple[int, int, int] | None:
    """``(mt, nt, kt)``: the ``[mt, nt]`` block of an ``[M, N]`` product that overflows L0C and
    its K chunk. Whole fractals (16) dividing M and N, within L0C, with a K chunk for its
    operands; the largest, then whole rows (each block's store one contiguous window), then the
    widest. None when no block qualifies or the blocks' K walks would be too many to write out."""
    sizes = [
        (mt, nt) for mt in _fractal_divisors(m) for nt in _fractal_divisors(n) if mt * nt * 4 <= cube.l0c
    ]
    for mt, nt in sorted(sizes, key=lambda b: (b[0] * b[1], b[1] == n, b[1]), reverse=True):
        try:
            kt = _k_chunk(cube, mt, k, nt, esize, (1, 1, 1))
        except CompileError:
            continue
        if (m // mt) * (n // nt) * (k // kt) > _MAX_BLOCK_WALK:
            return None
        return mt, nt, kt
    return None


def _fractal_divisors(x: int) -> list[int]:
    return [d for d in range(FRACTAL, x + 1, FRACTAL) if x % d == 0]


def fractal_padded(n: int) -> int:
    """``n`` rows or columns rounded up to whole cube fractals (16)."""
    return -(-n // FRACTAL) * FRACTAL


def _loaded(v: View, batched: bool) -> bool:
    """Whether the operand is a window of a tensor this conversion loads (its M / N side can be
    padded to whole fractals); a batched one keeps its shape (each batch fills whole fractals)."""
    return not batched and not isinstance(v.base.type, TileType)


def _static_shape(v: View, which: str, span: SourceSpan | None) -> tuple[int, ...]:
    if not is_static(v.shape):
        raise TypeCheckError(
            f"pl.matmul of tensors needs compile-time shapes, but `{which}` is {list(v.shape)}: "
            "multiply windows of a pl.dynamic tensor (pl.load, pl.move, pl.matmul on tiles)",
            span,
        )
    return v.shape


def _as_view(v: View | Var) -> View:
    """A Mat tile as the whole-tile view of itself (its chunks are windows of it, not loads)."""
    if isinstance(v, View):
        return v
    t = tile_type(v)
    return View(v, tuple(as_expr(0) for _ in t.shape), tuple(t.shape))


def _operand(
    cube: Cube, v: View, k0: int, kt: int, k_is_cols: bool, space: MemorySpace, side: int | None = None
) -> Var:
    """The [.., kt] (or [kt, ..]) chunk of one operand (of each batch), loaded to Mat and
    moved to ``space`` (a Mat tile's chunk: moved, or extracted when K is chunked). ``side``:
    the chunk's other extent (M or N) when padded past the window's to whole fractals."""
    *lead, r0, c0 = v.offsets
    *batch, rows, cols = v.shape
    if isinstance(v.base.type, TileType):
        if kt == (cols if k_is_cols else rows):
            return cube.emit(f"{v.base.name}_l0", "tile.move", [v.base, space])
        at = (0, k0) if k_is_cols else (k0, 0)
        shape = [rows, kt] if k_is_cols else [kt, cols]
        return cube.emit(f"{v.base.name}_l0", "tile.extract", [v.base, *at, shape], target_memory=space)
    k_off = make_binop("+", c0 if k_is_cols else r0, as_expr(k0, cube.span))
    real = rows if k_is_cols else cols
    extent: int | DynDim = real if side is None else side
    if k_is_cols:
        offs, shape = [*lead, r0, k_off], [*batch, extent, kt]
    else:
        offs, shape = [*lead, k_off, c0], [*batch, kt, extent]
    valid = _chunk_valid(cube, v, kt, k_is_cols)
    if valid is None and extent != real:  # padded: the window's own rows / columns are read
        own, k = as_expr(real, cube.span), as_expr(kt, cube.span)
        valid = ListExpr((own, k) if k_is_cols else (k, own), span=cube.span)
    mat = cube.emit(
        f"{v.base.name}_mat",
        "tile.load",
        [v.base, offs, shape],
        target_memory=MemorySpace.Mat,
        valid_shape=valid,
    )
    return cube.emit(f"{v.base.name}_l0", "tile.move", [mat, space])


def _chunk_valid(cube: Cube, v: View, kt: int, k_is_cols: bool) -> Expr | None:
    """The valid part of one K chunk of a window with ``valid_shape`` (a tail block of M or N:
    only those rows / columns are read, and the cube's result carries them); the K axis must
    be valid whole, since both operands' K must agree."""
    if v.valid is None or not isinstance(v.valid, ListExpr) or not v.valid.items:
        return None
    if len(v.shape) != 2:
        raise CompileError("valid_shape= on a batched matmul operand is not supported", cube.span)
    rows, cols = v.valid.items
    k_valid, k_full = (cols, v.shape[1]) if k_is_cols else (rows, v.shape[0])
    if not (isinstance(k_valid, Const) and k_valid.value == k_full):
        raise CompileError(
            f"a matmul operand's valid_shape must keep its whole K axis ({k_full}); got "
            f"valid K {k_valid}: only the M / N tail of a window may be cut",
            cube.span,
        )
    k = as_expr(kt, cube.span)
    return ListExpr((rows, k) if k_is_cols else (k, cols), span=cube.span)


def _k_chunk(cube: Cube, m: int, k: int, n: int, esize: int, batches: tuple[int, int, int]) -> int:
    """The largest K chunk (whole fractals: a multiple of 16, of 32 for 1-byte inputs, dividing
    K) whose operands fit L0A and L0B; ``batches``: of the left operand, the right one and the
    result."""
    ba, bb, bc = batches
    acc_dtype = "int32" if esize == 1 else "fp32"
    if bc * m * n * 4 > cube.l0c:  # FP32 or INT32 accumulators
        shown = f"{bc} x [{m}, {n}]" if bc > 1 else f"[{m}, {n}]"
        raise CompileError(
            f"matmul output {shown} {acc_dtype} needs {bc * m * n * 4} B of Acc but L0C holds "
            f"{cube.l0c} B; split M or N across tasks",
            cube.span,
        )
    step = max(FRACTAL, 32 // esize)  # whole fractals: K0 is 32 B of inputs, 16 rows at least
    for kt in range(k, 0, -step):
        if k % kt == 0 and ba * m * kt * esize <= cube.l0a and bb * kt * n * esize <= cube.l0b:
            if k // kt > _MAX_K_CHUNKS:
                break
            return kt
    raise CompileError(
        f"matmul operands [{m}, {k}] x [{k}, {n}] do not tile onto L0A/L0B "
        f"({cube.l0a} B each) in at most {_MAX_K_CHUNKS} K chunks",
        cube.span,
    )


_MATMULS = ("tensor.matmul", "tensor.matmul_acc")


def fixpipe_casts(body: tuple[Stmt, ...]) -> frozenset[str]:
    """The tensor-level casts FIXPIPE does on its way out of L0C: a cast of a matmul's product to
    fp16 or bf16 with ``mode="rint"`` (FIXPIPE narrows with ties to even), every use of which is
    a matmul operand. The narrowed product goes into L1 (Mat) for the next matmul, with no trip
    through the vector core; any other cast is vector work."""
    calls = {s.var.name: s.value for s in walk(body) if isinstance(s, Assign) and isinstance(s.value, Call)}
    products = {name for name, c in calls.items() if c.op in _MATMULS}
    operands = Counter(
        x.name for c in calls.values() if c.op in _MATMULS for x in (c.arg("lhs"), c.arg("rhs"))
        if isinstance(x, Var)
    )  # fmt: skip
    uses = Counter(v.name for v in nodes_of(body, Var))  # the definition, and every read
    return frozenset(
        name
        for name, c in calls.items()
        if c.op == "tensor.cast"
        and _narrowing_rint(c, products)
        and operands[name]
        and uses[name] == operands[name] + 1
    )


def _narrowing_rint(c: Call, products: set[str]) -> bool:
    """``c`` (a tensor.cast) takes a product to fp16 or bf16 with ties to even."""
    x, dtype, mode = c.arg("x"), c.arg("target_type"), c.arg("mode")
    return (
        isinstance(x, Var) and x.name in products
        and isinstance(dtype, Literal) and dtype.value in (FP16, BF16)
        and isinstance(mode, Literal) and mode.value == "rint"
    )  # fmt: skip


def is_tensor_var(e: Expr) -> bool:
    return isinstance(e, Var) and isinstance(e.type, TensorType)
