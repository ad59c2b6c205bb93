"""Result-typing rules of the batched and accumulating cube ops (``pl.batch_matmul``,
``pl.batch_matmul_acc``, ``pl.gemv_acc``, ``pl.gemv_bias``). Same conventions as
:mod:`pypto.ir.op_rules`: no implicit promotion, every mismatch a ``TypeCheckError`` naming the
operands and the numbers.

A batched tile ``[B, R, C]`` holds B matrices stacked by rows; the cube runs one TMATMUL per
batch on row windows of the L0 stacks, so each batch's rows must fill whole 16-row fractals.
A rank-2 operand (or a batch of 1) is used for every batch, as numpy's ``matmul`` broadcasts.
"""

from __future__ import annotations

import dataclasses

from pypto.ir.dtypes import FP32
from pypto.ir.enums import MemorySpace
from pypto.ir.expr import as_expr
from pypto.ir.op_rules import (
    Bound,
    _need_same_dtype,
    _need_space,
    cube_accumulator,
    matmul_rule,
    need_cube_dtype,
)
from pypto.ir.op_rules_ext import gemv_rule
from pypto.ir.types import TensorType, TileType, Type, format_type, is_static

_FRACTAL_ROWS = 16
LEFT, RIGHT, ACC = (frozenset({m}) for m in (MemorySpace.Left, MemorySpace.Right, MemorySpace.Acc))


def _static_shape(b: Bound, name: str) -> tuple[int, ...]:
    """The shape of ``name``, checked to be compile-time (rank 2, or 3 for a batch)."""
    shape = b.array(name).shape
    if not is_static(shape):
        raise b.fail(
            f"needs compile-time shapes, but `{name}` is {list(shape)}: multiply windows of a "
            "pl.dynamic tensor (pl.load, pl.move, pl.batch_matmul on tiles)"
        )
    if len(shape) not in (2, 3):
        raise b.fail(f"`{name}` must be [M, K] or a batch [B, M, K], got shape {list(shape)}")
    return shape


def _flag(b: Bound, name: str) -> bool:
    return bool(b.literal(name)) if name in b.args else False


def batch_dims(b: Bound) -> tuple[int, int, int]:
    """(batches, M, N) of ``lhs`` × ``rhs``, checking ranks, dtypes, K, the batch broadcast,
    the fractal grid and the memory spaces."""
    lhs, rhs = b.array("lhs"), b.array("rhs")
    ls, rs = _static_shape(b, "lhs"), _static_shape(b, "rhs")
    bl, br = (s[0] if len(s) == 3 else 1 for s in (ls, rs))
    _need_same_dtype(b, "lhs", "rhs")
    need_cube_dtype(b, "lhs")
    if bl != br and 1 not in (bl, br):
        raise b.fail(
            f"batch dims do not broadcast: lhs {list(lhs.shape)} has {bl} batches, rhs {list(rhs.shape)} "
            f"has {br} (each must be equal or 1)"
        )
    m, k = ls[-2:][::-1] if _flag(b, "a_trans") else ls[-2:]
    k2, n = rs[-2:][::-1] if _flag(b, "b_trans") else rs[-2:]
    if k != k2:
        raise b.fail(
            f"inner dimensions differ: lhs {list(lhs.shape)} × rhs {list(rhs.shape)} (K {k} vs {k2})"
        )
    for name, shape, batches in (("lhs", ls, bl), ("rhs", rs, br)):
        rows = shape[-2]
        if batches > 1 and rows % _FRACTAL_ROWS:
            raise b.fail(
                f"`{name}` {list(shape)} stacks {batches} batches of {rows} rows; each batch must fill "
                f"whole {_FRACTAL_ROWS}-row fractals of L0 ({rows} is not a multiple of {_FRACTAL_ROWS})"
            )
    if m == 1:
        raise b.fail(
            f"lhs {list(lhs.shape)} holds row vectors: use pl.gemv (a [1, K] Left is not a fractal operand)"
        )
    _need_space(b, "lhs", LEFT)
    _need_space(b, "rhs", RIGHT)
    return max(bl, br), m, n


def _shape(batches: int, m: int, n: int, rank3: bool) -> tuple[int, ...]:
    return (batches, m, n) if rank3 else (m, n)


def batch_matmul_rule(b: Bound) -> Type:
    batches, m, n = batch_dims(b)
    lhs = b.array("lhs")
    rank3 = 3 in (len(lhs.shape), len(b.array("rhs").shape))
    return TileType(_shape(batches, m, n, rank3), cube_accumulator(lhs.dtype), MemorySpace.Acc)


def batch_matmul_acc_rule(b: Bound) -> Type:
    acc = b.array("acc")
    batches, m, n = batch_dims(b)
    want = _shape(batches, m, n, len(acc.shape) == 3)
    dtype = cube_accumulator(b.array("lhs").dtype)
    if acc.shape != want or acc.dtype != dtype:
        raise b.fail(f"accumulator is {format_type(acc)} but lhs × rhs is {dtype} {list(want)}")
    _need_space(b, "acc", ACC)
    return TileType(want, dtype, MemorySpace.Acc)


def gemv_acc_rule(b: Bound) -> Type:
    out = gemv_rule(b)
    acc = b.array("acc")
    if acc.shape != out.shape or acc.dtype != FP32:
        raise b.fail(f"accumulator is {format_type(acc)} but lhs × rhs is FP32 {list(out.shape)}")
    _need_space(b, "acc", ACC)
    return out


def gemv_bias_rule(b: Bound) -> Type:
    out = gemv_rule(b)
    bias = b.array("bias")
    n = out.shape[1]
    _need_space(b, "bias", frozenset({MemorySpace.Bias}))
    if bias.dtype != FP32 or bias.shape != (1, n):
        raise b.fail(f"`bias` must be FP32 [1, {n}] in pl.Mem.Bias, got {format_type(bias)}")
    return out


def tensor_batch_matmul_rule(b: Bound) -> TensorType:
    """``pl.matmul`` of tensors with a batch (rank 3): lowered to pl.batch_matmul on tiles."""
    batches, m, n = batch_dims(b)
    out, dtype = b.literal("out_dtype"), cube_accumulator(b.array("lhs").dtype)
    if out not in (None, dtype):
        raise b.fail(f"a batched matmul accumulates in {dtype}; out_dtype={out} is not supported")
    return TensorType((batches, m, n), dtype)


def tensor_matmul_rule(b: Bound) -> TileType | TensorType:
    """``pl.matmul`` of tensors: a batch of matrices when either side has 3 dims."""
    lhs, rhs = b.array("lhs"), b.array("rhs")
    if 3 in (len(lhs.shape), len(rhs.shape)):
        return tensor_batch_matmul_rule(b)  # lowered per batch
    return matmul_rule(b)


def tensor_matmul_acc_rule(b: Bound) -> Type:
    """``pl.matmul_acc(acc, a, b)`` of tensors: ``acc`` (the shape of ``a × b``, FP32, or INT32
    for 8-bit integer inputs) plus the product; ``acc`` is a kernel-local tensor or an earlier
    matmul result."""
    out = tensor_matmul_rule(dataclasses.replace(b, args={**b.args, "out_dtype": as_expr(None, b.span)}))
    acc, dtype = b.array("acc"), out.dtype
    if acc.shape != out.shape or acc.dtype != dtype:
        raise b.fail(f"accumulator is {format_type(acc)} but lhs × rhs is {dtype} {list(out.shape)}")
    return TensorType(acc.shape, dtype)
