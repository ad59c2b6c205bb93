"""A @pl.jit program with a hand-written kernel runs isolated by default: a crash in the C++
is a KernelCrashError naming the program and its hand-written kernels, and the outputs keep
their values; generated-only programs stay in-process unless asked."""

from __future__ import annotations

import numpy as np
import pytest

import pypto.language as pl
from pypto.errors import KernelCrashError, SimulationLimitError
from pypto.runtime import RunConfig


@pl.function(type=pl.FunctionType.AIV, external_source="../fixtures/kernels/crash.cpp")
def crashy(
    a: pl.Tensor[[8, 64], pl.FP32], out: pl.Out[pl.Tensor[[8, 64], pl.FP32]], mode: pl.Scalar[pl.INDEX]
): ...


@pl.jit
def calls_crashy(a: pl.Tensor, out: pl.Out[pl.Tensor], mode: pl.Scalar[pl.INDEX]):
    crashy(a, out, mode)
    return out


def test_crash_in_a_hand_written_kernel_of_a_program():
    a = np.ones((8, 64), np.float32)
    out = np.zeros_like(a)
    with pytest.raises(KernelCrashError) as err:
        calls_crashy(a, out, 0)
    msg = str(err.value)
    assert "kernel 'calls_crashy (hand-written: crashy)' was killed by SIGSEGV" in msg
    assert "PIPE_BARRIER at crash.cpp:28" in msg
    assert (out == 0).all()
    calls_crashy(a, out, 9)
    np.testing.assert_array_equal(out, a)


def test_timeout_of_a_program():
    a = np.ones((8, 64), np.float32)
    out = np.zeros_like(a)
    with pytest.raises(SimulationLimitError, match="ran past timeout_s=0.3 s"):
        calls_crashy(a, out, 5, config=RunConfig(timeout_s=0.3))
    assert (out == 0).all()
