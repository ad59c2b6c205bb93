"""The cube path through a real kernel: GM -> Mat -> Left/Right -> TMATMUL -> FIXPIPE -> GM."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest
from cube_numerics import k_order

from pypto import platforms
from pypto.errors import MemorySpaceError, ShapeMismatchError
from pypto.runtime import run_kernel_file

BF16 = np.dtype(ml_dtypes.bfloat16)


def matmul(fixture_kernel, a, b, c, at=False, bt=False, twice=False, record=False):
    return run_kernel_file(
        fixture_kernel("matmul_probe"), [a, b, c, int(at), int(bt), int(twice)], outputs={2}, record=record,
        core="aic",
    )  # fmt: skip


def operands(m, k, n, dtype, seed=0):
    rng = np.random.default_rng(seed)
    return (
        rng.uniform(-1, 1, (m, k)).astype(np.float32).astype(dtype),
        rng.uniform(-1, 1, (k, n)).astype(np.float32).astype(dtype),
    )


@pytest.mark.parametrize(
    "dtype,rtol",
    [(np.dtype(np.float32), 1e-5), (np.dtype(np.float16), 1e-3), (BF16, 1e-3)],
    ids=["fp32", "fp16", "bf16"],
)
def test_matmul_matches_numpy(fixture_kernel, dtype, rtol):
    a, b = operands(64, 128, 32, dtype)
    c = np.zeros((64, 32), np.float32)
    matmul(fixture_kernel, a, b, c)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c, ref, rtol=rtol, atol=rtol * 4)


def test_transposed_operands(fixture_kernel):
    a, b = operands(32, 64, 48, np.float16, seed=1)
    c = np.zeros((32, 48), np.float32)
    matmul(fixture_kernel, np.ascontiguousarray(a.T), np.ascontiguousarray(b.T), c, at=True, bt=True)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-3, atol=4e-3)


def test_accumulate_and_narrowing_store(fixture_kernel):
    a, b = operands(32, 32, 32, np.float16, seed=2)
    c = np.zeros((32, 32), np.float16)  # FIXPIPE narrows fp32 -> fp16 on the way out
    matmul(fixture_kernel, a, b, c, twice=True)
    ref = 2 * (a.astype(np.float32) @ b.astype(np.float32))
    np.testing.assert_allclose(c.astype(np.float32), ref, rtol=2e-3, atol=4e-3)


def test_costs_follow_the_table(fixture_kernel):
    p = platforms.get("a2a3sim")
    a, b = operands(64, 128, 32, np.float16)
    rep = matmul(fixture_kernel, a, b, np.zeros((64, 32), np.float32), record=True)
    rows = {r["name"]: r for r in rep.tasks[0].trace.rows() if r["kind"] == 0}
    cube = rows["TMATMUL"]
    # 21 + cpr 1 x ceil(64/16) x ceil(128/16) x ceil(32/16) fractals
    assert cube["end"] - cube["start"] == 21 + 4 * 8 * 2 and cube["pipe_name"] == "CUBE"
    store = rows["TSTORE"]
    assert store["pipe_name"] == "FIXPIPE"
    # the FIXPIPE drain: 164 + 64 rows x max(4.45 floor, 128 B / 118 B/cycle) (upstream L0CostModel)
    assert store["end"] - store["start"] == math.ceil(164 + 64 * max(4.45, 32 * 4 / 118))
    assert rep.pipe_busy["MTE1"] > 0 and rep.hazards == []
    moves = [r for r in rep.tasks[0].trace.rows() if r["name"] == "TMOV"]
    assert [m["end"] - m["start"] for m in moves] == [
        math.ceil(64 * 128 * 2 / p.bw_l1_to_l0a),  # on-chip: no lead (the MTE1 sweep)
        math.ceil(128 * 32 * 2 / p.bw_l1_to_l0b),
    ]


def test_fp32_costs_four_times_the_fractals(fixture_kernel):
    a, b = operands(64, 128, 32, np.float32)
    rep = matmul(fixture_kernel, a, b, np.zeros((64, 32), np.float32), record=True)
    (cube,) = [r for r in rep.tasks[0].trace.rows() if r["name"] == "TMATMUL"]
    assert cube["end"] - cube["start"] == 21 + 2 * 4 * 16 * 2  # k0 = 8 for fp32, cpr 2


def test_load_into_left_names_the_legal_route(fixture_kernel):
    with pytest.raises(
        MemorySpaceError, match="GM loads write Vec or Mat, not Left; the route into Left is Mat -> Left"
    ):
        run_kernel_file(fixture_kernel("load_into_left"), [np.zeros((16, 16), np.float16)], core="aic")


def test_fractal_tiles_need_multiples_of_16(fixture_kernel):
    a, b = operands(24, 32, 16, np.float16)
    with pytest.raises(ShapeMismatchError, match="multiple of 16"):
        matmul(fixture_kernel, a, b, np.zeros((24, 16), np.float32))


def extreme_fp16(shape, rng):
    """fp16 values over the whole range: subnormals, the largest finite, both zeros."""
    x = np.clip(rng.standard_normal(shape) * np.exp2(rng.integers(-26, 16, shape)), -65504, 65504)
    x = x.astype(np.float16)
    x.flat[:4] = [65504, -65504, np.float16(2**-24), -0.0]
    return x


@pytest.mark.parametrize("at", [False, True])
@pytest.mark.parametrize("bt", [False, True])
def test_fp16_bits_are_the_k_order_sums_in_every_layout(fixture_kernel, at, bt):
    # whole L0A/L0B tiles of several fractals each way: the fractal-at-a-time widening
    rng = np.random.default_rng(3)
    a, b = extreme_fp16((48, 64), rng), extreme_fp16((64, 32), rng)
    c = np.full((48, 32), np.nan, np.float32)
    a_in = np.ascontiguousarray(a.T) if at else a
    b_in = np.ascontiguousarray(b.T) if bt else b
    matmul(fixture_kernel, a_in, b_in, c, at=at, bt=bt)
    np.testing.assert_array_equal(c, k_order(a, b))


def wide_bf16(shape, rng, lo=-63, hi=62):
    """bf16 values of magnitudes 2^lo to 2^(hi + 1) and both zeros: products of two exact in fp32."""
    x = (
        rng.choice([-1.0, 1.0], shape)
        * rng.uniform(1, 1.99, shape)
        * np.exp2(rng.integers(lo, hi + 1, shape))
    )
    x.flat[:2] = [0.0, -0.0]
    return x.astype(BF16)


# Values outside [2^-63, 2^63) that change a row's sums if the fused kernels took them: the
# product 2^64 x 2^64 overflows to inf when rounded first (k order), but not fused with the
# -2^127 summed before it; and values whose products underflow or are subnormal.
OUTSIDE = {  # case: (a's values by [row, k], b's by [k, column])
    "overflow": ({(5, 0): -(2.0**63), (5, 1): 2.0**64}, {(0, 3): 2.0**64, (1, 3): 2.0**64}),
    "tiny": ({(5, 7): 2.0**-100}, {(7, 3): 2.0**-100}),
    "subnormal": ({(5, 7): 1e-39}, {(7, 3): 3.0}),
}


@pytest.mark.parametrize("at", [False, True])
@pytest.mark.parametrize("bt", [False, True])
@pytest.mark.parametrize("case", [None, *OUTSIDE], ids=["in-range", *OUTSIDE])
def test_bf16_bits_are_the_k_order_sums_in_every_layout(fixture_kernel, at, bt, case):
    # in range, the fused kernels (exact products); a value outside it sends the mad the general
    # way, whose products round (overflow, underflow) before they are summed, as numpy's do
    rng = np.random.default_rng(9)
    a, b = wide_bf16((48, 64), rng), wide_bf16((64, 32), rng)
    for x, values in zip((a, b), OUTSIDE.get(case, ({}, {}))):
        for where, v in values.items():
            x[where] = v
    c = np.full((48, 32), np.nan, np.float32)
    a_in = np.ascontiguousarray(a.T) if at else a
    b_in = np.ascontiguousarray(b.T) if bt else b
    matmul(fixture_kernel, a_in, b_in, c, at=at, bt=bt)
    with np.errstate(over="ignore", invalid="ignore"):
        ref = k_order(a, b)
    np.testing.assert_array_equal(c, ref)
    assert case != "overflow" or np.isinf(c[5, 3])


def test_fp16_inf_and_nan_operands_give_numpys_inf_and_nan(fixture_kernel):
    a, b = operands(32, 32, 16, np.float16, seed=4)
    a[3, 5], a[7, 0], b[9, 2] = np.inf, np.nan, -np.inf  # inf x 0 and inf - inf give NaN too
    b[0, 4] = 0
    c = np.zeros((32, 16), np.float32)
    with np.errstate(invalid="ignore"):
        ref = k_order(a, b)
    matmul(fixture_kernel, a, b, c)
    np.testing.assert_array_equal(c, ref)
    assert np.isinf(c).any() and np.isnan(c).any()


@pytest.mark.parametrize("bt", [False, True])
def test_inf_and_nan_in_the_right_operand_alone_give_numpys_bits(fixture_kernel, bt):
    # the left operand widens finite, so the right one's widening must see them: across its L0B
    # lines (untransposed: transposed and widened in one pass) or along them (transposed)
    a, b = operands(32, 32, 16, np.float16, seed=5)
    b[9, 2], b[20, 11] = -np.inf, np.nan
    c = np.zeros((32, 16), np.float32)
    with np.errstate(invalid="ignore"):
        ref = k_order(a, b)
    matmul(fixture_kernel, a, np.ascontiguousarray(b.T) if bt else b, c, bt=bt)
    np.testing.assert_array_equal(c, ref)
    assert np.isinf(c).any() and np.isnan(c).any()
