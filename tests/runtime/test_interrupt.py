"""Ctrl-C and the simulator's SIGINT handler: a run in progress stops with KeyboardInterrupt;
between runs the signal goes to whatever Python has installed (its default KeyboardInterrupt or
a handler the program set, before or after a run)."""

from __future__ import annotations

import os
import signal
import threading
import time

import numpy as np
import pytest

from pypto.runtime import run_kernel_file


def _sigint_now() -> None:
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(0.01)  # Python runs its handler at the next bytecode boundary


def _short_run(fixture_kernel) -> None:
    a = np.ones((64, 128), np.float32)
    out = np.zeros_like(a)
    run_kernel_file(
        fixture_kernel("exp_double_buffer"), [a, out], outputs={1}, isolate=False
    )  # in this process
    np.testing.assert_allclose(out, np.exp(a), rtol=1e-6)


def test_ctrl_c_between_runs_is_pythons_keyboard_interrupt(fixture_kernel):
    _short_run(fixture_kernel)
    with pytest.raises(KeyboardInterrupt):
        _sigint_now()
    _short_run(fixture_kernel)  # the process stays usable


def test_a_handler_the_program_sets_gets_ctrl_c_between_runs_and_runs_still_stop(fixture_kernel):
    seen: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda sig, frame: seen.append(sig))
    try:
        _short_run(fixture_kernel)  # the simulator's handler goes in front of the program's
        _sigint_now()
        assert seen == [signal.SIGINT]
        spin = fixture_kernel("spin")  # built first: the signal should land in the run
        # Python's own handler again (it replaces the simulator's, which the run puts back in
        # front): a signal that still came early raises too, instead of leaving the spin running.
        signal.signal(signal.SIGINT, signal.default_int_handler)
        timer = threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT))
        timer.start()
        t0 = time.monotonic()
        with pytest.raises(KeyboardInterrupt):  # during a run: the run stops
            run_kernel_file(spin, [], isolate=False)
        assert time.monotonic() - t0 < 30  # promptly, even on a loaded machine
        signal.signal(signal.SIGINT, lambda sig, frame: seen.append(-sig))  # set after a run
        _sigint_now()
        _short_run(fixture_kernel)
        _sigint_now()
        assert seen == [signal.SIGINT, -signal.SIGINT, -signal.SIGINT]
    finally:
        signal.signal(signal.SIGINT, previous)
