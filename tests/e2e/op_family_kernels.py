"""Kernels for tests/e2e/test_op_families.py: one small kernel shape per op family, built
by factories so one test can sweep an op over dtypes and modes."""

from __future__ import annotations

import pypto.language as pl

R, C = 16, 64


def binary(op):
    """out = op(x_tile, y_tile)."""

    @pl.jit
    def k(x: pl.Tensor, y: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            a = pl.load(x, [0, 0], [R, C])
            b = pl.load(y, [0, 0], [R, C])
            r = op(a, b)
            pl.store(r, [0, 0], out)
        return out

    return k


def with_scalar(op, s):
    """out = op(x_tile, s) for a compile-time scalar s."""

    @pl.jit
    def k(x: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            a = pl.load(x, [0, 0], [R, C])
            r = op(a, s)
            pl.store(r, [0, 0], out)
        return out

    return k


def unary(op):
    @pl.jit
    def k(x: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            a = pl.load(x, [0, 0], [R, C])
            r = op(a)
            pl.store(r, [0, 0], out)
        return out

    return k


def compare(mode, scalar=None):
    """out (bool) = x cmp y (or x cmp scalar)."""

    @pl.jit
    def k(x: pl.Tensor, y: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            a = pl.load(x, [0, 0], [R, C])
            if scalar is None:
                b = pl.load(y, [0, 0], [R, C])
                m = pl.cmp(a, b, cmp_type=mode)
            else:
                m = pl.cmps(a, scalar, cmp_type=mode)
            pl.store(m, [0, 0], out)
        return out

    return k


@pl.jit
def where_greater(x: pl.Tensor, y: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        a = pl.load(x, [0, 0], [R, C])
        b = pl.load(y, [0, 0], [R, C])
        mask = pl.cmp(a, b, 4)
        r = pl.sel(mask, a, pl.neg(b))
        pl.store(r, [0, 0], out)
    return out


@pl.jit
def reductions(x: pl.Tensor, rmin: pl.Out[pl.Tensor], csum: pl.Out[pl.Tensor], cmax: pl.Out[pl.Tensor],
               cmin: pl.Out[pl.Tensor]):  # fmt: skip
    with pl.at(level=pl.Level.CORE_GROUP):
        a = pl.load(x, [0, 0], [R, C])
        tmp = pl.create_tile([R, C], a.dtype)
        pl.store(pl.row_min(a, tmp), [0, 0], rmin)
        pl.store(pl.col_sum(a), [0, 0], csum)
        pl.store(pl.col_max(a), [0, 0], cmax)
        pl.store(pl.col_min(a), [0, 0], cmin)
    return rmin


@pl.jit
def broadcasts(rv: pl.Tensor, cv: pl.Tensor, o1: pl.Out[pl.Tensor], o2: pl.Out[pl.Tensor],
               o3: pl.Out[pl.Tensor]):  # fmt: skip
    with pl.at(level=pl.Level.CORE_GROUP):
        r = pl.load(rv, [0, 0], [R, 1])
        c = pl.load(cv, [0, 0], [1, C])
        target = pl.create_tile([R, C], pl.FP32)
        pl.store(pl.row_expand(target, r), [0, 0], o1)
        pl.store(pl.col_expand(target, c), [0, 0], o2)
        pl.store(pl.expands(target, 2.5), [0, 0], o3)
    return o1


@pl.jit
def gather(x: pl.Tensor, idx: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        src = pl.load(x, [0, 0], [R, C])
        ix = pl.load(idx, [0, 0], [R, C])
        pl.store(pl.gather(src, ix), [0, 0], out)
    return out


def sort(op):
    @pl.jit
    def k(x: pl.Tensor, idx: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            src = pl.load(x, [0, 0], [R, C])
            ix = pl.load(idx, [0, 0], [R, C])
            pl.store(op(src, ix), [0, 0], out)
        return out

    return k


@pl.jit
def scalars(x: pl.Tensor, table: pl.InOut[pl.Tensor], out: pl.Out[pl.Tensor]):
    """Reads a scale from GM, writes one element back, reads a tile element."""
    with pl.at(level=pl.Level.CORE_GROUP):
        scale = pl.read(table, [0, 1])
        a = pl.load(x, [0, 0], [R, C])
        b = pl.muls(a, scale)
        first = pl.read(b, [2, 3])
        pl.write(table, [0, 0], first)
        pl.store(b, [0, 0], out)
    return out


def cast(target, mode):
    @pl.jit
    def k(x: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            a = pl.load(x, [0, 0], [R, C])
            pl.store(pl.cast(a, target_type=target, mode=mode), [0, 0], out)
        return out

    return k


@pl.jit
def matmul_bias(a: pl.Tensor, b: pl.Tensor, bias: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        a_l1 = pl.load(a, [0, 0], [32, 64], target_memory=pl.Mem.Mat)
        b_l1 = pl.load(b, [0, 0], [64, 32], target_memory=pl.Mem.Mat)
        bias_l1 = pl.load(bias, [0, 0], [1, 32], target_memory=pl.Mem.Mat)
        la = pl.move(a_l1, target_memory=pl.Mem.Left)
        rb = pl.move(b_l1, target_memory=pl.Mem.Right)
        bt = pl.move(bias_l1, target_memory=pl.Mem.Bias)
        c = pl.matmul_bias(la, rb, bt)
        pl.store(c, [0, 0], out)
    return out


def with_vector(op):
    """out = op(x_tile, v_tile) with v a row or column vector ([R, 1] or [1, C])."""

    @pl.jit
    def k(x: pl.Tensor, v: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            a = pl.load(x, [0, 0], [R, C])
            b = pl.load(v, [0, 0], v.shape)
            pl.store(op(a, b), [0, 0], out)
        return out

    return k


@pl.jit
def gemv(v: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        v_l1 = pl.load(v, [0, 0], [1, 64], target_memory=pl.Mem.Mat)
        b_l1 = pl.load(b, [0, 0], [64, 32], target_memory=pl.Mem.Mat)
        lv = pl.move(v_l1, target_memory=pl.Mem.Left)
        rb = pl.move(b_l1, target_memory=pl.Mem.Right)
        pl.store(pl.gemv(lv, rb), [0, 0], out)
    return out
