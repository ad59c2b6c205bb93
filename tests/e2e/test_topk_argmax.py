"""Model kernels at tensor level on the gather / sort family: row top-k with pl.sort32,
pl.mrgsort and pl.gather(mask_pattern=...), and greedy sampling (argmax over a vocabulary)
with pl.arange, each against numpy."""

from __future__ import annotations

import numpy as np

import pypto.language as pl

ROWS, N, K, ROW_TILE = 16, 512, 16, 8


@pl.jit
def topk(scores: pl.Tensor[[ROWS, N], pl.FP32], out: pl.Out[pl.Tensor[[ROWS, 2 * K], pl.FP32]]):
    """out[r] = the K largest scores of row r, then their column indices (as the bits of the
    index half of each pair: one tensor, as a scope writes one tensor that flows out)."""
    for r0 in pl.parallel(0, ROWS, ROW_TILE):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="topk_block"):
            idx_init = pl.arange(0, [1, N], dtype=pl.UINT32)
            for ri in pl.range(ROW_TILE):
                r = r0 + ri
                s = pl.sort32(scores[r : r + 1, :], idx_init)  # runs of 32 pairs
                s = pl.mrgsort(s, block_len=64)  # 4 runs merged: 128 pairs
                s = pl.mrgsort(s, block_len=256)  # the whole row, descending
                pairs = s[:, 0 : 2 * K]
                out[r : r + 1, 0:K] = pl.gather(pairs, mask_pattern=pl.tile.MaskPattern.P0101)
                out[r : r + 1, K : 2 * K] = pl.gather(pairs, mask_pattern=pl.tile.MaskPattern.P1010)
    return out


def test_topk_of_each_row_matches_numpy():
    x = np.random.default_rng(0).standard_normal((ROWS, N)).astype(np.float32)
    out = np.zeros((ROWS, 2 * K), np.float32)
    topk(x, out)
    vals, idx = out[:, :K], out[:, K:].copy().view(np.uint32)
    order = np.argsort(-x, axis=1, kind="stable")[:, :K]
    np.testing.assert_array_equal(idx, order)
    np.testing.assert_array_equal(vals, np.take_along_axis(x, order, 1))


B, VOCAB, CHUNK, RT = 16, 152064, 1536, 4  # 99 chunks of the vocabulary; 4 rows per task


@pl.jit
def greedy(logits: pl.Tensor[[B, VOCAB], pl.FP32], token: pl.Out[pl.Tensor[[B, 1], pl.INT32]]):
    """token[r] = argmax(logits[r]): the first index of the row's largest value, as torch."""
    for r0 in pl.parallel(0, B, RT):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="argmax_rows"):
            best = pl.full([RT, 1], dtype=pl.FP32, value=-3.0e38)
            best_idx = pl.full([RT, 1], dtype=pl.INT32, value=0)
            zeros = pl.full([RT, CHUNK], dtype=pl.INT32, value=0)
            past = pl.full([RT, CHUNK], dtype=pl.INT32, value=VOCAB)  # no column is this far
            for c0 in pl.range(0, VOCAB, CHUNK):
                x = logits[r0 : r0 + RT, c0 : c0 + CHUNK]
                m = pl.row_max(x)  # the chunk's best value per row
                cols = pl.col_expand(zeros, pl.arange(c0, [1, CHUNK], dtype=pl.INT32))
                at_max = pl.sel(pl.cmp(x, pl.row_expand(x, m), cmp_type=0), cols, past)
                first = pl.row_min(at_max)  # its first column
                better = pl.cmp(m, best, cmp_type=4)  # strictly: an earlier chunk keeps a tie
                best_idx = pl.sel(better, first, best_idx)
                best = pl.maximum(best, m)
            token[r0 : r0 + RT, :] = best_idx
    return token


def test_greedy_sampling_is_the_argmax_of_each_row():
    rng = np.random.default_rng(1)
    logits = rng.standard_normal((B, VOCAB)).astype(np.float32)
    logits[3, [7, 150000]] = 99.0  # a tie across chunks: the first wins
    logits[5, [2000, 2001]] = 50.0  # a tie inside a chunk
    token = np.zeros((B, 1), np.int32)
    greedy(logits, token)
    np.testing.assert_array_equal(token[:, 0], np.argmax(logits, axis=1))
