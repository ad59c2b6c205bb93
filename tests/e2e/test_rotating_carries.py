"""A tile carried around a loop and computed a trip ahead (the next block while the current
one is still read): the planner keeps it in two slots that trade places every trip instead
of copying it into one buffer, so the numbers must hold for odd and even trip counts alike,
with the carried address travelling with the value, and without races."""

from __future__ import annotations

import numpy as np
import pytest

import pypto.language as pl
from pypto import ir
from pypto.runtime import RunConfig

R, C = 16, 64


@pl.jit
def scaled_ahead(a: pl.Tensor, out: pl.Out[pl.Tensor], n: pl.Scalar[pl.INDEX]):
    with pl.at(level=pl.Level.CORE_GROUP):
        first = pl.muls(pl.load(a, [0, 0], [R, C]), 2.0)
        for i, (cur,) in pl.range(n, init_values=(first,)):
            nxt = pl.muls(pl.load(a, [i * R + R, 0], [R, C]), 2.0)  # the next trip's block
            pl.store(pl.add(pl.exp(cur), cur), [i * R, 0], out)  # cur is read after nxt exists
            last = pl.yield_(nxt)  # noqa: F841 (the loop result is never read)
    return out


@pytest.mark.parametrize("n", [1, 2, 5])
def test_a_block_computed_a_trip_ahead_is_right_on_every_trip(n):
    a = (np.arange(8 * R * C) % 13 / 13).astype(np.float32).reshape(8 * R, C)
    out = np.zeros((7 * R, C), np.float32)
    scaled_ahead(a, out, n, config=RunConfig(platform="a2a3sim"))
    want = np.exp(2 * a[: n * R]) + 2 * a[: n * R]
    np.testing.assert_allclose(out[: n * R], want, rtol=1e-6)
    assert not out[n * R :].any()
    assert scaled_ahead.last_report.hazards == []


def test_the_carried_block_is_not_copied_at_the_yield():
    a = np.zeros((8 * R, C), np.float32)
    program = scaled_ahead.lower(a, np.zeros((7 * R, C), np.float32), 3, config=RunConfig(platform="a2a3sim"))
    calls = [c.op for fn in program.functions for c in ir.nodes_of(fn.body, ir.Call)]
    assert "tile.move" not in calls and calls.count("tile.muls") == 2
