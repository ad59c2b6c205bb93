"""The cube's fp32 kernel has an AVX-512, an AVX2 and a baseline form, picked by the CPU: all
must give the bits of the plain k-order loop, so a result never depends on the host."""

from __future__ import annotations

import numpy as np
import pytest

from pypto import _native_testing

SHAPES = [
    (16, 16, 16),
    (13, 29, 37),
    (64, 128, 96),
    (1, 5, 1),
    (4, 300, 33),
    (22, 17, 64),
    (8, 3, 32),
    (128, 64, 130),
    (19, 7, 80),
    (5, 9, 24),
    (7, 33, 12),
    (9, 40, 47),
]  # tails on every side, every row block; 64-column panels (the fused AVX-512 form's 6 x 4);
# columns narrower than two vectors: one vector, half and quarter ones, single columns


def k_order(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    s = np.zeros((a.shape[0], b.shape[1]), np.float32)
    for kk in range(a.shape[1]):
        s += np.outer(a[:, kk], b[kk])  # products rounded to fp32, then one fp32 add each
    return s


def test_the_baseline_form_always_runs():
    assert _native_testing.matmul_f32_forms()[-1] == "baseline"


@pytest.mark.parametrize("form", _native_testing.matmul_f32_forms())
@pytest.mark.parametrize(("m", "k", "n"), SHAPES)
def test_every_form_gives_the_k_order_bits(form, m, k, n):
    rng = np.random.default_rng(m * 1000 + k + n)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    c = np.full((m, n), np.nan, np.float32)
    _native_testing.matmul_f32_form(form, a, b, c)
    np.testing.assert_array_equal(c, k_order(a, b))
    start = rng.standard_normal((m, n)).astype(np.float32)
    c = start.copy()
    _native_testing.matmul_f32_form(form, a, b, c, accumulate=True)
    np.testing.assert_array_equal(c, start + k_order(a, b))


def fp16_values(shape, rng):
    """Finite fp16 values as fp32, subnormals to the largest: every product of two is exact in fp32."""
    x = np.clip(rng.standard_normal(shape) * np.exp2(rng.integers(-26, 16, shape)), -65504, 65504)
    x = x.astype(np.float16)
    x.flat[:3] = [65504, np.float16(2**-24), -0.0]
    return x.astype(np.float32)


@pytest.mark.parametrize("form", _native_testing.matmul_f32_forms())
@pytest.mark.parametrize(("m", "k", "n"), SHAPES)
def test_with_exact_products_every_form_still_gives_the_k_order_bits(form, m, k, n):
    # the fused (FMA) kernels: a * b + s rounds once either way when a * b is exact
    rng = np.random.default_rng(m * 1000 + k + n)
    a, b = fp16_values((m, k), rng), fp16_values((k, n), rng)
    c = np.full((m, n), np.nan, np.float32)
    _native_testing.matmul_f32_form(form, a, b, c, exact_products=True)
    np.testing.assert_array_equal(c, k_order(a, b))
    start = rng.standard_normal((m, n)).astype(np.float32)
    c = start.copy()
    _native_testing.matmul_f32_form(form, a, b, c, accumulate=True, exact_products=True)
    np.testing.assert_array_equal(c, start + k_order(a, b))


def test_an_unknown_form_or_bad_shapes_are_refused():
    a = np.ones((4, 4), np.float32)
    with pytest.raises(ValueError, match="no matmul form 'sse9'"):
        _native_testing.matmul_f32_form("sse9", a, a, a.copy())
    with pytest.raises(ValueError, match=r"a \[m, k\], b \[k, n\] and c \[m, n\]"):
        _native_testing.matmul_f32_form("baseline", a, np.ones((3, 4), np.float32), a.copy())


def test_repeat_runs_the_kernel_that_many_times():
    # accumulating, each call adds a @ b once more: three calls in one are three adds in k order
    rng = np.random.default_rng(7)
    a, b = fp16_values((8, 16), rng), fp16_values((16, 32), rng)
    form = _native_testing.matmul_f32_forms()[0]
    start = rng.standard_normal((8, 32)).astype(np.float32)
    once = start.copy()
    for _ in range(3):
        _native_testing.matmul_f32_form(form, a, b, once, accumulate=True, exact_products=True)
    thrice = start.copy()
    _native_testing.matmul_f32_form(form, a, b, thrice, accumulate=True, exact_products=True, repeat=3)
    np.testing.assert_array_equal(thrice, once)
    assert not np.array_equal(thrice, start + k_order(a, b))
    with pytest.raises(ValueError, match="repeat >= 1"):
        _native_testing.matmul_f32_form(form, a, b, thrice, repeat=0)
