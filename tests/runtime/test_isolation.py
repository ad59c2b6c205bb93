"""Isolated runs: a native fault inside a hand-written kernel (segfault, abort, divide by zero,
stack overflow, exit()) is a KernelCrashError naming the kernel, the signal or exit code and
the last ISA instruction; a kernel that never finishes is stopped by timeout_s. The caller
survives and its arrays are untouched (the kernel had already stored into its copy of `out`)."""

from __future__ import annotations

import numpy as np
import pytest

from pypto.errors import (
    ArgumentValueError,
    ConfigError,
    KernelCrashError,
    OutOfBoundsError,
    SimulationLimitError,
)
from pypto.runtime import RunConfig, run_kernel_file


def args(mode):
    a = np.arange(8 * 64, dtype=np.float32).reshape(8, 64)
    return a, np.full_like(a, -1.0), mode


@pytest.mark.parametrize(
    "mode, how",
    [
        (0, "was killed by SIGSEGV"),
        (1, "was killed by SIGABRT"),
        (2, "was killed by SIGFPE"),
        (3, "was killed by SIGSEGV"),  # stack overflow: reported from the alternate signal stack
        (4, "exited with code 3 (exit() inside the kernel)"),
    ],
)
def test_native_fault_is_a_kernel_crash_error(fixture_kernel, mode, how):
    so = fixture_kernel("crash")
    a, out, m = args(mode)
    with pytest.raises(KernelCrashError) as err:
        run_kernel_file(so, [a, out, m], outputs={1})
    msg = str(err.value)
    assert msg.startswith(f"kernel 'crash' {how}")
    assert "after the ISA instruction PIPE_BARRIER at crash.cpp:28" in msg
    assert "your arrays are unchanged" in msg
    assert (out == -1).all() and (a == np.arange(8 * 64).reshape(8, 64)).all()
    # the caller carries on: the same kernel, a good mode, writes the output
    run_kernel_file(so, [a, out, 9], outputs={1})
    np.testing.assert_array_equal(out, a)


def test_a_loop_issuing_no_instruction_is_stopped_by_timeout_s(fixture_kernel):
    a, out, m = args(5)
    with pytest.raises(
        SimulationLimitError, match=r"kernel 'crash' ran past timeout_s=0.5 s and was stopped"
    ):
        run_kernel_file(fixture_kernel("crash"), [a, out, m], outputs={1}, timeout_s=0.5)
    assert (out == -1).all()


def test_typed_errors_come_back_from_the_worker_unchanged(fixture_kernel):
    so = fixture_kernel("exp_single_buffer")
    a, out = np.ones((128, 128), np.float32), np.zeros((64, 128), np.float32)
    for isolate in (True, False):
        with pytest.raises(
            OutOfBoundsError, match=r"kernel 'exp_single_buffer' \(block 0\): TSTORE: GM window"
        ):
            run_kernel_file(so, [a, out], outputs={1}, isolate=isolate)


def test_isolated_results_equal_in_process_results(fixture_kernel):
    so = fixture_kernel("exp_double_buffer")
    a = np.random.default_rng(3).uniform(-2, 2, (512, 128)).astype(np.float32)
    outs, reports = [], []
    for isolate in (True, False):
        out = np.zeros_like(a)
        reports.append(run_kernel_file(so, [a, out], outputs={1}, isolate=isolate, record=True))
        outs.append(out)
    np.testing.assert_array_equal(outs[0], outs[1])
    assert reports[0].cycles == reports[1].cycles and reports[0].pipe_busy == reports[1].pipe_busy
    assert reports[0].intervals("MTE2") == reports[1].intervals("MTE2")


def test_limits_are_checked_before_anything_runs(fixture_kernel):
    a, out, m = args(9)
    so = fixture_kernel("crash")
    with pytest.raises(ArgumentValueError, match="timeout_s needs isolate=True"):
        run_kernel_file(so, [a, out, m], outputs={1}, isolate=False, timeout_s=1)
    for bad in (0, -1, float("inf"), float("nan"), "1"):
        with pytest.raises(ArgumentValueError, match="timeout_s must be"):
            run_kernel_file(so, [a, out, m], outputs={1}, timeout_s=bad)
    with pytest.raises(ConfigError, match="RunConfig.timeout_s needs isolate=True"):
        RunConfig(isolate=False, timeout_s=2)
    with pytest.raises(ConfigError, match="isolate must be None, True or False"):
        RunConfig(isolate="yes")
    assert RunConfig().isolated(has_external=True) and not RunConfig().isolated(has_external=False)
    assert RunConfig(timeout_s=1).isolated(has_external=False)
    assert not RunConfig(isolate=False).isolated(has_external=True)


def test_ctrl_c_while_waiting_stops_the_worker(fixture_kernel, monkeypatch):
    """A KeyboardInterrupt in the caller while an isolated kernel runs ends the worker too."""
    import os
    import signal
    import threading

    from pypto.runtime import isolate

    spawned = []
    real_fork = os.fork

    def fork():
        pid = real_fork()
        if pid:
            spawned.append(pid)
        return pid

    so = fixture_kernel("crash")  # built first: the interrupt must land while the kernel runs
    monkeypatch.setattr(isolate.os, "fork", fork)
    timer = threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGINT))
    a, out, m = args(5)
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        run_kernel_file(so, [a, out, m], outputs={1}, timeout_s=30)
    timer.join()
    (pid,) = spawned
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)  # already reaped: it was killed and waited for
    assert (out == -1).all()
