"""FuseCreateAssemble: an orchestration pl.assemble of a kernel's pl.create_tensor output makes
the buffer a window of the target — the kernel writes the target, the numbers match numpy, the
tasks are ordered through the target — and every form it cannot make exact is refused at the
pl.assemble line."""

from __future__ import annotations

import numpy as np
import pytest

import pypto.language as pl
from pypto.errors import CompileError
from pypto.runtime import RunConfig

CFG = RunConfig(platform="a2a3sim")


@pl.jit
def staged_rows(x: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[128, 64], pl.FP32]]):
    for i in pl.range(2):
        r0 = i * 64
        stage = pl.create_tensor([64, 64], dtype=pl.FP32)
        with pl.at(level=pl.Level.CORE_GROUP):
            stage[:, :] = pl.adds(x, 1.0)
        out = pl.assemble(out, stage, [r0, 0])
    with pl.at(level=pl.Level.CORE_GROUP):
        out[0:64, :] = pl.mul(out[0:64, :], out[64:128, :])  # reads both windows the kernels wrote
    return out


def test_assembled_kernel_outputs_land_in_the_target_and_order_its_readers():
    x = np.random.default_rng(1).standard_normal((64, 64)).astype(np.float32)
    out = np.zeros((128, 64), np.float32)
    staged_rows(x, out, config=CFG)
    np.testing.assert_allclose(out[:64], (x + 1) ** 2, rtol=1e-6)
    np.testing.assert_array_equal(out[64:], x + 1)
    # both stage buffers are windows of out now: its reader waits for both writers, and the
    # writers of the two disjoint windows do not wait for each other
    assert [t.deps for t in staged_rows.last_report.tasks] == [(), (), (0, 1)]
    text = staged_rows.lower(x, out, config=CFG).as_python()
    assert "pl.tensor.slice(out_1, [64, 64], [r0, 0])" in text and "pl.tensor.assemble" not in text


def _lower(fn, *shapes):
    fn.lower(*(np.zeros(s, np.float32) for s in shapes), config=CFG)


def test_a_buffer_placed_twice_is_refused():
    @pl.jit
    def twice(x: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[128, 64], pl.FP32]]):
        stage = pl.create_tensor([64, 64], dtype=pl.FP32)
        with pl.at(level=pl.Level.CORE_GROUP):
            stage[:, :] = pl.adds(x, 1.0)
        out = pl.assemble(out, stage, [0, 0])
        out = pl.assemble(out, stage, [64, 0])
        return out

    with pytest.raises(
        CompileError, match=r"once; `stage` is placed twice at .*test_fuse_create_assemble.py:\d+"
    ):
        _lower(twice, (64, 64), (128, 64))


def test_assembling_a_parameter_is_refused():
    @pl.jit
    def from_param(x: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[128, 64], pl.FP32]]):
        out = pl.assemble(out, x, [0, 0])
        return out

    with pytest.raises(
        CompileError, match=r"`x` is not such a buffer: write the kernel's output into a pl.slice"
    ):
        _lower(from_param, (64, 64), (128, 64))


def test_a_window_computed_after_the_buffer_is_made_is_refused():
    @pl.jit
    def late(x: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[128, 64], pl.FP32]]):
        for i in pl.range(2):
            stage = pl.create_tensor([64, 64], dtype=pl.FP32)
            r0 = i * 64
            with pl.at(level=pl.Level.CORE_GROUP):
                stage[:, :] = pl.adds(x, 1.0)
            out = pl.assemble(out, stage, [r0, 0])
        return out

    with pytest.raises(CompileError, match=r"`r0` is computed after that: make the buffer after it"):
        _lower(late, (64, 64), (128, 64))
