"""A matmul operand window with ``valid_shape`` at tensor level (the tail block of M or N in
model code): only the valid rows are loaded and multiplied, the result carries them and its
store writes them, though the window reaches past the source; a cut K axis is refused."""

from __future__ import annotations

import numpy as np
import pytest

import pypto.language as pl
from pypto.errors import CompileError

T, K, N, TT = 24, 64, 32, 16


@pl.jit
def tail_rows(
    x: pl.Tensor[[T, K], pl.FP16], w: pl.Tensor[[N, K], pl.FP16], out: pl.Out[pl.Tensor[[32, N], pl.FP32]]
):
    for t0 in pl.range(0, T, TT):
        with pl.at(level=pl.Level.CORE_GROUP):
            rows = pl.min(TT, T - t0)
            xs = pl.slice(x, [TT, K], [t0, 0], valid_shape=[rows, K])  # [16, 64] at row 16 of 24
            out[t0 : t0 + TT, :] = pl.matmul(xs, w[:, :], b_trans=True, out_dtype=pl.FP32)
    return out


def test_a_tail_window_multiplies_and_stores_its_valid_rows_only():
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, (T, K)).astype(np.float16)
    w = rng.uniform(-1, 1, (N, K)).astype(np.float16)
    out = np.full((32, N), -1, np.float32)
    tail_rows(x, w, out)
    np.testing.assert_allclose(out[:T], x.astype(np.float64) @ w.astype(np.float64).T, rtol=1e-5, atol=1e-5)
    assert (out[T:] == -1).all()  # the 8 rows past the source are neither read nor written


def test_a_cut_k_axis_is_refused():
    @pl.jit
    def cut_k(
        x: pl.Tensor[[TT, K], pl.FP16],
        w: pl.Tensor[[K, N], pl.FP16],
        out: pl.Out[pl.Tensor[[TT, N], pl.FP32]],
    ):
        with pl.at(level=pl.Level.CORE_GROUP):
            xs = pl.slice(x, [TT, K], [0, 0], valid_shape=[TT, 32])
            out[:, :] = pl.matmul(xs, w[:, :], out_dtype=pl.FP32)
        return out

    with pytest.raises(CompileError, match="must keep its whole K axis") as e:
        cut_k.compile()
    assert "test_matmul_tails.py" in str(e.value)


@pl.jit
def store_valid_columns(p: pl.Tensor[[16, 8], pl.FP32], post: pl.Out[pl.Tensor[[32, 4], pl.FP32]]):
    """Model code's pattern: a padded [16, 8] tile whose valid part [16, 4] fills a [16, 4] window."""
    for t0 in pl.range(0, 32, 16):
        with pl.at(level=pl.Level.CORE_GROUP):
            post[t0 : t0 + 16, 0:4] = pl.slice(p, [16, 8], [0, 0], valid_shape=[16, 4])
    return post


def test_a_slice_stored_into_a_window_of_its_valid_shape_stores_its_valid_part():
    p = np.arange(16 * 8, dtype=np.float32).reshape(16, 8)
    post = np.zeros((32, 4), np.float32)
    store_valid_columns(p, post)
    np.testing.assert_array_equal(post, np.vstack([p[:, :4], p[:, :4]]))
