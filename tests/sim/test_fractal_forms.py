"""The whole-fractal moves of the cube's 2-byte layouts (the 16 x 16 transpose into L0B, the
fp16 -> fp32 widening of a mad's operands, and both in one pass for an L0B operand read across
its lines) have AVX-512, F16C and portable forms, picked by the CPU: each must give numpy's bits,
and each widening must report inf/NaN so the mad converts those the general way."""

from __future__ import annotations

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
