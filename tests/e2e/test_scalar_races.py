"""The cross-task race check sees scalar GM accesses as it sees loads and stores: blocks that
`pl.write` one element, or a `pl.read` of bytes another block stores, with no dependency
between them, is a RaceError naming both accesses — the result would depend on scheduling."""

from __future__ import annotations

import numpy as np
import pytest

import pypto.language as pl
from pypto.errors import RaceError
from pypto.runtime import RunConfig

R, C = 8, 64


@pl.jit
def all_write_one_element(x: pl.Tensor[[4 * R, C], pl.FP32], out: pl.Out[pl.Tensor[[4 * R, C], pl.FP32]]):
    for b in pl.spmd(4):
        pl.write(out, [b * R, 1], 1.0)
        pl.write(out, [0, 0], 5.0)


@pl.jit
def reads_what_another_stores(x: pl.Tensor[[4 * R, C], pl.FP32], out: pl.Out[pl.Tensor[[4 * R, C], pl.FP32]]):
    for b in pl.spmd(4):
        v = pl.read(out, [((b + 1) % 4) * R, 0])
        t = pl.adds(pl.load(x, [b * R, 0], [R, C]), v)
        pl.store(t, [b * R, 0], out)


@pl.jit
def each_writes_its_own(x: pl.Tensor[[4 * R, C], pl.FP32], out: pl.Out[pl.Tensor[[4 * R, C], pl.FP32]]):
    for b in pl.spmd(4):
        pl.store(pl.load(x, [b * R, 0], [R, C]), [b * R, 0], out)
        pl.write(out, [b * R, 0], 7.0)


@pytest.mark.parametrize(
    "kernel, text",
    [
        (all_write_one_element, r"TWRITE .* writes GM bytes that kernel .* writes with TWRITE"),
        (reads_what_another_stores, r"writes GM bytes that kernel .* reads with TREAD"),
    ],
)
def test_unordered_scalar_accesses_of_the_same_bytes_race(kernel, text):
    x = np.ones((4 * R, C), np.float32)
    with pytest.raises(RaceError, match=text):
        kernel(x, np.zeros_like(x), config=RunConfig(platform="a2a3sim"))


def test_blocks_writing_their_own_elements_do_not_race():
    x = np.ones((4 * R, C), np.float32)
    out = np.zeros_like(x)
    each_writes_its_own(x, out, config=RunConfig(platform="a2a3sim"))
    assert (out[::R, 0] == 7).all() and out[1, 0] == 1
