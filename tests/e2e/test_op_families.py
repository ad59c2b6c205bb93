"""The op families beyond the tutorial set, each run in a kernel on the simulator and checked
against numpy (bit-exact where the op is exact), plus the typed errors of bad uses."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import op_family_kernels as ok
import pytest

import pypto.language as pl
from pypto.errors import OutOfBoundsError, TypeCheckError

R, C = ok.R, ok.C
F32 = np.float32


def rand(dtype=F32, seed=0, lo=-4.0, hi=4.0, shape=(R, C)):
    v = np.random.default_rng(seed).uniform(lo, hi, shape)
    if np.dtype(dtype).kind in "iu":
        return np.random.default_rng(seed).integers(lo, hi, shape).astype(dtype)
    return v.astype(dtype)


@pytest.mark.parametrize("dtype", [F32, np.float16, ml_dtypes.bfloat16, np.int32])
@pytest.mark.parametrize("name", ["maximum", "minimum"])
def test_maximum_minimum_are_bit_exact(name, dtype):
    x, y = rand(dtype, 0), rand(dtype, 1)
    x[0, :4] = y[0, :4]  # ties
    ref = getattr(np, name)
    out = np.zeros_like(x)
    ok.binary(getattr(pl, name))(x, y, out)
    np.testing.assert_array_equal(out, ref(x, y))
    ok.with_scalar(getattr(pl, name), 0.5 if dtype != np.int32 else 1)(x, out)
    np.testing.assert_array_equal(out, ref(x, np.array(0.5 if dtype != np.int32 else 1, dtype)))


def test_rsqrt_sin_cos_round_the_exact_value():
    x = rand(F32, 2, 0.01, 30.0)
    out = np.zeros_like(x)
    ok.unary(pl.rsqrt)(x, out)
    np.testing.assert_array_equal(out, (1.0 / np.sqrt(x.astype(np.float64))).astype(F32))
    for name in ("sin", "cos"):
        ok.unary(getattr(pl, name))(x, out)
        exact = getattr(np, name)(x.astype(np.float64)).astype(F32)
        ulps = np.abs(out.view(np.int32) - exact.view(np.int32))
        assert ulps.max() <= 1, name
    h = rand(np.float16, 3, 0.01, 30.0)
    oh = np.zeros_like(h)
    ok.unary(pl.rsqrt)(h, oh)
    np.testing.assert_array_equal(oh, (1.0 / np.sqrt(h.astype(np.float64))).astype(np.float16))


def test_abs_and_neg_on_floats_and_ints():
    for dtype in (F32, np.int32):
        x, out = rand(dtype, 4), np.zeros((R, C), dtype)
        ok.unary(pl.abs)(x, out)
        np.testing.assert_array_equal(out, np.abs(x))
        ok.unary(pl.neg)(x, out)
        np.testing.assert_array_equal(out, -x)


CMP = [np.equal, np.not_equal, np.less, np.less_equal, np.greater, np.greater_equal]


@pytest.mark.parametrize("mode", range(6))
def test_cmp_modes_give_a_bool_mask(mode):
    x, y = rand(F32, 5).round(), rand(F32, 6).round()  # rounding makes ties common
    x[0, 0] = np.nan
    out = np.zeros((R, C), bool)
    ok.compare(mode)(x, y, out)
    np.testing.assert_array_equal(out, CMP[mode](x, y))
    ok.compare(mode, 1.0)(x, y, out)
    np.testing.assert_array_equal(out, CMP[mode](x, F32(1.0)))


def test_sel_picks_by_the_mask():
    x, y = rand(F32, 7), rand(F32, 8)
    out = np.zeros_like(x)
    ok.where_greater(x, y, out)
    np.testing.assert_array_equal(out, np.where(x > y, x, -y))


@pytest.mark.parametrize("dtype", [np.int32, np.int16, np.uint8])
def test_bitwise_ops_match_numpy(dtype):
    lo, hi = (0, 255) if dtype == np.uint8 else (-1000, 1000)
    x, y = rand(dtype, 9, lo, hi), rand(dtype, 10, lo, hi)
    out = np.zeros_like(x)
    for name, ref in (("and_", np.bitwise_and), ("or_", np.bitwise_or), ("xor", np.bitwise_xor)):
        ok.binary(getattr(pl, name))(x, y, out)
        np.testing.assert_array_equal(out, ref(x, y), err_msg=name)
        ok.with_scalar(getattr(pl, name), 0x35)(x, out)
        np.testing.assert_array_equal(out, ref(x, dtype(0x35)), err_msg=name + "s")
    ok.unary(pl.not_)(x, out)
    np.testing.assert_array_equal(out, np.invert(x))
    for name, ref in (("shl", np.left_shift), ("shr", np.right_shift)):
        ok.with_scalar(getattr(pl, name), 3)(x, out)
        np.testing.assert_array_equal(out, ref(x, dtype(3)), err_msg=name)
        counts = rand(dtype, 11, 0, 6)
        ok.binary(getattr(pl, name))(x, counts, out)
        np.testing.assert_array_equal(out, ref(x, counts), err_msg=name)


def test_a_negative_shift_count_is_an_error_at_the_line():
    x = rand(np.int32, 12, -10, 10)
    with pytest.raises(OutOfBoundsError, match="shift count -1 is negative") as e:
        ok.binary(pl.shl)(x, np.full_like(x, -1), np.zeros_like(x))
    assert "op_family_kernels.py:" in str(e.value)


def test_bitwise_on_a_float_tile_is_a_type_error_at_the_line():
    with pytest.raises(TypeCheckError, match="needs an integer tile") as e:
        ok.binary(pl.and_)(rand(F32), rand(F32), np.zeros((R, C), F32))
    assert "op_family_kernels.py:" in str(e.value)


@pytest.mark.parametrize("dtype", [F32, np.float16, np.int32])
def test_row_min_and_column_reductions(dtype):
    x = rand(dtype, 13, -100, 100)
    outs = [np.zeros((R, 1), dtype)] + [np.zeros((1, C), dtype) for _ in range(3)]
    ok.reductions(x, *outs)
    np.testing.assert_array_equal(outs[0], x.min(axis=1, keepdims=True))
    acc = x[0].copy()
    for r in range(1, R):  # the vector unit adds row by row, rounding in the dtype each step
        acc = (acc + x[r]).astype(dtype)
    np.testing.assert_array_equal(outs[1][0], acc)
    np.testing.assert_array_equal(outs[2][0], x.max(axis=0))
    np.testing.assert_array_equal(outs[3][0], x.min(axis=0))


def test_row_expand_col_expand_and_expands_broadcast():
    rv, cv = rand(F32, 14, shape=(R, 1)), rand(F32, 15, shape=(1, C))
    rv[0, 0] = -0.0
    o1, o2, o3 = (np.zeros((R, C), F32) for _ in range(3))
    ok.broadcasts(rv, cv, o1, o2, o3)
    np.testing.assert_array_equal(o1, np.broadcast_to(rv, (R, C)))
    assert np.signbit(o1[0]).all()  # a copy, not 0 + v
    np.testing.assert_array_equal(o2, np.broadcast_to(cv, (R, C)))
    np.testing.assert_array_equal(o3, np.full((R, C), 2.5, F32))


def test_gather_by_flat_index_and_out_of_range_index():
    x = rand(F32, 16)
    idx = np.random.default_rng(17).integers(0, R * C, (R, C)).astype(np.int32)
    out = np.zeros_like(x)
    ok.gather(x, idx, out)
    np.testing.assert_array_equal(out, x.reshape(-1)[idx])
    idx[3, 5] = R * C
    with pytest.raises(
        OutOfBoundsError, match=f"index {R * C} at \\[3, 5\\] is outside src's {R * C} elements"
    ):
        ok.gather(x, idx, out)


def _pairs(out):
    return out[:, 0::2], out[:, 1::2].copy().view(np.int32)


def test_sort_rows_descending_with_their_indices():
    x = rand(F32, 18).round(1)
    idx = np.tile(np.arange(C, dtype=np.int32), (R, 1))
    out = np.zeros((R, 2 * C), F32)
    ok.sort(pl.sort)(x, idx, out)
    vals, ids = _pairs(out)
    order = np.argsort(-x, axis=1, kind="stable")
    np.testing.assert_array_equal(ids, order)
    np.testing.assert_array_equal(vals, np.take_along_axis(x, order, 1))
    ok.sort(pl.tile.sort32)(x, idx, out)
    vals, ids = _pairs(out)
    for b in range(0, C, 32):
        o = np.argsort(-x[:, b : b + 32], axis=1, kind="stable") + b
        np.testing.assert_array_equal(ids[:, b : b + 32], o)


def test_scalar_read_and_write_on_the_scalar_pipe():
    x, table, out = rand(F32, 19), np.array([[0.0, 1.5]], F32), np.zeros((R, C), F32)
    ok.scalars(x, table, out)
    np.testing.assert_array_equal(out, x * F32(1.5))
    assert table[0, 0] == out[2, 3]
    rep = ok.scalars.last_report
    # two GM accesses (185 cycles each) and one on-chip read (4) on the SCALAR pipe
    assert rep.pipe_busy["SCALAR"] >= 2 * 185 + 4


def test_read_with_the_wrong_number_of_indices_is_a_type_error():
    @pl.jit
    def bad(x: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            v = pl.read(x, [0])
            pl.store(pl.muls(pl.load(x, [0, 0], [R, C]), v), [0, 0], out)
        return out

    with pytest.raises(TypeCheckError, match=r"2 indices needed for shape \[16, 64\], got 1") as e:
        bad(rand(), np.zeros((R, C), F32))
    assert "test_op_families.py:" in str(e.value)


def test_read_out_of_bounds_at_run_time_names_the_line():
    @pl.jit
    def bad(x: pl.Tensor, i: pl.INDEX, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            v = pl.read(x, [i, 0])
            pl.store(pl.muls(pl.load(x, [0, 0], [R, C]), v), [0, 0], out)
        return out

    with pytest.raises(OutOfBoundsError, match=r"TREAD: index \[16, 0\] is outside the tensor's shape") as e:
        bad(rand(), R, np.zeros((R, C), F32))
    assert "test_op_families.py:" in str(e.value)


@pytest.mark.parametrize(
    ("mode", "ref"),
    [
        ("floor", np.floor),
        ("ceil", np.ceil),
        ("trunc", np.trunc),
        ("rint", np.rint),
        ("none", np.rint),
        ("round", lambda v: np.copysign(np.floor(np.abs(v.astype(np.float64)) + 0.5), v)),  # ties away
    ],
)
def test_cast_target_type_and_modes(mode, ref):
    x = rand(F32, 20, -50, 50)
    x[0, :4] = [0.5, 1.5, -0.5, -2.5]
    out = np.zeros((R, C), np.int32)
    ok.cast(pl.INT32, mode)(x, out)
    np.testing.assert_array_equal(out, ref(x).astype(np.int32))


def test_cmp_with_a_bad_mode_and_sel_with_a_float_mask_are_type_errors():
    with pytest.raises(TypeCheckError, match="cmp_type must be 0..5"):
        ok.compare(9)(rand(), rand(), np.zeros((R, C), bool))

    @pl.jit
    def bad(x: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            a = pl.load(x, [0, 0], [R, C])
            pl.store(pl.sel(a, a, a), [0, 0], out)
        return out

    with pytest.raises(TypeCheckError, match="`mask` must be a bool tile") as e:
        bad(rand(), np.zeros((R, C), F32))
    assert "test_op_families.py:" in str(e.value)


def test_matmul_bias_adds_the_bias_row_on_the_cube():
    a = rand(np.float16, 21, -1, 1, (32, 64))
    b = rand(np.float16, 22, -1, 1, (64, 32))
    bias = rand(F32, 23, shape=(1, 32))
    out = np.zeros((32, 32), F32)
    ok.matmul_bias(a, b, bias, out)
    ref = a.astype(np.float64) @ b.astype(np.float64) + bias
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)
    assert ok.matmul_bias.last_report.pipe_busy["CUBE"] > 0


def test_compare_cost_comes_from_the_platform_table():
    from pypto.platforms import get

    p = get("a2a3sim")
    k = ok.compare(2, 1.0)
    k(rand(), rand(), np.zeros((R, C), bool))
    repeats = -(-R * C * 4 // p.vector_repeat_bytes)  # the fp32 source is the widest operand
    tcmps = int(np.ceil(p.vec_cmp_base + p.vec_cmp_per_repeat * repeats))
    # plus the wait for the load and the flag for the store on VECTOR (no pipe time: sync_cycles 0)
    assert k.last_report.pipe_busy["VECTOR"] == tcmps + 2 * p.sync_cycles == 58


def test_tensor_level_maximum_and_rsqrt_lower_to_tile_ops():
    @pl.jit
    def k(x: pl.Tensor, y: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.rsqrt(pl.maximum(pl.minimum(x, y), 0.25))
        return out

    x, y = rand(F32, 24), rand(F32, 25)
    out = np.zeros_like(x)
    k(x, y, out)
    m = np.maximum(np.minimum(x, y), F32(0.25))
    np.testing.assert_array_equal(out, (1.0 / np.sqrt(m.astype(np.float64))).astype(F32))


def test_an_op_using_a_read_value_waits_for_the_scalar_read():
    from pypto.runtime import RunConfig

    @pl.jit
    def k(x: pl.Tensor, s: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            scale = pl.read(s, [0]) * 2.0
            pl.store(pl.muls(pl.load(x, [0, 0], [R, C]), scale), [0, 0], out)
        return out

    x, out = rand(F32, 26), np.zeros((R, C), F32)
    k(x, np.array([0.75], F32), out, config=RunConfig(trace=True))
    np.testing.assert_array_equal(out, x * F32(1.5))
    rep = k.last_report
    read_end = max(end for _, end in rep.intervals("SCALAR"))
    muls_start = min(start for start, _ in rep.intervals("VECTOR"))
    assert muls_start >= read_end - 2  # (the SCALAR intervals include the flag it sets)


def test_static_misuses_of_shift_and_column_reductions_are_type_errors():
    with pytest.raises(TypeCheckError, match="shift count -2 is negative"):
        ok.with_scalar(pl.shls, -2)(rand(np.int32, 27, 0, 9), np.zeros((R, C), np.int32))
    with pytest.raises(TypeCheckError, match="column reductions take fp32/fp16/bf16/int32 tiles"):
        ok.unary(pl.col_max)(rand(np.int16, 28, 0, 9), np.zeros((1, C), np.int16))


def test_every_op_of_these_families_has_a_native_emitter():
    from pypto.codegen.emitters import EMITTERS
    from pypto.ir.ops import OPS

    names = [n for n in pl.__all__ if n not in ("tile", "tensor", "system")]
    family = {c for n in names for c in getattr(getattr(pl, n), "candidates", ())}
    family |= {"tile.sort32", "tile.cmps"}
    missing = [op for op in sorted(family) if OPS[op].level == "tile" and op not in EMITTERS]
    # ops the frontend accepts today without a native emitter belong to tile data movement
    assert set(missing) <= {"tile.reshape", "tile.concat", "tile.slice", "tile.assemble", "tile.fillpad"}
    some = ("tile.maximum", "tile.rsqrt", "tile.cmp", "tile.sel", "tile.xors", "tile.col_sum", "tile.gather")
    assert all(op in EMITTERS for op in (*some, "tile.sort", "tensor.read", "tile.matmul_bias", "tensor.dim"))


@pytest.mark.parametrize(
    "name",
    ["row_expand_max", "row_expand_min", *(f"col_expand_{n}" for n in ("add", "sub", "div", "max", "min"))],
)
def test_row_and_column_broadcast_ops(name):
    x = rand(F32, 29)
    by_row = name.startswith("row")
    v = rand(F32, 30, 0.5, 2.0, (R, 1) if by_row else (1, C))
    ref = {"add": np.add, "sub": np.subtract, "div": np.divide, "max": np.maximum, "min": np.minimum}
    out = np.zeros_like(x)
    ok.with_vector(getattr(pl, name))(x, v, out)
    np.testing.assert_array_equal(out, ref[name.rsplit("_", 1)[1]](x, v))


def test_gemv_multiplies_a_row_vector_on_the_cube():
    from pypto.platforms import get

    v = rand(np.float16, 31, -1, 1, (1, 64))
    b = rand(np.float16, 32, -1, 1, (64, 32))
    out = np.zeros((1, 32), F32)
    ok.gemv(v, b, out)
    np.testing.assert_allclose(out, v.astype(np.float64) @ b.astype(np.float64), rtol=1e-5, atol=1e-5)
    p = get("a2a3sim")  # one 16-row fractal pass: ceil(1/16) * ceil(64/16) * ceil(32/16) fractals
    cube = int(np.ceil(p.cube_base_cycles + p.cube_cpr_16bit * 1 * 4 * 2))
    assert ok.gemv.last_report.pipe_busy["CUBE"] == cube + 2 * p.sync_cycles  # + its wait and set


def test_matmul_of_a_row_vector_points_to_gemv():
    @pl.jit
    def bad(v: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            lv = pl.move(pl.load(v, [0, 0], [1, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
            rb = pl.move(pl.load(b, [0, 0], [64, 32], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
            pl.store(pl.matmul(lv, rb), [0, 0], out)
        return out

    with pytest.raises(TypeCheckError, match="is a row vector: use pl.gemv"):
        bad(rand(np.float16, shape=(1, 64)), rand(np.float16, shape=(64, 32)), np.zeros((1, 32), F32))
