"""pl.create_l1 + pl.gather_row (pypto/ops/l1.py): a matmul operand built in L1 from GM rows the
kernel picks at run time (a paged-KV gather), checked against numpy, priced as the GM -> L1
loads it is, and its misuses refused at the user's line."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest

import pypto.language as pl
from pypto import platforms
from pypto.errors import TypeCheckError
from pypto.runtime import RunConfig

BF = pl.BF16
BF16 = ml_dtypes.bfloat16


@pl.jit
def paged_scores(
    q: pl.Tensor[[16, 64], BF],
    pool: pl.Tensor[[256, 64], BF],
    slots: pl.Tensor[[1, 32], pl.INT32],
    run: pl.Tensor[[1, 2], pl.INT32],
    out: pl.Out[pl.Tensor[[16, 32], pl.FP32]],
):
    with pl.at(level=pl.Level.CORE_GROUP):
        kv = pl.create_l1([32, 64], BF)
        # rows 0..n-1: one contiguous run of the pool, its length read at run time
        start, n = pl.cast(pl.read(run, [0, 0]), pl.INDEX), pl.cast(pl.read(run, [0, 1]), pl.INDEX)
        kv = pl.gather_row(kv, pool, [0, 0], [start, 0], [32, 64], valid_shape=[n, 64])
        for r in pl.range(n, 32):  # the rest one by one, each from its own slot
            slot = pl.cast(pl.read(slots, [0, r]), pl.INDEX)
            kv = pl.gather_row(kv, pool, [r, 0], [slot, 0], [1, 64])
        out[:, :] = pl.matmul(q, kv, b_trans=True, out_dtype=pl.FP32)
    return out


def test_rows_gathered_into_l1_feed_the_matmul_where_they_are():
    rng = np.random.default_rng(0)
    q = rng.standard_normal((16, 64)).astype(BF16)
    pool = rng.standard_normal((256, 64)).astype(BF16)
    slots = rng.integers(0, 256, (1, 32)).astype(np.int32)
    start, n = 100, 5
    out = np.zeros((16, 32), np.float32)
    paged_scores(q, pool, slots, np.array([[start, n]], np.int32), out, config=RunConfig(trace=True))
    rows = np.concatenate([np.arange(start, start + n), slots[0, n:]])
    want = q.astype(np.float32) @ pool[rows].astype(np.float32).T
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-4)
    # each gather is a GM -> L1 TLOAD of its rows (27 single rows of 128 B, one run of 5, and
    # q's load): a row is one request, led by the transfer setup, or by the L2 hit latency when
    # its 512 B line came in with an earlier row
    p = platforms.get("a2a3sim")
    rep = paged_scores.last_report
    loads = [r["end"] - r["start"] for t in rep.tasks for r in t.trace.rows() if r["name"] == "TLOAD"]
    assert len(loads) == 32 - n + 2
    lead = (p.transfer_setup_cycles, p.l2_hit_latency_cycles)
    one_row = {math.ceil(c + p.gm_request_cycles) for c in lead}
    assert one_row == {33, 18}
    assert sorted(loads)[: 32 - n] == sorted(d for d in loads if d in one_row)


def _bad(form: str):
    @pl.jit
    def k(pool: pl.Tensor[[256, 64], BF], out: pl.Out[pl.Tensor[[32, 32], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            kv = pl.create_l1([32, 64], BF, transpose=form == "transpose")
            if form == "window":
                kv = pl.gather_row(kv, pool, [0, 0], [0, 0], [64, 64])
            else:
                kv = pl.gather_row(kv, pool, [0, 0], [0, 0], [32, 64])
            out[:, :] = pl.matmul(pool[0:32, :], kv, b_trans=True, out_dtype=pl.FP32)
        return out

    return k


@pytest.mark.parametrize(
    ("form", "message"),
    [
        ("transpose", r"transpose=True \(a ZN-layout fill\) is not supported"),
        ("window", r"the window \[64, 64\] is larger than the accumulator \[32, 64\]"),
    ],
)
def test_a_misused_l1_accumulator_is_refused_at_the_line(form, message):
    with pytest.raises(TypeCheckError, match=message + r".*test_l1_gather.py:\d+"):
        _bad(form).lower(np.zeros((256, 64), BF16), np.zeros((32, 32), np.float32))
