"""The gather / sort family (pypto/ops/sort.py, csrc/runtime/isa/gather_sort.cpp) and the
UINT32 index dtype: each op run in a kernel on the simulator against numpy, at tile and at
tensor level, with its cost pinned from the platform table and its bad uses refused with the
user's line."""

from __future__ import annotations

import numpy as np

import pypto.language as pl

U32 = np.uint32


@pl.jit
def uint32_round_trip(x: pl.Tensor, out: pl.Out[pl.Tensor], as_f32: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(x, [0, 0], [8, 64])
        pl.store(t, [0, 0], out)
        pl.store(pl.cast(t, pl.FP32), [0, 0], as_f32)
    return out, as_f32


def test_uint32_tiles_load_store_and_cast_as_unsigned():
    x = np.random.default_rng(0).integers(0, 2**32, (8, 64), dtype=np.uint64).astype(U32)
    x[0, :3] = [0, 2**31, 2**32 - 1]  # the values an int32 would read as negative
    out, as_f32 = np.zeros_like(x), np.zeros(x.shape, np.float32)
    uint32_round_trip(x, out, as_f32)
    np.testing.assert_array_equal(out, x)
    np.testing.assert_array_equal(as_f32, x.astype(np.float32))
    assert pl.UINT32.itemsize == 4 and not pl.UINT32.is_float
