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


B, HID, COLS, KT = 8, 512, 128, 128  # a decode batch of 8: half a 16-row cube fractal


@pl.jit
def decode_projection(
    x: pl.Tensor[[B, HID], pl.FP16],
    w: pl.Tensor[[HID, 2 * COLS], pl.FP16],
    res: pl.Tensor[[B, 2 * COLS], pl.FP32],
    y: pl.Out[pl.Tensor[[B, 2 * COLS], pl.FP32]],
):
    """y = res + x @ w with M = 8: a pipelined K walk into a kernel-local accumulator and a
    vector epilogue, one task per column block (examples/qwen3_layer_kernels.py at batch 8)."""
    for j in pl.parallel(2):
        with pl.at(level=pl.Level.CORE_GROUP):
            n0 = j * COLS
            acc = pl.create_tensor([B, COLS], dtype=pl.FP32)
            for kb in pl.pipeline(HID // KT, stage=2):
                xa, wb = x[:, kb * KT : kb * KT + KT], w[kb * KT : kb * KT + KT, n0 : n0 + COLS]
                if kb == 0:  # noqa: SIM108 - a kernel branch, not a value
                    acc = pl.matmul(xa, wb, out_dtype=pl.FP32)
                else:
                    acc = pl.matmul_acc(acc, xa, wb)
            y[:, n0 : n0 + COLS] = pl.add(acc, res[:, n0 : n0 + COLS])
    return y


def test_a_batch_short_of_a_fractal_is_padded_to_one_and_gives_its_rows():
    rng = np.random.default_rng(1)
    x = rng.uniform(-1, 1, (B, HID)).astype(np.float16)
    w = rng.uniform(-1, 1, (HID, 2 * COLS)).astype(np.float16)
    res = rng.standard_normal((B, 2 * COLS)).astype(np.float32)
    y = np.zeros((B, 2 * COLS), np.float32)
    decode_projection(x, w, res, y)
    ref = res + x.astype(np.float64) @ w.astype(np.float64)
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-4)
    assert decode_projection.last_report.hazards == []


@pl.jit
def short_m_and_n_transposed(
    at: pl.Tensor[[64, 24], pl.FP16],
    bt: pl.Tensor[[40, 64], pl.FP16],
    c: pl.Out[pl.Tensor[[24, 40], pl.FP32]],
):
    with pl.at(level=pl.Level.CORE_GROUP):
        c[:, :] = pl.matmul(at, bt, a_trans=True, b_trans=True, out_dtype=pl.FP32)
    return c


def test_short_m_and_n_of_transposed_operands_are_padded_too():
    rng = np.random.default_rng(2)
    at = rng.uniform(-1, 1, (64, 24)).astype(np.float16)
    bt = rng.uniform(-1, 1, (40, 64)).astype(np.float16)
    c = np.full((24, 40), -1, np.float32)
    short_m_and_n_transposed(at, bt, c)
    np.testing.assert_allclose(c, at.astype(np.float64).T @ bt.astype(np.float64).T, rtol=1e-5, atol=1e-5)
