"""Result-typing rules of the op families beyond the tutorial set (see :mod:`pypto.ir.ops`):
compare/select, bitwise, column reductions, broadcasts, scalar element access
and the biased matmul. Same conventions as :mod:`pypto.ir.op_rules`: no implicit promotion,
every mismatch a ``TypeCheckError`` naming the operands and the numbers."""

from __future__ import annotations

from pypto.ir.dtypes import BF16, BOOL, FP16, FP32, INDEX, INT32, SCALAR_CAST_TARGETS, range_error
from pypto.ir.enums import MemorySpace
from pypto.ir.expr import Const
from pypto.ir.op_rules import (
    VEC,
    Bound,
    _like,
    _mm_dims,
    _need_rank,
    _need_same_dtype,
    _need_space,
    need_cube_dtype,
    tile_dims,
    void_rule,
)
from pypto.ir.types import ScalarType, TensorType, TileType, Type, format_type

CMP_MODES = ("eq", "ne", "lt", "le", "gt", "ge")


def _need_int(b: Bound, name: str) -> None:
    t = b.array(name)
    if not t.dtype.is_integer:
        raise b.fail(f"needs an integer tile for `{name}`, got {format_type(t)}")


def _same_shape(b: Bound, x: str, y: str) -> None:
    tx, ty = b.array(x), b.array(y)
    if tx.shape != ty.shape:
        raise b.fail(f"shape mismatch: `{x}` is {list(tx.shape)} but `{y}` is {list(ty.shape)}")


def _need_mode(b: Bound) -> None:
    mode = b.literal("cmp_type")
    if not (isinstance(mode, int) and 0 <= mode < len(CMP_MODES)):
        raise b.fail(
            f"cmp_type must be 0..5 ({', '.join(f'{i}={m}' for i, m in enumerate(CMP_MODES))}), got {mode!r}"
        )


def _tmp_any(b: Bound) -> None:
    """An optional scratch tile (accepted for upstream compatibility) must be in Vec."""
    if "tmp" in b.args and isinstance(b.type("tmp"), TileType):
        _need_space(b, "tmp", VEC)


# --- compare / select ----------------------------------------------------------------------------
def cmp_rule(b: Bound) -> Type:
    lhs = b.array("lhs")
    _need_mode(b)
    if "rhs" in b.args and isinstance(b.type("rhs"), TileType):
        _same_shape(b, "lhs", "rhs")
        _need_same_dtype(b, "lhs", "rhs")
        _need_space(b, "rhs", VEC)
    if lhs.dtype == BOOL:
        raise b.fail("cannot compare bool tiles")
    _need_space(b, "lhs", VEC)
    return TileType(b.tile("lhs").shape, BOOL, MemorySpace.Vec)


def sel_rule(b: Bound) -> Type:
    mask, lhs = b.array("mask"), b.array("lhs")
    if mask.dtype != BOOL:
        raise b.fail(f"`mask` must be a bool tile (from pl.cmp), got {format_type(mask)}")
    _same_shape(b, "lhs", "rhs")
    _same_shape(b, "mask", "lhs")
    _need_same_dtype(b, "lhs", "rhs")
    for name in ("mask", "lhs", "rhs"):
        _need_space(b, name, VEC)
    _tmp_any(b)
    return _like(lhs, lhs.shape, lhs.dtype)


# --- bitwise ---------------------------------------------------------------------------------------
def bitwise_rule(b: Bound) -> Type:
    lhs = b.array("lhs")
    _need_int(b, "lhs")
    if isinstance(b.type("rhs"), TileType):
        _same_shape(b, "lhs", "rhs")
        _need_same_dtype(b, "lhs", "rhs")
        _need_space(b, "rhs", VEC)
    shift = b.literal("rhs") if b.op.endswith(("shls", "shrs")) else None
    if isinstance(shift, int) and shift < 0:
        raise b.fail(f"shift count {shift} is negative")
    _need_space(b, "lhs", VEC)
    _tmp_any(b)
    return _like(lhs, lhs.shape, lhs.dtype)


def not_rule(b: Bound) -> Type:
    x = b.array("x")
    _need_int(b, "x")
    _need_space(b, "x", VEC)
    return _like(x, x.shape, x.dtype)


# --- reductions and broadcasts ------------------------------------------------------------------------
def col_reduce_rule(b: Bound) -> Type:
    x = b.array("x")
    _need_rank(b, "x", 2)
    if x.dtype not in (FP32, FP16, BF16, INT32):
        raise b.fail(f"column reductions take fp32/fp16/bf16/int32 tiles, got {format_type(x)}")
    _need_space(b, "x", VEC)
    _tmp_any(b)
    return _like(x, (1, x.shape[1]), x.dtype)


def expands_rule(b: Bound) -> Type:
    target = b.array("target")
    _need_space(b, "target", VEC)
    return _like(target, target.shape, target.dtype)


# --- scalar element access ----------------------------------------------------------------------------
def _need_index_count(b: Bound, name: str) -> TileType | TensorType:
    t = b.array(name)
    if b.rank_of_list("indices") != len(t.shape):
        raise b.fail(
            f"{len(t.shape)} indices needed for shape {list(t.shape)}, got {b.rank_of_list('indices')}"
        )
    if isinstance(t, TileType):
        _need_space(b, name, VEC)
    return t


def read_rule(b: Bound) -> Type:
    t = _need_index_count(b, "src")
    return ScalarType(t.dtype)


def write_rule(b: Bound) -> Type:
    t = _need_index_count(b, "dst")
    got = b.type("value")
    # The scalar unit converts on the store (integers exactly, floats rounded to the dtype);
    # a float value into an integer element would truncate silently, so that is refused.
    if isinstance(got, ScalarType) and got.dtype.is_float and not t.dtype.is_float:
        raise b.fail(f"value is {got.dtype} but `dst` holds {t.dtype}; write an integer value")
    value = b.args["value"]
    problem = range_error(value.value, t.dtype) if isinstance(value, Const) else None
    if problem is not None:  # a run-time value converts as numpy's astype does (codegen's _write)
        raise b.fail(f"value {problem}")
    return void_rule(b)


def scalar_cast_rule(b: Bound) -> Type:
    """``pl.cast`` of a scalar: to an integer dtype, INDEX, BOOL or FP32 (scalars are computed
    in double / int64; a 16-bit float scalar has no faithful form, so cast a tile instead)."""
    target = b.literal("target_type")
    if getattr(target, "name", None) not in SCALAR_CAST_TARGETS:
        raise b.fail(
            f"a scalar casts to {', '.join(SCALAR_CAST_TARGETS)}, not {target}; cast a tile or tensor"
        )
    if b.literal("mode") != "trunc":  # what generated kernels and the launch plan both do
        raise b.fail(f"a scalar cast truncates toward zero (mode='trunc'), not mode={b.literal('mode')!r}")
    return ScalarType(b.dtype("target_type"))


def dim_rule(b: Bound) -> Type:
    t = b.array("x")
    axis = b.literal("axis")
    if not (isinstance(axis, int) and -len(t.shape) <= axis < len(t.shape)):
        raise b.fail(f"axis {axis!r} is out of range for shape {list(t.shape)}")
    return ScalarType(INDEX)


# --- cube -----------------------------------------------------------------------------------------------
def gemv_rule(b: Bound) -> TileType:
    lhs, rhs = b.tile("lhs"), b.tile("rhs")
    _need_rank(b, "lhs", 2)
    _need_rank(b, "rhs", 2)
    _need_same_dtype(b, "lhs", "rhs")
    if lhs.shape[0] != 1 or lhs.shape[1] != rhs.shape[0]:
        raise b.fail(f"needs lhs [1, K] and rhs [K, N], got {list(lhs.shape)} and {list(rhs.shape)}")
    need_cube_dtype(b, "lhs", "gemv_inputs")
    _need_space(b, "lhs", frozenset({MemorySpace.Left}))
    _need_space(b, "rhs", frozenset({MemorySpace.Right}))
    return TileType((1, rhs.shape[1]), FP32, MemorySpace.Acc)


def matmul_bias_rule(b: Bound) -> Type:
    lhs, rhs, bias = b.array("lhs"), b.array("rhs"), b.array("bias")
    m, n = _mm_dims(b, lhs, rhs)
    _need_space(b, "lhs", frozenset({MemorySpace.Left}))
    _need_space(b, "rhs", frozenset({MemorySpace.Right}))
    _need_space(b, "bias", frozenset({MemorySpace.Bias}))
    if bias.dtype != FP32 or bias.shape != (1, n):
        raise b.fail(f"`bias` must be FP32 [1, {n}] in pl.Mem.Bias, got {format_type(bias)}")
    return TileType(tile_dims(b, m, n), FP32, MemorySpace.Acc)
