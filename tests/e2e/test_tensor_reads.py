"""``pl.read`` of a window of a tensor inside a kernel: the element of the tensor at the
window's offsets plus the index, read where the window is named (it may steer a branch)."""

from __future__ import annotations

import numpy as np

import pypto.language as pl
from pypto.runtime import RunConfig


@pl.jit
def doubled_where_flagged(
    x: pl.Tensor[[4, 64], pl.FP32],
    mask: pl.Tensor[[4, 8], pl.INT32],
    out: pl.Out[pl.Tensor[[4, 64], pl.FP32]],
):
    for r in pl.parallel(4):
        with pl.at(level=pl.Level.CORE_GROUP):
            row = mask[r : r + 1, :]
            if pl.read(row, [0, 3]) > 0:
                out[r : r + 1, :] = pl.muls(x[r : r + 1, :], 2.0)
            else:
                out[r : r + 1, :] = x[r : r + 1, :]
    return out


def test_an_element_of_a_window_steers_the_kernel():
    x = np.arange(256, dtype=np.float32).reshape(4, 64)
    mask = np.zeros((4, 8), np.int32)
    mask[1, 3], mask[2, 3], mask[0, 2] = 1, 5, 1  # row 0 is flagged in another column only
    out = np.zeros_like(x)
    doubled_where_flagged(x, mask, out, config=RunConfig(platform="a2a3sim"))
    np.testing.assert_array_equal(out, x * np.where(mask[:, 3:4] > 0, 2.0, 1.0))


@pl.jit
def window_per_branch(
    x: pl.Tensor[[4, 64], pl.FP32], flags: pl.Tensor[[4], pl.INT32], out: pl.Out[pl.Tensor[[4, 64], pl.FP32]]
):
    for r in pl.parallel(4):
        with pl.at(level=pl.Level.CORE_GROUP):
            if pl.read(flags, [r]) > 0:
                w = x[r : r + 1, :]
                out[r : r + 1, :] = pl.muls(w, 2.0)
            else:
                w = x[3 - r : 4 - r, :]  # the same name, another window: nothing reads it after
                out[r : r + 1, :] = w
    return out


def test_a_name_each_branch_binds_to_its_own_window_is_no_merged_value():
    x = np.arange(256, dtype=np.float32).reshape(4, 64)
    out = np.zeros_like(x)
    window_per_branch(x, np.array([1, 0, 1, 0], np.int32), out, config=RunConfig(platform="a2a3sim"))
    np.testing.assert_array_equal(out, np.stack([x[0] * 2, x[2], x[2] * 2, x[0]]))
