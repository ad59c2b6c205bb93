"""Every vector ISA op x dtype against numpy, through a real kernel (isa_probe.cpp)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from pypto import _native_testing
from pypto.runtime import run_kernel_file

BF16 = np.dtype(ml_dtypes.bfloat16)
FLOATS = [np.dtype(np.float32), np.dtype(np.float16), BF16]
ADD, SUB, MUL, DIV, MAX, MIN = range(6)
EXP, LOG, SQRT, RECIP, RELU, NEG, ABS = range(7)
RSUM, RMAX, RMIN = range(3)
K_BINARY, K_SCALAR, K_UNARY, K_FILL, K_CVT, K_REDUCE, K_ROWEXP, K_COLEXP, K_ATOMIC, K_MOV = range(10)
RINT, TRUNC, FLOOR, CEIL = range(4)


def probe(fixture_kernel, kind, op, a, b, out, s=0.0, rmode=0):
    run_kernel_file(fixture_kernel("isa_probe"), [a, b, out, kind, op, float(s), rmode], outputs={2})
    return out


def data(dtype, shape=(16, 64), lo=-4.0, hi=4.0, seed=0):
    rng = np.random.default_rng(seed)
    if dtype == np.int32:
        return rng.integers(-1000, 1000, size=shape, dtype=np.int32)
    return rng.uniform(lo, hi, size=shape).astype(np.float32).astype(dtype)


def f32_then_round(fn, dtype, *xs):
    """The ISA's rule for 16-bit floats: compute in fp32, round the result back RNE."""
    return fn(*(x.astype(np.float32) for x in xs)).astype(dtype)


NP_BINARY = {
    ADD: np.add,
    SUB: np.subtract,
    MUL: np.multiply,
    DIV: np.divide,
    MAX: np.maximum,
    MIN: np.minimum,
}


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("op", list(NP_BINARY))
def test_binary_float(fixture_kernel, op, dtype):
    a, b = data(dtype, seed=1), data(dtype, seed=2, lo=0.5, hi=3.0)
    out = probe(fixture_kernel, K_BINARY, op, a, b, np.zeros_like(a))
    np.testing.assert_array_equal(out, f32_then_round(NP_BINARY[op], dtype, a, b))


def test_binary_int32_wraps_and_truncates(fixture_kernel):
    a = np.array([[2**31 - 1, -7, 7, -(2**31), 9, 0, 5, -5]], dtype=np.int32)
    b = np.array([[1, 2, -2, -1, 0, 3, 5, 5]], dtype=np.int32)
    for op, expect in [
        (ADD, (a.astype(np.int64) + b).astype(np.int32)),
        (MUL, a * b),
        (SUB, a - b),
        (MAX, np.maximum(a, b)),
    ]:
        np.testing.assert_array_equal(probe(fixture_kernel, K_BINARY, op, a, b, np.zeros_like(a)), expect)
    div = probe(fixture_kernel, K_BINARY, DIV, a, b, np.zeros_like(a))
    np.testing.assert_array_equal(div, [[2**31 - 1, -3, -3, -(2**31), 0, 0, 1, -1]])  # x/0 = 0


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("op", list(NP_BINARY))
def test_scalar_forms(fixture_kernel, op, dtype):
    a = data(dtype, seed=3)
    s = 1.75
    out = probe(fixture_kernel, K_SCALAR, op, a, a, np.zeros_like(a), s=s)
    expect = f32_then_round(lambda x: NP_BINARY[op](x, np.float32(s)), dtype, a)
    np.testing.assert_array_equal(out, expect)


UNARY = {
    EXP: (np.exp, -10, 10),
    LOG: (np.log, 1e-3, 1e3),
    SQRT: (np.sqrt, 0, 100),
    RECIP: (np.reciprocal, 0.1, 10),
    RELU: (lambda x: np.maximum(x, 0), -5, 5),
    NEG: (np.negative, -5, 5),
    ABS: (np.abs, -5, 5),
}


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("op", list(UNARY))
def test_unary_float(fixture_kernel, op, dtype):
    fn, lo, hi = UNARY[op]
    a = data(dtype, lo=lo, hi=hi, seed=4)
    out = probe(fixture_kernel, K_UNARY, op, a, a, np.zeros_like(a))
    expect = f32_then_round(fn, dtype, a)
    if op in (EXP, LOG) and dtype == np.float32:  # our own exp/log: within 2 ulp of numpy
        np.testing.assert_allclose(out, expect, rtol=1e-6, atol=0)
    elif op in (EXP, LOG):  # rounding a <= 2 ulp fp32 result can flip one 16-bit ulp
        np.testing.assert_allclose(out.astype(np.float32), expect.astype(np.float32), rtol=1e-2)
    else:
        np.testing.assert_array_equal(out, expect)


def test_exp_within_ulp_over_its_range(fixture_kernel):
    # An odd length, so the vectorised loop's partial last step runs too; down into the
    # subnormal results (x < -87.3), where the scaling by 2^k must still round once.
    a = np.linspace(-103.0, 88.7, 4099, dtype=np.float32).reshape(1, -1)
    out = probe(fixture_kernel, K_UNARY, EXP, a, a, np.zeros_like(a))
    exact = np.exp(a.astype(np.float64))
    ulp = np.spacing(exact.astype(np.float32)).astype(np.float64)
    assert np.max(np.abs(out - exact) / ulp) <= 1.02


def test_exp_log_edge_values(fixture_kernel):
    a = np.array([[0.0, -0.0, 88.8, -104.0, np.inf, -np.inf, np.nan, 1e-40]], dtype=np.float32)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(probe(fixture_kernel, K_UNARY, EXP, a, a, np.zeros_like(a)), np.exp(a))
        b = np.array([[1.0, 0.0, -1.0, np.inf, np.nan, 1e-40, 2.0, 1e30]], dtype=np.float32)
        out = probe(fixture_kernel, K_UNARY, LOG, b, b, np.zeros_like(b))
        np.testing.assert_allclose(out, np.log(b), rtol=1e-6)


@pytest.mark.parametrize("op,expect", [(RELU, np.maximum), (NEG, None), (ABS, None)])
def test_unary_int32(fixture_kernel, op, expect):
    a = data(np.int32, seed=5)
    out = probe(fixture_kernel, K_UNARY, op, a, a, np.zeros_like(a))
    ref = {RELU: np.maximum(a, 0), NEG: -a, ABS: np.abs(a)}[op]
    np.testing.assert_array_equal(out, ref)


@pytest.mark.parametrize("dtype", [*FLOATS, np.dtype(np.int32)], ids=str)
def test_expands_fills(fixture_kernel, dtype):
    a = data(dtype)
    out = probe(fixture_kernel, K_FILL, 0, a, a, np.zeros_like(a), s=-2.5)
    expect = np.full_like(a, -2 if dtype == np.int32 else -2.5)
    np.testing.assert_array_equal(out, expect)


@pytest.mark.parametrize(
    "src,dst",
    [
        (np.float32, np.float16),
        (np.float32, BF16),
        (np.float16, np.float32),
        (BF16, np.float32),
        (np.int32, np.float32),
        (np.float16, BF16),
    ],
)
def test_cvt_float_pairs_round_to_nearest_even(fixture_kernel, src, dst):
    lo, hi = (-60000, 60000) if src == np.float16 else (-70000, 70000)
    a = data(np.dtype(src), lo=lo, hi=hi) if src != np.int32 else data(np.int32)
    out = probe(fixture_kernel, K_CVT, 0, a, a, np.zeros(a.shape, dtype=dst))
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(out, a.astype(np.float32).astype(dst))


def fp32_to_fp16_edges() -> np.ndarray:
    """[64, 128] fp32 values at every kind of fp16 rounding edge: ties between neighbouring
    fp16 values (normal and subnormal) and one fp32 step either side of them, the overflow
    threshold, fp32 subnormals, signed zeros, infinities and NaNs with payloads."""
    rng = np.random.default_rng(21)
    h = rng.integers(0, 0x7BFF, 1536, dtype=np.uint16)  # finite, positive fp16 values
    h[:64] = np.arange(64, dtype=np.uint16)  # the smallest subnormals
    lo = h.view(np.float16).astype(np.float32)
    hi = (h + 1).view(np.float16).astype(np.float32)
    ties = (lo + (hi - lo) / 2).astype(np.float32)  # exact: 12 significant bits
    near = np.concatenate([ties, np.nextafter(ties, np.inf), np.nextafter(ties, -np.inf)])
    special = np.array(
        [0.0, 65504.0, 65519.996, 65520.0, 1e10, np.inf, 1e-40, 2.0**-25, 2.0**-24, 2.0**-14 * 0.99],
        np.float32,
    )
    nan_bits = np.array([0x7FC00000, 0x7F800001, 0x7FA02000, 0x7FFFFFFF, 0x7F802000], np.uint32)
    vals = np.concatenate([near, special, nan_bits.view(np.float32)])
    vals = np.concatenate([vals, -vals])
    out = np.resize(vals, 64 * 128).reshape(64, 128)
    return out


def fp16_bits(a: np.ndarray) -> np.ndarray:
    """The cast's fp16 bits: round to nearest, ties to even, subnormals included; overflow to
    inf; NaN keeps its sign and the top 10 bits of its payload, with the quiet bit set."""
    bits = a.view(np.uint32)
    nan = (bits & 0x7FFFFFFF) > 0x7F800000
    with np.errstate(over="ignore"):
        expect = a.astype(np.float16).view(np.uint16).copy()
    expect[nan] = ((bits[nan] >> 16) & 0x8000) | 0x7E00 | ((bits[nan] >> 13) & 0x3FF)
    return expect


def test_cvt_fp32_to_fp16_at_every_rounding_edge(fixture_kernel):
    a = fp32_to_fp16_edges()
    out = probe(fixture_kernel, K_CVT, 0, a, a, np.zeros(a.shape, dtype=np.float16)).view(np.uint16)
    np.testing.assert_array_equal(out, fp16_bits(a))


@pytest.mark.parametrize("form", _native_testing.fp16_encode_forms())
@pytest.mark.parametrize("n", [1, 7, 8, 4099])  # whole vectors and every tail
def test_every_fp16_cast_form_gives_the_same_bits(form, n):
    # The CPU picks one form; on a CPU with F16C the portable one must still be right.
    a = np.resize(fp32_to_fp16_edges().ravel()[::-1], n)
    np.testing.assert_array_equal(_native_testing.fp16_encode_form(form, a), fp16_bits(a))


def test_cvt_bf16_ties_to_even(fixture_kernel):
    # 1 + 2^-8 lies exactly between two bf16 values: RNE keeps the even one (1.0).
    a = np.array([[1 + 2**-8, 1 + 3 * 2**-8, -(1 + 2**-8), 3.0e38]], dtype=np.float32)
    out = probe(fixture_kernel, K_CVT, 0, a, a, np.zeros(a.shape, dtype=BF16))
    np.testing.assert_array_equal(out.astype(np.float32), [[1.0, 1 + 2**-6, -1.0, a[0, 3].astype(BF16)]])


@pytest.mark.parametrize("mode,fn", [(RINT, np.rint), (TRUNC, np.trunc), (FLOOR, np.floor), (CEIL, np.ceil)])
def test_cvt_to_int32_round_modes(fixture_kernel, mode, fn):
    a = np.array([[2.5, 3.5, -2.5, -0.4, 1.6, -1.6, 1e10, -1e10]], dtype=np.float32)
    out = probe(fixture_kernel, K_CVT, 0, a, a, np.zeros(a.shape, dtype=np.int32), rmode=mode)
    expect = np.clip(fn(a.astype(np.float64)), -(2**31), 2**31 - 1).astype(np.int32)
    np.testing.assert_array_equal(out, expect)


@pytest.mark.parametrize("dtype", [*FLOATS, np.dtype(np.int32)], ids=str)
@pytest.mark.parametrize("op", [RSUM, RMAX, RMIN])
def test_row_reductions(fixture_kernel, op, dtype):
    a = data(dtype, shape=(16, 128), seed=6)
    out = probe(fixture_kernel, K_REDUCE, op, a, a, np.zeros((16, 1), dtype=dtype))
    fn = {RSUM: np.sum, RMAX: np.max, RMIN: np.min}[op]
    expect = fn(a.astype(np.float64 if dtype != np.int32 else np.int64), axis=1, keepdims=True)
    if op == RSUM and dtype != np.int32:
        tol = 1e-5 if dtype == np.float32 else 1e-2
        np.testing.assert_allclose(out.astype(np.float64), expect, rtol=tol, atol=tol)
    else:
        np.testing.assert_array_equal(out, expect.astype(dtype))


def lanes_then_tree(row: np.ndarray, op: int) -> np.float32:
    """A float row's reduction in the ISA's order, in fp32: 64 interleaved partial results
    (lane j takes elements j, j + 64, ... in turn), then lane j takes lane j + w for w = 32,
    16, ..., 1. MAX/MIN keep the left operand when it is NaN or strictly wins."""

    def step(x, y):
        if op == RSUM:
            return np.float32(x + y)
        wins = x > y if op == RMAX else x < y
        return x if (wins or x != x) else y

    lanes = [np.float32({RSUM: 0.0, RMAX: -np.inf, RMIN: np.inf}[op])] * 64
    for i, v in enumerate(row.astype(np.float32)):
        lanes[i % 64] = step(lanes[i % 64], v)
    w = 32
    while w:
        lanes = [step(lanes[j], lanes[j + w]) for j in range(w)]
        w //= 2
    return lanes[0]


def reduction_rows(cols: int) -> np.ndarray:
    """Magnitudes 2^-12 .. 2^12 make every reassociation of a sum visible in its last bits;
    signed zeros and a NaN make max/min's choice between equal or unordered operands visible."""
    rng = np.random.default_rng(13)
    a = (rng.uniform(-1, 1, (8, cols)) * 2.0 ** rng.integers(-12, 13, (8, cols))).astype(np.float32)
    a[1, ::3] = 0.0
    a[1, 1::3] = -0.0
    a[2, 70 % cols] = np.nan
    return a


@pytest.mark.parametrize("cols", [1, 17, 56, 128, 200])
@pytest.mark.parametrize("op", [RSUM, RMAX, RMIN])
def test_row_reductions_keep_their_order_to_the_bit(fixture_kernel, op, cols):
    a = reduction_rows(cols)
    out = probe(fixture_kernel, K_REDUCE, op, a, a, np.zeros((8, 1), np.float32))
    expect = np.array([[lanes_then_tree(r, op)] for r in a], np.float32)
    np.testing.assert_array_equal(out.view(np.uint32), expect.view(np.uint32))


@pytest.mark.parametrize("form", _native_testing.reduce_rows_f32_forms())
@pytest.mark.parametrize("cols", [1, 17, 128, 2048])
@pytest.mark.parametrize("op", [RSUM, RMAX, RMIN])
def test_every_row_reduction_form_keeps_the_order(form, op, cols):
    # The CPU picks one form; on a CPU with AVX-512 the portable one must still be right.
    a = reduction_rows(cols)
    out = _native_testing.reduce_rows_f32_form(form, op, a)
    expect = np.array([lanes_then_tree(r, op) for r in a], np.float32)
    np.testing.assert_array_equal(out.view(np.uint32), expect.view(np.uint32))


def test_an_unknown_row_reduction_form_is_refused():
    with pytest.raises(ValueError, match="no reduce_rows_f32 form sse9"):
        _native_testing.reduce_rows_f32_form("sse9", RSUM, np.ones((2, 4), np.float32))


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("op", [ADD, SUB, MUL, DIV])
def test_row_and_col_broadcast(fixture_kernel, op, dtype):
    a = data(dtype, shape=(16, 64), seed=7)
    v_row = data(dtype, shape=(16, 1), lo=0.5, hi=2, seed=8)
    v_col = data(dtype, shape=(1, 64), lo=0.5, hi=2, seed=9)
    fn = NP_BINARY[op]
    out = probe(fixture_kernel, K_ROWEXP, op, a, v_row, np.zeros_like(a))
    np.testing.assert_array_equal(out, f32_then_round(fn, dtype, a, v_row))
    out = probe(fixture_kernel, K_COLEXP, op, a, v_col, np.zeros_like(a))
    np.testing.assert_array_equal(out, f32_then_round(fn, dtype, a, v_col))


@pytest.mark.parametrize("dtype", [np.dtype(np.float32), np.dtype(np.int32)], ids=str)
def test_atomic_store_adds_into_gm(fixture_kernel, dtype):
    a = data(dtype, seed=10)
    out = data(dtype, seed=11)
    before = out.copy()
    probe(fixture_kernel, K_ATOMIC, 0, a, a, out)
    np.testing.assert_array_equal(out, before + a)


def test_tmov_copies(fixture_kernel):
    a = data(np.dtype(np.float32), seed=12)
    np.testing.assert_array_equal(probe(fixture_kernel, K_MOV, 0, a, a, np.zeros_like(a)), a)
