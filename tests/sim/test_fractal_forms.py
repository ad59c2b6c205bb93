"""The whole-fractal moves of the cube's 2-byte layouts (the 16 x 16 transpose into L0B, the
fp16 or bf16 -> fp32 widening of a mad's operands, and both in one pass for an L0B operand read
across its lines) have AVX-512, F16C and portable forms, picked by the CPU: each must give
numpy's bits, and each widening must report what its fused kernels cannot take (an fp16 inf or
NaN; a bf16 whose products with others might round: zero excepted, outside [2^-63, 2^63)) so
the mad converts those the general way."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from pypto import _native_testing


def test_the_portable_form_always_runs():
    assert _native_testing.fractal_forms()[-1] == "portable"


def finite_fp16(rng):
    x = np.clip(rng.standard_normal((16, 16)) * np.exp2(rng.integers(-26, 16, (16, 16))), -65504, 65504)
    x = x.astype(np.float16)
    x.flat[:4] = [65504, -65504, np.float16(2**-24), -0.0]  # extremes, a subnormal, -0
    return x


@pytest.mark.parametrize("form", _native_testing.fractal_forms())
def test_every_form_transposes_and_widens_exactly(form):
    x = finite_fp16(np.random.default_rng(5))
    t, w, wt, finite, finite_t = _native_testing.fractal_form(form, x.view(np.uint16))
    np.testing.assert_array_equal(t, x.view(np.uint16).T)
    assert finite and finite_t
    np.testing.assert_array_equal(w.view(np.uint32), x.astype(np.float32).view(np.uint32))
    np.testing.assert_array_equal(wt.view(np.uint32), x.T.astype(np.float32).view(np.uint32))


@pytest.mark.parametrize("form", _native_testing.fractal_forms())
@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan])
@pytest.mark.parametrize("at", [(11, 13), (0, 0), (15, 15), (3, 12), (12, 3)])  # every 8 x 8 quarter
def test_every_form_reports_inf_and_nan(form, bad, at):
    x = finite_fp16(np.random.default_rng(6))
    x[at] = bad
    t, _, _, finite, finite_t = _native_testing.fractal_form(form, x.view(np.uint16))
    assert not finite and not finite_t
    np.testing.assert_array_equal(t, x.view(np.uint16).T)  # the transpose moves bits, NaN too


def test_an_unknown_form_or_bad_shape_is_refused():
    with pytest.raises(ValueError, match="no fractal form 'neon'"):
        _native_testing.fractal_form("neon", np.zeros((16, 16), np.uint16))
    with pytest.raises(ValueError, match=r"\[16, 16\]"):
        _native_testing.fractal_form("portable", np.zeros((8, 16), np.uint16))


def bf16_in_range(rng):
    """bf16 values of magnitude in [2^-63, 2^63), zeros of both signs among them."""
    sign = rng.choice([-1.0, 1.0], (16, 16))
    x = sign * rng.uniform(1, 1.99, (16, 16)) * np.exp2(rng.integers(-63, 63, (16, 16)))
    x.flat[:4] = [2.0**-63, -(2.0**63 - 2.0**55), 0.0, -0.0]  # the range's ends (the largest bf16 below 2^63)
    return x.astype(ml_dtypes.bfloat16)


@pytest.mark.parametrize("form", _native_testing.fractal_forms())
def test_every_form_widens_bf16_exactly_and_passes_its_exact_range(form):
    x = bf16_in_range(np.random.default_rng(7))
    t, w, wt, exact, exact_t = _native_testing.fractal_form(form, x.view(np.uint16), bf16=True)
    assert exact and exact_t
    np.testing.assert_array_equal(t, x.view(np.uint16).T)
    np.testing.assert_array_equal(w.view(np.uint32), x.astype(np.float32).view(np.uint32))
    np.testing.assert_array_equal(wt.view(np.uint32), x.T.astype(np.float32).view(np.uint32))


@pytest.mark.parametrize("form", _native_testing.fractal_forms())
@pytest.mark.parametrize(
    "bad", [2.0**63, -(2.0**-64), 1e-39, np.inf, np.nan], ids=["2^63", "-2^-64", "subnormal", "inf", "nan"]
)
@pytest.mark.parametrize("at", [(11, 13), (0, 0), (15, 15), (3, 12), (12, 3)])
def test_every_form_reports_a_bf16_outside_the_exact_range(form, bad, at):
    x = bf16_in_range(np.random.default_rng(8))
    x[at] = bad
    t, w, wt, exact, exact_t = _native_testing.fractal_form(form, x.view(np.uint16), bf16=True)
    assert not exact and not exact_t
    # the bits are still moved up 16 (NaN payloads kept): only the fused kernel is refused
    np.testing.assert_array_equal(w.view(np.uint32), x.view(np.uint16).astype(np.uint32) << 16)
    np.testing.assert_array_equal(wt.view(np.uint32), x.T.view(np.uint16).astype(np.uint32) << 16)
