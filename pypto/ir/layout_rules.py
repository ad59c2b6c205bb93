"""Result-typing rules of the layout and window ops (slices, extracts, assemble, reshape,
transpose, concat, fillpad, valid shapes), on the helpers of :mod:`pypto.ir.op_rules`."""

from __future__ import annotations

import math

from pypto.ir.dims import DynDim
from pypto.ir.enums import MemorySpace
from pypto.ir.expr import BinOp, Const, Expr, Var
from pypto.ir.op_rules import VEC, Bound, _like, _need_rank, _need_same_dtype, _need_space
from pypto.ir.types import TensorType, TileType, Type, is_static


def transpose_rule(b: Bound) -> Type:
    x = b.array("x")
    rank = len(x.shape)
    axes = []
    for name in ("axis1", "axis2"):
        a = b.literal(name)
        if not isinstance(a, int) or not -rank <= a < rank:
            raise b.fail(f"`{name}` must be an axis of a rank-{rank} value, got {a!r}")
        axes.append(a % rank)
    if isinstance(x, TileType) and rank == 3 and sorted(axes) != [1, 2]:
        raise b.fail(
            f"a batch of matrices {list(x.shape)} transposes each matrix: swap axes 1 and 2, got {axes}"
        )
    shape = list(x.shape)
    shape[axes[0]], shape[axes[1]] = shape[axes[1]], shape[axes[0]]
    _need_space(b, "x", VEC)
    return _like(x, tuple(shape), x.dtype)


def transpose_view_rule(b: Bound) -> Type:
    """The [N, K] view of a [K, N] Mat tile: it names a matmul operand read transposed (the
    frontend folds it into the matmul's a_trans / b_trans), so it has no bytes of its own."""
    x = b.array("tile")
    _need_rank(b, "tile", 2)
    _need_space(b, "tile", frozenset({MemorySpace.Mat}))
    return _like(x, tuple(x.shape[::-1]), x.dtype)


def concat_rule(b: Bound) -> Type:
    lhs, rhs = b.tile("lhs"), b.tile("rhs")
    _need_rank(b, "lhs", 2)
    _need_rank(b, "rhs", 2)
    _need_same_dtype(b, "lhs", "rhs")
    if lhs.shape[0] != rhs.shape[0]:
        raise b.fail(f"column-wise concat needs equal rows, got {list(lhs.shape)} and {list(rhs.shape)}")
    _need_space(b, "lhs", VEC)
    _need_space(b, "rhs", VEC)
    return _like(lhs, (lhs.shape[0], lhs.shape[1] + rhs.shape[1]), lhs.dtype)


def slice_rule(b: Bound) -> Type:
    x = b.array("x")
    # A size computed at run time (a tensor's window in orchestration) is a pl.dynamic dim,
    # as in create_tensor_rule; inside a kernel the frontend refuses it.
    shape = tuple(int(i.value) if isinstance(i, Const) else DynDim(_dim_name(i)) for i in b.items("shape"))
    if not (len(shape) == len(x.shape) == b.rank_of_list("offset")):
        raise b.fail(f"slice of rank-{len(x.shape)} value needs {len(x.shape)} sizes and offsets")
    # With valid_shape only the valid part is read: a tail block's window may reach past the
    # source (the valid part is checked at run time, as a pl.dynamic dim is).
    ragged = "valid_shape" in b.args and b.rank_of_list("valid_shape") > 0
    for d, (n, full) in enumerate(zip(shape, x.shape)):
        if isinstance(full, int) and isinstance(n, int) and n > full and not ragged:
            raise b.fail(f"slice size {n} on dim {d} exceeds the source size {full}")
    _need_space(b, "x", frozenset(MemorySpace) - {MemorySpace.DDR, MemorySpace.Bias})
    if "valid_shape" in b.args and b.rank_of_list("valid_shape") not in (0, len(shape)):
        raise b.fail(f"valid_shape needs {len(shape)} entries")
    return _like(x, shape, x.dtype)


# Windowed moves (TEXTRACT / TINSERT): source space → destination spaces.
WINDOW_ROUTES: dict[MemorySpace, frozenset[MemorySpace]] = {
    MemorySpace.Mat: frozenset({MemorySpace.Left, MemorySpace.Right}),
    MemorySpace.Acc: frozenset({MemorySpace.Mat, MemorySpace.Vec}),
    MemorySpace.Vec: frozenset({MemorySpace.Vec, MemorySpace.Mat}),
}


def _routes_from(space: MemorySpace | None) -> frozenset[MemorySpace]:
    """The spaces a window of a tile in ``space`` may move to (none from an unplaced tile)."""
    return WINDOW_ROUTES.get(space, frozenset()) if space is not None else frozenset()


def _route_text() -> str:
    # sorted by value: enum members have no order of their own
    pairs = [(s, d) for s, ds in WINDOW_ROUTES.items() for d in sorted(ds, key=lambda m: m.value)]
    return ", ".join(f"{s.dsl_name} → {d.dsl_name}" for s, d in pairs)


def extract_rule(b: Bound) -> Type:
    src = b.tile("src")
    shape = b.ints("shape") or ()
    target = b.memory("target_memory")
    _need_rank(b, "src", 2)
    if len(shape) != 2:
        raise b.fail(f"`shape` must have 2 entries, got {list(shape)}")
    if target not in _routes_from(src.memory):
        where = src.memory.dsl_name if src.memory else "an unplaced tile"
        raise b.fail(f"no windowed move from {where} to {target.dsl_name}; routes: {_route_text()}")
    for d, (n, full) in enumerate(zip(shape, src.shape)):
        if isinstance(full, int) and n > full:  # a pl.dynamic dim is checked at run time
            raise b.fail(f"window size {n} on dim {d} exceeds the source size {full}")
    _check_fractal_offsets(b, src)
    return TileType(shape, src.dtype, target)


def fractal_grid(t: TileType) -> tuple[int, int]:
    """The grid a window of a tile must start on: L1 holds 16 x c0 fractals (c0 = 32 B per
    element size), L0C 16 x 16; row-major Vec has none."""
    if t.memory is MemorySpace.Mat:
        return 16, max(1, 32 // t.dtype.itemsize)
    if t.memory is MemorySpace.Acc:
        return 16, 16
    return 1, 1


def _check_fractal_offsets(b: Bound, src: TileType) -> None:
    """Compile-time offsets off the fractal grid (run-time ones are checked by the ISA)."""
    grid = fractal_grid(src)
    for name, step, axis in (("index_row", grid[0], "row"), ("index_col", grid[1], "column")):
        off = b.literal(name)
        if isinstance(off, int) and off % step:
            raise b.fail(
                f"{axis} offset {off} is not on the {grid[0]} x {grid[1]} fractal grid of a "
                f"{src.memory.dsl_name if src.memory else '?'} {src.dtype} tile: {axis} offsets must be "
                f"multiples of {step}"
            )


def assembled_shape(shape: tuple, rank: int) -> tuple | None:
    """``shape`` written into a tensor of ``rank`` axes: leading axes of size 1 added or dropped
    (a [1, M, N] batch-of-one matmul result is an [M, N] window), None when a dropped one is not 1."""
    extra = len(shape) - rank
    if extra <= 0:
        return (1,) * -extra + tuple(shape)
    return tuple(shape[extra:]) if all(n == 1 for n in shape[:extra]) else None


def assemble_rule(b: Bound) -> Type:
    dst_name = "dst" if "dst" in b.args else "target"
    dst, src = b.array(dst_name), b.array("src")
    from_acc = getattr(src, "memory", None) is MemorySpace.Acc
    if not (from_acc and dst.dtype.name in ("FP32", "FP16", "BF16")):  # FIXPIPE narrows out of Acc
        _need_same_dtype(b, dst_name, "src")
    if b.rank_of_list("offset") != len(dst.shape):
        raise b.fail(f"offset must have one entry per axis of {list(dst.shape)}")
    shape: tuple | None = tuple(src.shape)
    if isinstance(dst, TensorType):  # a batch-of-one result (rank-3 matmul) written into a matrix
        shape = assembled_shape(src.shape, len(dst.shape))
    if shape is None or len(shape) != len(dst.shape):
        raise b.fail(
            f"src {list(src.shape)} must match the rank of {list(dst.shape)}"
            + (" (or differ from it only by leading axes of size 1)" if isinstance(dst, TensorType) else "")
        )
    for d, (n, full) in enumerate(zip(shape, dst.shape)):
        if isinstance(n, int) and isinstance(full, int) and n > full:  # pl.dynamic: checked at run time
            raise b.fail(f"src size {n} on dim {d} exceeds the destination size {full}")
    if isinstance(dst, TensorType):
        return dst
    if isinstance(src, TileType) and dst.memory not in _routes_from(src.memory):
        raise b.fail(
            f"cannot assemble a {src.memory.dsl_name if src.memory else '?'} tile into a "
            f"{dst.memory.dsl_name if dst.memory else '?'} tile; routes: {_route_text()}"
        )
    return TileType(dst.shape, dst.dtype, dst.memory)


def fillpad_rule(b: Bound) -> Type:
    x = b.array("x")
    _need_space(b, "x", VEC)
    return _like(x, x.shape, x.dtype)


def set_validshape_rule(b: Bound) -> Type:
    x = b.tile("x")
    _need_rank(b, "x", 2)
    for name, full in zip(("valid_rows", "valid_cols"), x.shape):
        v = b.literal(name)
        if isinstance(v, int) and not 0 <= v <= full:
            raise b.fail(f"`{name}` = {v} is outside 0..{full} for a tile of shape {list(x.shape)}")
    return _like(x, x.shape, x.dtype)


_OP_WORDS = {"+": "plus", "-": "minus", "*": "x", "//": "div", "%": "mod", "min": "min", "max": "max"}


def _dim_name(e: Expr) -> str:
    """A name for a size computed at run time, from its expression (the same size, the same
    name): ``t`` → ``D_t``, ``t * 4`` → ``D_t_x_4``."""

    def words(x: Expr) -> str:
        if isinstance(x, BinOp):
            return f"{words(x.lhs)}_{_OP_WORDS.get(x.op, 'op')}_{words(x.rhs)}"
        return x.name if isinstance(x, Var) else str(getattr(x, "value", "e"))

    return "D_" + words(e)


def view_rule(b: Bound) -> Type:
    """``pl.reshape`` in orchestration to sizes known at run time: each run-time size is a
    ``pl.dynamic`` dim of the view (the launch plan evaluates it per call)."""
    x = b.array("x")
    items = b.items("shape")
    dims = tuple(int(i.value) if isinstance(i, Const) else DynDim(_dim_name(i)) for i in items)
    if is_static(dims) and is_static(x.shape) and math.prod(dims) != math.prod(x.shape):
        raise b.fail(f"cannot view {list(x.shape)} as {list(dims)}: a reshape keeps the element count")
    return TensorType(dims, x.dtype)


def create_tensor_rule(b: Bound) -> Type:
    """``pl.create_tensor(shape, dtype)``: a size known only at run time (orchestration code)
    is a ``pl.dynamic`` dim of the new tensor, evaluated by the launch plan per call."""
    items = b.items("shape")
    for i in items:
        if isinstance(i, Const) and int(i.value) <= 0:
            raise b.fail(f"sizes must be positive, got {[getattr(x, 'value', '?') for x in items]}")
    dims = tuple(int(i.value) if isinstance(i, Const) else DynDim(_dim_name(i)) for i in items)
    return TensorType(dims, b.dtype("dtype"))
