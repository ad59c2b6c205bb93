"""Tile data movement, each op in a kernel against numpy: slices of Vec/Mat/Acc tiles
(``pl.slice`` and ``t[r0:r1, c0:c1]``), the L1 -> L0 extract with a_trans/b_trans,
reshape, transpose, concat, assemble (into a tile, an L1 tile from Acc, a tensor window),
fillpad and valid shapes; and the typed errors of their bad uses."""

from __future__ import annotations

import numpy as np
import pytest

import pypto.language as pl
from pypto.errors import CompileError, ShapeMismatchError, TypeCheckError

RNG = np.random.default_rng(7)


def f32(*shape):
    return RNG.uniform(-2, 2, shape).astype(np.float32)


def f16(*shape):
    return RNG.uniform(-1, 1, shape).astype(np.float16)


def mm(a, b):
    return a.astype(np.float32) @ b.astype(np.float32)


# --- Vec slices ------------------------------------------------------------------------------------
@pl.jit
def vec_slices(a: pl.Tensor, out1: pl.Out[pl.Tensor], out2: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [32, 128])
        pl.store(pl.exp(pl.slice(t, [16, 32], [8, 64])), [0, 0], out1)
        pl.store(t[4:12, 8:72], [0, 0], out2)
    return out1, out2


def test_vec_slices_copy_the_window():
    a = f32(32, 128)
    o1, o2 = np.zeros((16, 32), np.float32), np.zeros((8, 64), np.float32)
    vec_slices(a, o1, o2)
    np.testing.assert_allclose(o1, np.exp(a[8:24, 64:96]), rtol=1e-6)
    np.testing.assert_array_equal(o2, a[4:12, 8:72])
    assert vec_slices.last_report.pipe_busy["VECTOR"] > 0


# --- the L1 -> L0 extract --------------------------------------------------------------------------
@pl.jit
def transposed_operands(at: pl.Tensor, bt: pl.Tensor, c: pl.Out[pl.Tensor]):
    """c = at.T @ bt.T with K in two halves, each half a slice of the L1 tiles."""
    with pl.at(level=pl.Level.CORE_GROUP):
        at_l1 = pl.load(at, [0, 0], [128, 64], target_memory=pl.Mem.Mat)  # [K, M]
        bt_l1 = pl.load(bt, [0, 0], [32, 128], target_memory=pl.Mem.Mat)  # [N, K]
        lo = pl.move(at_l1[0:64, :], target_memory=pl.Mem.Left)
        ro = pl.move(pl.slice(bt_l1, [32, 64], [0, 0]), target_memory=pl.Mem.Right)
        acc = pl.matmul(lo, ro, a_trans=True, b_trans=True)
        hi = pl.move(pl.slice(at_l1, [64, 64], [64, 0]), target_memory=pl.Mem.Left)
        rh = pl.move(bt_l1[:, 64:128], target_memory=pl.Mem.Right)
        acc = pl.matmul_acc(acc, hi, rh, a_trans=True, b_trans=True)
        pl.store(acc, [0, 0], c)
    return c


def test_l1_slices_feed_l0_with_a_trans_and_b_trans_on_mte1():
    at, bt = f16(128, 64), f16(32, 128)
    c = np.zeros((64, 32), np.float32)
    transposed_operands(at, bt, c)
    np.testing.assert_allclose(c, mm(at.T, bt.T), rtol=1e-3, atol=1e-3)
    rep = transposed_operands.last_report
    assert rep.pipe_busy["MTE1"] > 0 and rep.pipe_busy["VECTOR"] == 0
    assert {t.core_type for t in rep.tasks} == {"AIC"}  # cube work: no vector core involved


# --- Acc windows into L1 ---------------------------------------------------------------------------
@pl.jit
def acc_into_l1(
    a: pl.Tensor, b: pl.Tensor, w: pl.Tensor, w32: pl.Tensor, o1: pl.Out[pl.Tensor], o2: pl.Out[pl.Tensor]
):
    """h = [a @ b | a @ b] assembled in an fp16 L1 tile from Acc (FIXPIPE narrows), then
    o1 = h[:, 64:128] @ w through a slice of h; o2 = (a @ b)[0:32] @ w32 through an Acc
    window moved to L1 (fp32)."""
    with pl.at(level=pl.Level.CORE_GROUP):
        la = pl.move(pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
        rb = pl.move(pl.load(b, [0, 0], [64, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
        acc = pl.matmul(la, rb)
        h = pl.create_tile([64, 128], pl.FP16, target_memory=pl.Mem.Mat)
        h = pl.tile.assemble(h, acc, [0, 0])
        h = pl.assemble(h, acc, [0, 64])
        top = pl.move(acc[0:32, :], target_memory=pl.Mem.Mat)
        rw = pl.move(pl.load(w, [0, 0], [64, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
        pl.store(pl.matmul(pl.move(h[:, 64:128], target_memory=pl.Mem.Left), rw), [0, 0], o1)
        rw32 = pl.move(pl.load(w32, [0, 0], [64, 32], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
        pl.store(pl.matmul(pl.move(top, target_memory=pl.Mem.Left), rw32), [0, 0], o2)
    return o1, o2


def test_matmul_result_assembled_into_an_l1_tile_and_an_acc_window_moved_to_l1():
    a, b, w = f16(64, 64), f16(64, 64), f16(64, 64)
    w32 = f32(64, 32)
    o1, o2 = np.zeros((64, 64), np.float32), np.zeros((32, 32), np.float32)
    acc_into_l1(a, b, w, w32, o1, o2)
    h = mm(a, b).astype(np.float16)  # FIXPIPE rounds fp32 -> fp16 on the way into L1
    np.testing.assert_allclose(o1, mm(h, w), rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(o2, mm(a, b)[:32] @ w32, rtol=1e-4, atol=1e-4)
    rep = acc_into_l1.last_report
    assert rep.pipe_busy["FIXPIPE"] > 0 and rep.pipe_busy["VECTOR"] == 0


# --- layout ops ------------------------------------------------------------------------------------
@pl.jit
def layouts(a: pl.Tensor, b: pl.Tensor, r: pl.Out[pl.Tensor], t: pl.Out[pl.Tensor], c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        x = pl.load(a, [0, 0], [16, 64])
        y = pl.load(b, [0, 0], [16, 32])
        pl.store(pl.exp(pl.reshape(pl.exp(x), [32, 32])), [0, 0], r)
        pl.store(pl.transpose(x, 0, 1), [0, 0], t)
        pl.store(pl.concat(x, y), [0, 0], c)
    return r, t, c


def test_reshape_transpose_concat():
    a, b = f32(16, 64), f32(16, 32)
    r, t, c = np.zeros((32, 32), np.float32), np.zeros((64, 16), np.float32), np.zeros((16, 96), np.float32)
    layouts(a, b, r, t, c)
    np.testing.assert_allclose(r, np.exp(np.exp(a)).reshape(32, 32), rtol=1e-5)
    np.testing.assert_array_equal(t, a.T)
    np.testing.assert_array_equal(c, np.concatenate([a, b], axis=1))


@pl.jit
def assemble_vec(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        big = pl.load(a, [0, 0], [32, 128])
        small = pl.exp(pl.load(a, [0, 0], [8, 32]))
        big = pl.tile.assemble(big, small, [16, 64])
        big[0:8, 0:32] = pl.neg(small)
        out = pl.assemble(out, big[16:24, 64:96], [0, 0])  # a tile into a tensor window
        pl.store(big, [8, 0], out)
    return out


def test_assemble_tiles_into_a_tile_and_a_tensor_window():
    a = f32(40, 128)
    out = np.zeros((40, 128), np.float32)
    assemble_vec(a, out)
    want = a[:32].copy()
    want[16:24, 64:96] = np.exp(a[:8, :32])
    want[0:8, 0:32] = -np.exp(a[:8, :32])
    np.testing.assert_allclose(out[8:40], want, rtol=1e-6)
    np.testing.assert_allclose(out[0:8, 0:32], np.exp(a[:8, :32]), rtol=1e-6)


@pl.jit
def ragged(a: pl.Tensor, padded: pl.Out[pl.Tensor], tail: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 128])
        v = pl.set_validshape(t, 10, 100)
        pl.store(v, [0, 0], tail)  # only the valid [10, 100] region is written
        pl.store(pl.fillpad(v, pad_value=pl.PadValue.max), [0, 0], padded)
    return padded, tail


def test_set_validshape_limits_the_store_and_fillpad_pads_the_rest():
    a = f32(16, 128)
    padded, tail = np.zeros((16, 128), np.float32), np.full((16, 128), 7.0, np.float32)
    ragged(a, padded, tail)
    want = np.full((16, 128), np.inf, np.float32)
    want[:10, :100] = a[:10, :100]
    np.testing.assert_array_equal(padded, want)
    expect_tail = np.full((16, 128), 7.0, np.float32)
    expect_tail[:10, :100] = a[:10, :100]
    np.testing.assert_array_equal(tail, expect_tail)


# --- bad uses ------------------------------------------------------------------------------------------
def test_misaligned_l0_offset_is_refused_at_compile_time_with_the_line():
    @pl.jit
    def off_grid(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            a_l1 = pl.load(a, [0, 0], [64, 128], target_memory=pl.Mem.Mat)
            left = pl.move(a_l1[:, 8:72], target_memory=pl.Mem.Left)
            right = pl.move(
                pl.load(b, [0, 0], [64, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right
            )
            pl.store(pl.matmul(left, right), [0, 0], c)
        return c

    with pytest.raises(TypeCheckError, match=r"column offset 8 is not on the 16 x 16 fractal grid") as e:
        off_grid.compile(f16(64, 128), f16(64, 64), np.zeros((64, 64), np.float32))
    assert "test_tile_movement.py" in str(e.value) and "a_l1[:, 8:72]" in str(e.value)


def test_misaligned_runtime_l0_offset_is_a_shape_error_with_the_line():
    @pl.jit
    def off_grid_at_run_time(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor], k0: pl.Scalar[pl.INDEX]):
        with pl.at(level=pl.Level.CORE_GROUP):
            a_l1 = pl.load(a, [0, 0], [64, 128], target_memory=pl.Mem.Mat)
            for i in pl.range(1):
                left = pl.move(pl.slice(a_l1, [64, 64], [0, k0 + i]), target_memory=pl.Mem.Left)
                right = pl.move(
                    pl.load(b, [0, 0], [64, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right
                )
                pl.store(pl.matmul(left, right), [0, 0], c)
        return c

    with pytest.raises(ShapeMismatchError, match=r"TEXTRACT: src offset \[0, 8\].*fractal grid") as e:
        off_grid_at_run_time(f16(64, 128), f16(64, 64), np.zeros((64, 64), np.float32), 8)
    assert "test_tile_movement.py" in str(e.value)


@pl.jit
def cube_views(
    a: pl.Tensor, b: pl.Tensor, c1: pl.Out[pl.Tensor], c2: pl.Out[pl.Tensor], c3: pl.Out[pl.Tensor]
):
    """Slices used in place (views of the storage, no copy): an Acc window stored, a row
    band of L0A and a K band of L0B fed to the cube."""
    with pl.at(level=pl.Level.CORE_GROUP):
        a_l1 = pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat)
        b_l1 = pl.load(b, [0, 0], [64, 64], target_memory=pl.Mem.Mat)
        left = pl.move(a_l1, target_memory=pl.Mem.Left)
        right = pl.move(b_l1, target_memory=pl.Mem.Right)
        acc = pl.matmul(left, right)
        pl.store(acc[16:48, 32:64], [0, 0], c1)
        pl.store(pl.matmul(left[0:32, :], right), [0, 0], c2)
        left_k = pl.move(a_l1[:, 16:48], target_memory=pl.Mem.Left)
        pl.store(pl.matmul(left_k, pl.slice(right, [32, 64], [16, 0])), [0, 0], c3)
    return c1, c2, c3


def test_cube_side_slices_used_in_place_are_views():
    a, b = f16(64, 64), f16(64, 64)
    c1, c2, c3 = (np.zeros(s, np.float32) for s in ((32, 32), (32, 64), (64, 64)))
    cube_views(a, b, c1, c2, c3)
    np.testing.assert_allclose(c1, mm(a, b)[16:48, 32:64], rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(c2, mm(a[:32], b), rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(c3, mm(a[:, 16:48], b[16:48]), rtol=1e-3, atol=1e-3)
    assert cube_views.last_report.hazards == []


def test_a_cube_side_slice_that_is_no_view_names_what_to_do():
    @pl.jit
    def left_columns(a: pl.Tensor, c: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            a_l1 = pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat)
            left = pl.move(a_l1, target_memory=pl.Mem.Left)
            right = pl.move(a_l1[0:32, :], target_memory=pl.Mem.Right)
            pl.store(pl.matmul(left[:, 0:32], right), [0, 0], c)
        return c

    @pl.jit
    def acc_off_alignment(a: pl.Tensor, c: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            a_l1 = pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat)
            acc = pl.matmul(
                pl.move(a_l1, target_memory=pl.Mem.Left), pl.move(a_l1, target_memory=pl.Mem.Right)
            )
            pl.store(acc[:, 4:36], [0, 0], c)
        return c

    a = f16(64, 64)
    with pytest.raises(TypeCheckError, match="not a whole-width band of 16-row fractals.*slice the Mat") as e:
        left_columns.compile(a, np.zeros((64, 64), np.float32))
    assert "test_tile_movement.py" in str(e.value) and "left[:, 0:32]" in str(e.value)
    with pytest.raises(TypeCheckError, match="starts at column 4, off the 32-byte alignment"):
        acc_off_alignment.compile(a, np.zeros((64, 32), np.float32))


def test_reshape_that_changes_the_element_count_is_refused():
    @pl.jit
    def bad_reshape(a: pl.Tensor, c: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.store(pl.reshape(pl.load(a, [0, 0], [16, 64]), [16, 32]), [0, 0], c)
        return c

    with pytest.raises(TypeCheckError, match=r"cannot reshape \[16, 64\] \(1024 elements\) to \[16, 32\]"):
        bad_reshape.compile(f32(16, 64), np.zeros((16, 32), np.float32))


def test_a_reshape_view_and_its_source_are_both_readable():
    @pl.jit
    def both(a: pl.Tensor, c: pl.Out[pl.Tensor], d: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            x = pl.load(a, [0, 0], [16, 64])
            y = pl.reshape(x, [32, 32])
            pl.store(pl.exp(y), [0, 0], c)
            pl.store(pl.exp(x), [0, 0], d)
        return c, d

    a = f32(16, 64)
    c, d = np.zeros((32, 32), np.float32), np.zeros((16, 64), np.float32)
    both(a, c, d)
    np.testing.assert_allclose(c, np.exp(a).reshape(32, 32), rtol=1e-6)
    np.testing.assert_allclose(d, np.exp(a), rtol=1e-6)


def test_writing_a_tile_while_a_view_of_it_is_needed_is_refused():
    @pl.jit
    def overwrite(a: pl.Tensor, c: pl.Out[pl.Tensor], d: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            x = pl.load(a, [0, 0], [16, 64])
            y = pl.reshape(x, [32, 32])
            x = pl.tile.assemble(x, pl.load(a, [0, 0], [8, 64]), [8, 0])
            pl.store(y, [0, 0], c)
            pl.store(x, [0, 0], d)
        return c, d

    with pytest.raises(CompileError, match="pl.assemble returns 'x''s own storage") as e:
        overwrite.compile(f32(16, 64), np.zeros((32, 32), np.float32), np.zeros((16, 64), np.float32))
    assert "test_tile_movement.py" in str(e.value)


@pl.jit
def ragged_slice(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [32, 128])
        s = pl.slice(t, [16, 64], [8, 32], valid_shape=[5, 40])  # upstream's signature
        pl.store(pl.fillpad(s, pad_value=pl.PadValue.zero), [0, 0], out)
    return out


def test_slice_with_a_valid_shape_copies_only_the_valid_region():
    a = f32(32, 128)
    out = np.full((16, 64), 9.0, np.float32)
    ragged_slice(a, out)
    want = np.zeros((16, 64), np.float32)
    want[:5, :40] = a[8:13, 32:72]
    np.testing.assert_array_equal(out, want)


def test_a_vec_tile_or_slice_moved_into_l0_is_a_typed_error_naming_the_space():
    @pl.jit
    def from_vec(a: pl.Tensor, c: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            a_ub = pl.load(a, [0, 0], [64, 128])
            left = pl.move(a_ub[:, 0:64], target_memory=pl.Mem.Left)
            right = pl.move(
                pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right
            )
            pl.store(pl.matmul(left, right), [0, 0], c)
        return c

    with pytest.raises(
        TypeCheckError, match=r"pl.Mem.Left is filled from Mat \(L1\) only, not from pl.Mem.Vec"
    ) as e:
        from_vec.compile(f16(64, 128), np.zeros((64, 64), np.float32))
    assert "left = pl.move(a_ub[:, 0:64]" in str(e.value)
