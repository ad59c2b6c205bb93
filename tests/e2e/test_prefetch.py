"""pl.prefetch (pypto/ops/prefetch.py, TPREFETCH in csrc/chip/isa/transfer.cpp): an L2 warm
issued ahead of the kernels that read a region. Values never change; the warmed lines make a
later load hit, and the warm itself is priced as a GM read of its bytes on MTE2."""

from __future__ import annotations

import math

import numpy as np
import pytest

import pypto.language as pl
from pypto import platforms
from pypto.errors import MisplacedOpError, TypeCheckError
from pypto.frontend import parse_text
from pypto.runtime import RunConfig

F32 = pl.FP32
W = pl.Tensor[[64, 256], F32]


@pl.jit
def warmed_add(
    w: pl.Tensor[[64, 256], F32], x: pl.Tensor[[64, 256], F32], out: pl.Out[pl.Tensor[[64, 256], F32]]
):
    w_flat = pl.reshape(w, [64 * 256])  # upstream's region: one flat dim
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="warm_w") as warm:
        ctx = pl.prefetch.make_context()
        pl.prefetch.async_prefetch(w_flat, ctx)
    with pl.at(level=pl.Level.CORE_GROUP, deps=[warm]):
        out[:, :] = pl.add(x, w)
    return out


@pl.jit
def cold_add(
    w: pl.Tensor[[64, 256], F32], x: pl.Tensor[[64, 256], F32], out: pl.Out[pl.Tensor[[64, 256], F32]]
):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:, :] = pl.add(x, w)
    return out


def _rows(rep, name: str) -> list[int]:
    return sorted(r["end"] - r["start"] for t in rep.tasks for r in t.trace.rows() if r["name"] == name)


def test_a_prefetch_warms_the_l2_so_the_next_task_loads_hit():
    rng = np.random.default_rng(0)
    w, x = (rng.standard_normal((64, 256)).astype(np.float32) for _ in range(2))
    warm_out, cold_out = np.zeros_like(x), np.zeros_like(x)
    warmed_add(w, x, warm_out, config=RunConfig(trace=True))
    cold_add(w, x, cold_out, config=RunConfig(trace=True))
    np.testing.assert_array_equal(warm_out, x + w)  # a hint: the values are the same
    np.testing.assert_array_equal(cold_out, x + w)
    p = platforms.get("a2a3sim")
    warm, cold = warmed_add.last_report, cold_add.last_report
    lines = w.nbytes // p.l2_line_bytes
    assert warm.memory["l2_hits"] == lines and cold.memory["l2_hits"] == 0
    # the warm: one 64 KiB row read at the GM -> L1 route, 30 + 65536 / 78 = 871 cycles
    assert (
        _rows(warm, "TPREFETCH") == [math.ceil(p.transfer_setup_cycles + w.nbytes / p.bw_gm_to_l1)] == [871]
    )
    # w's load then starts with the hit latency instead of the transfer setup; x's still misses
    miss = _rows(cold, "TLOAD")
    assert miss[0] == miss[1]
    assert _rows(warm, "TLOAD") == [miss[0] - (p.transfer_setup_cycles - p.l2_hit_latency_cycles), miss[0]]


@pl.jit
def wait_then_add(
    w: pl.Tensor[[64, 256], F32], x: pl.Tensor[[64, 256], F32], out: pl.Out[pl.Tensor[[64, 256], F32]]
):
    w_flat = pl.reshape(w, [1, 64 * 256])
    with pl.at(level=pl.Level.CORE_GROUP):
        ctx = pl.prefetch.make_context()
        event = pl.prefetch.async_prefetch(w_flat, ctx)
        done = pl.prefetch.wait(event, pl.prefetch.session(ctx))
        if done:
            out[:, :] = pl.add(x, w)
    return out


def test_wait_returns_true_once_the_prefetch_landed_and_the_dump_shows_it():
    w, x = np.ones((64, 256), np.float32), np.full((64, 256), 2.0, np.float32)
    out = np.zeros_like(x)
    wait_then_add(w, x, out, config=RunConfig(trace=True))
    np.testing.assert_array_equal(out, x + w)
    rep = wait_then_add.last_report
    ends = {r["name"]: r["end"] for t in rep.tasks for r in t.trace.rows()}
    starts = [r["start"] for t in rep.tasks for r in t.trace.rows() if r["name"] == "TLOAD"]
    assert min(starts) >= ends["TPREFETCH"]  # the barrier on MTE2: nothing loads before it lands
    compiled = wait_then_add.compile(w, x, out, config=RunConfig(dump_passes=True))
    dump = next((compiled.output_dir / "passes_dump").glob("*_after_ConvertTensorToTileOps.py")).read_text()
    assert "pl.prefetch.async_prefetch(w_flat, ctx)" in dump
    assert "pl.Scalar[pl.PrefetchAsyncContext] = pl.prefetch.make_context()" in dump
    parse_text(dump)  # the dump is a program again


def _bad(form: str):
    @pl.jit
    def k(w: pl.Tensor[[64, 256], F32], out: pl.Out[pl.Tensor[[64, 256], F32]]):
        w_flat = pl.reshape(w, [64 * 256])
        if form == "outside":
            pl.prefetch.async_prefetch(w_flat, pl.prefetch.make_context())
        with pl.at(level=pl.Level.CORE_GROUP):
            ctx = pl.prefetch.make_context()
            if form == "2d":
                pl.prefetch.async_prefetch(w, ctx)
            if form == "handle":
                event = pl.prefetch.async_prefetch(w_flat, ctx)
                pl.prefetch.async_prefetch(w_flat, event)
            out[:, :] = pl.add(w, w)
        return out

    return k


@pytest.mark.parametrize(
    ("form", "error", "message"),
    [
        ("2d", TypeCheckError, r"`src` pl.Tensor\[\[64, 256\], pl.FP32\] must be a flat region"),
        (
            "handle",
            TypeCheckError,
            r"`ctx` must be the handle pl.prefetch.make_context\(\) gives, got .*AsyncEvent",
        ),
        ("outside", MisplacedOpError, r"Misplaced tensor op `pl.prefetch.make_context`"),
    ],
)
def test_a_misused_prefetch_is_refused_at_the_line(form, error, message):
    z = np.zeros((64, 256), np.float32)
    with pytest.raises(error, match=message + r".*test_prefetch.py:\d+"):
        _bad(form).lower(z, z)
