"""Result-typing rules of the ops in :mod:`pypto.ir.ops`.

Each rule takes the bound arguments of one call and returns the result type, or raises
``TypeCheckError`` naming the op, the operands and the numbers that disagree. There is no
implicit promotion anywhere: dtypes must match exactly (``pl.cast`` converts).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import cast

from pypto._dataclass import dataclass
from pypto.errors import SourceSpan, TypeCheckError
from pypto.ir import isa_dtypes
from pypto.ir.dtypes import BY_NAME, DataType
from pypto.ir.enums import MemorySpace
from pypto.ir.expr import Const, Expr, ListExpr, Literal, type_of
from pypto.ir.types import DynDim, ScalarType, TensorType, TileType, Type, VoidType, format_type, is_static


@dataclass(frozen=True)
class Bound:
    """The arguments of one call by parameter name, with the names the user spelled."""

    op: str
    display: str  # how the user spelled the op, for messages ("pl.load")
    args: dict[str, Expr]
    span: SourceSpan | None

    def fail(self, message: str) -> TypeCheckError:
        return TypeCheckError(f"{self.display}: {message}", self.span)

    def type(self, name: str) -> Type | None:
        return type_of(self.args[name])

    def array(self, name: str) -> TileType | TensorType:
        t = self.type(name)
        assert isinstance(t, (TileType, TensorType)), (self.op, name, t)
        return t

    def tile(self, name: str) -> TileType:
        """A ``Kind.TILE`` operand's type (binding checked the kind)."""
        t = self.type(name)
        assert isinstance(t, TileType), (self.op, name, t)
        return t

    def literal(self, name: str) -> object:
        e = self.args[name]
        return e.value if isinstance(e, (Literal, Const)) else None

    def dtype(self, name: str) -> DataType:
        """A ``Kind.DTYPE`` attribute (binding checked the kind)."""
        value = self.literal(name)
        assert isinstance(value, DataType), (self.op, name, value)
        return value

    def memory(self, name: str) -> MemorySpace:
        """A ``Kind.MEMSPACE`` attribute (binding checked the kind)."""
        value = self.literal(name)
        assert isinstance(value, MemorySpace), (self.op, name, value)
        return value

    def items(self, name: str) -> tuple[Expr, ...]:
        """The entries of a list argument (a shape or indices; binding checked the kind)."""
        e = self.args[name]
        assert isinstance(e, ListExpr), (self.op, name, e)
        return e.items

    def ints(self, name: str) -> tuple[int, ...] | None:
        """A static int list argument (a shape), or None when the argument is None."""
        e = self.args[name]
        if isinstance(e, Literal) and e.value is None:
            return None
        assert isinstance(e, ListExpr)
        return tuple(int(i.value) for i in e.items if isinstance(i, Const))

    def rank_of_list(self, name: str) -> int:
        e = self.args[name]
        return len(e.items) if isinstance(e, ListExpr) else 0


Rule = Callable[[Bound], Type]


def _like(
    t: TileType | TensorType, shape: tuple[int | DynDim, ...], dtype: DataType
) -> TileType | TensorType:
    """A result of the same kind (and memory space) as ``t`` with a new shape/dtype (a tile's
    shape is static: its dims come from a tile operand)."""
    if isinstance(t, TileType):
        return TileType(cast("tuple[int, ...]", shape), dtype, t.memory)
    return TensorType(shape, dtype)


def _need_space(b: Bound, name: str, allowed: frozenset[MemorySpace]) -> None:
    t = b.type(name)
    if isinstance(t, TileType) and t.memory is not None and t.memory not in allowed:
        names = ", ".join(s.dsl_name for s in sorted(allowed, key=lambda s: s.value))
        raise b.fail(f"operand `{name}` is in {t.memory.dsl_name} but the op needs {names}")


def need_isa_dtype(b: Bound, name: str) -> None:
    """Refuses an operand dtype the ISA has no instruction for (the run would stop on it)."""
    why = isa_dtypes.refusal(b.op, b.array(name).dtype.name)
    if why is not None:
        raise b.fail(why)


def need_cube_dtype(
    b: Bound, name: str, part: str = "cube_inputs", dtype: DataType | None = None, source: str = ""
) -> None:
    """Refuses a dtype the cube has no form for: of operand ``name`` (or ``dtype``) as ``part``
    (``source``: the inputs' dtype of an accumulator, the accumulator's of a store)."""
    why = isa_dtypes.cube_refusal((dtype or b.array(name).dtype).name, part, source)
    if why is not None:
        raise b.fail(why)


def _dtype(b: Bound, name: str) -> DataType:
    t = b.type(name)
    assert isinstance(t, (ScalarType, TileType, TensorType)), (b.op, name, t)
    return t.dtype


def _need_same_dtype(b: Bound, x: str, y: str) -> None:
    tx, ty = b.type(x), b.type(y)
    if _dtype(b, x) != _dtype(b, y):
        raise b.fail(
            f"dtype mismatch: `{x}` is {format_type(tx)} but `{y}` is {format_type(ty)} "
            "(no implicit promotion; use pl.cast)"
        )


def _need_rank(b: Bound, name: str, rank: int) -> None:
    t = b.array(name)
    if len(t.shape) != rank:
        raise b.fail(f"`{name}` must have rank {rank}, got shape {list(t.shape)}")


# --- data movement ----------------------------------------------------------------------------
def load_rule(b: Bound) -> Type:
    src = b.array("tensor")
    shape = b.ints("shapes") or ()
    target = b.literal("target_memory")
    if target not in (MemorySpace.Vec, MemorySpace.Mat):
        raise b.fail(f"target_memory must be pl.Mem.Vec or pl.Mem.Mat (DDR→Vec/Mat), got {target!r}")
    if len(shape) > 3:
        raise b.fail(f"tiles have at most 3 dims (a batch of matrices), got shapes {list(shape)}")
    if not (len(src.shape) == b.rank_of_list("offsets") == len(shape)):
        raise b.fail(
            f"tensor has rank {len(src.shape)} but offsets has {b.rank_of_list('offsets')} "
            f"and shapes has {len(shape)} entries"
        )
    if b.rank_of_list("valid_shape") not in (0, len(shape)):
        raise b.fail(f"valid_shape needs {len(shape)} entries")
    if len(shape) == 3 and b.rank_of_list("valid_shape") and b.ints("valid_shape") != shape:
        raise b.fail(f"a batch of matrices {list(shape)} is loaded whole: valid_shape must be its shape")
    return TileType(shape, src.dtype, target)


def store_rule(b: Bound) -> Type:
    tile, dst = b.array("tile"), b.array("output_tensor")
    if getattr(tile, "memory", None) is MemorySpace.Acc:  # FIXPIPE converts on the way out
        need_cube_dtype(b, "output_tensor", "fixpipe_out", source=tile.dtype.name)
    else:
        _need_same_dtype(b, "tile", "output_tensor")
    _need_space(b, "tile", frozenset({MemorySpace.Vec, MemorySpace.Acc}))
    if not (len(tile.shape) == len(dst.shape) == b.rank_of_list("offsets")):
        raise b.fail(f"tile rank {len(tile.shape)}, tensor rank {len(dst.shape)} and offsets disagree")
    return dst


def move_rule(b: Bound) -> Type:
    t = b.tile("tile")
    target = b.memory("target_memory")
    if target is MemorySpace.DDR:
        raise b.fail("cannot move a tile to DDR; use pl.store")
    src = getattr(t, "memory", None)
    if target in (MemorySpace.Left, MemorySpace.Right) and src not in (None, MemorySpace.Mat):
        raise b.fail(
            f"{target.dsl_name} is filled from Mat (L1) only, not from {src.dsl_name}: load the operand "
            "with target_memory=pl.Mem.Mat, then pl.move it (or a slice of it)"
        )
    return TileType(t.shape, t.dtype, target)


def create_rule(b: Bound) -> Type:
    shape = b.ints("shape") or ()
    return TileType(shape, b.dtype("dtype"), b.memory("target_memory"))


def full_rule(b: Bound) -> Type:
    return TensorType(b.ints("shape") or (), b.dtype("dtype"))


# --- elementwise --------------------------------------------------------------------------------
VEC = frozenset({MemorySpace.Vec})


def binary_rule(b: Bound) -> Type:
    lhs, rhs = b.array("lhs"), b.array("rhs")
    if lhs.shape != rhs.shape:
        raise b.fail(f"shape mismatch: lhs is {list(lhs.shape)} but rhs is {list(rhs.shape)}")
    _need_same_dtype(b, "lhs", "rhs")
    need_isa_dtype(b, "lhs")
    _need_space(b, "lhs", VEC)
    _need_space(b, "rhs", VEC)
    return _like(lhs, lhs.shape, lhs.dtype)


def scalar_rule(b: Bound) -> Type:
    lhs = b.array("lhs")
    need_isa_dtype(b, "lhs")
    _need_space(b, "lhs", VEC)
    return _like(lhs, lhs.shape, lhs.dtype)


def unary_rule(b: Bound) -> Type:
    x = b.array("x")
    need_isa_dtype(b, "x")
    _need_space(b, "x", VEC)
    return _like(x, x.shape, x.dtype)


_CAST_MODES = ("round", "rint", "floor", "ceil", "trunc", "none")


def cast_rule(b: Bound) -> Type:
    x = b.array("x")
    if b.literal("mode") not in _CAST_MODES:
        raise b.fail(f"mode must be one of {list(_CAST_MODES)}, got {b.literal('mode')!r}")
    _need_space(b, "x", VEC)
    return _like(x, x.shape, b.dtype("target_type"))


# --- row / column -------------------------------------------------------------------------------
def row_reduce_rule(b: Bound) -> Type:
    x, tmp = b.array("x"), b.array("tmp")
    _need_rank(b, "x", 2)
    _need_same_dtype(b, "x", "tmp")
    need_isa_dtype(b, "x")
    if tmp.shape != x.shape:
        raise b.fail(f"scratch tile `tmp` must have the shape of `x` {list(x.shape)}, got {list(tmp.shape)}")
    _need_space(b, "x", VEC)
    return _like(x, (x.shape[0], 1), x.dtype)


def row_expand_rule(b: Bound) -> Type:
    x, v = b.array("x"), b.array("v")
    _need_rank(b, "x", 2)
    _need_same_dtype(b, "x", "v")
    need_isa_dtype(b, "x")
    if v.shape != (x.shape[0], 1):
        raise b.fail(f"`v` must be [{x.shape[0]}, 1] for x of shape {list(x.shape)}, got {list(v.shape)}")
    _need_space(b, "x", VEC)
    return _like(x, x.shape, x.dtype)


def col_expand_rule(b: Bound) -> Type:
    x, v = b.array("x"), b.array("v")
    _need_rank(b, "x", 2)
    _need_same_dtype(b, "x", "v")
    need_isa_dtype(b, "x")
    if v.shape != (1, x.shape[1]):
        raise b.fail(f"`v` must be [1, {x.shape[1]}] for x of shape {list(x.shape)}, got {list(v.shape)}")
    _need_space(b, "x", VEC)
    return _like(x, x.shape, x.dtype)


# --- shape (the window and layout rules are in layout_rules.py) -----------------------------------
_ROW_MAJOR = frozenset({MemorySpace.Vec, MemorySpace.Mat, MemorySpace.Acc})


def _count(shape: tuple[int | DynDim, ...]) -> str:
    """The element count of a shape, for messages (a pl.dynamic dim is counted by name)."""
    return " * ".join(map(str, shape)) if not is_static(shape) else str(math.prod(shape))


def reshape_rule(b: Bound) -> Type:
    x = b.array("x")
    shape = b.ints("shape") or ()
    if not is_static(x.shape) or math.prod(shape) != math.prod(x.shape):
        raise b.fail(
            f"cannot reshape {list(x.shape)} ({_count(x.shape)} elements) to {list(shape)} "
            f"({math.prod(shape)} elements): a reshape keeps the element count"
        )
    if isinstance(x, TileType) and len(shape) > 3:
        raise b.fail(f"tiles have at most 3 dims (a batch of matrices), got shape {list(shape)}")
    _need_space(b, "x", _ROW_MAJOR)
    return _like(x, shape, x.dtype)


# --- cube ---------------------------------------------------------------------------------------------
def cube_accumulator(dtype: DataType) -> DataType:
    """What the cube accumulates ``dtype`` inputs in (the ISA's rule: INT32 for 8-bit integers,
    else FP32)."""
    return BY_NAME[isa_dtypes.cube_accumulator(dtype.name)]


def _accumulator_dtype(b: Bound, dtype: DataType) -> DataType:
    out, acc = b.literal("out_dtype"), cube_accumulator(dtype)
    if isinstance(out, DataType):  # the dtype FIXPIPE stores: the accumulator's, or a float's narrowing
        if isa_dtypes.cube_refusal(out.name, "fixpipe_out", acc.name) is not None:
            raise b.fail(f"{dtype} inputs accumulate in {acc}; out_dtype={out} is not supported")
        return out
    return acc


def _mm_dims(
    b: Bound, lhs: TileType | TensorType, rhs: TileType | TensorType
) -> tuple[int | DynDim, int | DynDim]:
    _need_rank(b, "lhs", 2)
    _need_rank(b, "rhs", 2)
    _need_same_dtype(b, "lhs", "rhs")
    need_cube_dtype(b, "lhs")
    a_trans = bool(b.literal("a_trans")) if "a_trans" in b.args else False
    b_trans = bool(b.literal("b_trans")) if "b_trans" in b.args else False
    m, k = lhs.shape[::-1] if a_trans else lhs.shape
    k2, n = rhs.shape[::-1] if b_trans else rhs.shape
    if k != k2:
        raise b.fail(
            f"inner dimensions differ: lhs {list(lhs.shape)} × rhs {list(rhs.shape)} (K {k} vs {k2})"
        )
    return m, n


def tile_dims(b: Bound, m: int | DynDim, n: int | DynDim) -> tuple[int, int]:
    """``(m, n)`` of a product of tiles: compile-time sizes, as every tile's."""
    assert isinstance(m, int) and isinstance(n, int), (b.op, m, n)
    return m, n


def matmul_rule(b: Bound) -> TileType | TensorType:
    lhs, rhs = b.array("lhs"), b.array("rhs")
    m, n = _mm_dims(b, lhs, rhs)
    dtype = _accumulator_dtype(b, lhs.dtype)
    if isinstance(lhs, TensorType):
        return TensorType((m, n), dtype)
    _need_space(b, "lhs", frozenset({MemorySpace.Left}))
    _need_space(b, "rhs", frozenset({MemorySpace.Right}))
    need_cube_dtype(b, "lhs", "cube_acc", dtype, lhs.dtype.name)  # out_dtype names the Acc's dtype
    if lhs.shape[0] == 1:
        raise b.fail(
            f"lhs {list(lhs.shape)} is a row vector: use pl.gemv (a [1, K] Left is not a fractal operand)"
        )
    return TileType(tile_dims(b, m, n), dtype, MemorySpace.Acc)


def matmul_acc_rule(b: Bound) -> Type:
    acc, lhs, rhs = b.tile("acc"), b.array("lhs"), b.array("rhs")
    m, n = _mm_dims(b, lhs, rhs)
    if acc.shape != (m, n):
        raise b.fail(f"accumulator is {list(acc.shape)} but lhs × rhs is {[m, n]}")
    _need_space(b, "acc", frozenset({MemorySpace.Acc}))
    _need_space(b, "lhs", frozenset({MemorySpace.Left}))
    _need_space(b, "rhs", frozenset({MemorySpace.Right}))
    need_cube_dtype(b, "acc", "cube_acc", source=lhs.dtype.name)
    cond = b.type("init_cond") if "init_cond" in b.args else None
    if cond is not None and not (isinstance(cond, ScalarType) and cond.dtype.name == "BOOL"):
        raise b.fail(f"init_cond must be a condition (e.g. k == 0), got {format_type(cond)}")
    return TileType(acc.shape, acc.dtype, acc.memory)


def void_rule(b: Bound) -> Type:
    """Ops run for their effect (synchronisation)."""
    return VoidType()


def scalar_dtype(t: Type | None) -> DataType | None:
    """The dtype of a scalar type, else None."""
    return t.dtype if isinstance(t, ScalarType) else None
