"""Isolated runs (``RunConfig(isolate=True)``): the launch happens in a forked worker process.

A native fault inside a kernel — a segfault, ``abort()``, an integer divide by zero, a stack
overflow, ``exit()`` — then ends the worker, not the caller, and comes back as
:class:`~pypto.errors.KernelCrashError`; ``timeout_s`` stops a worker that runs too long
(:class:`~pypto.errors.SimulationLimitError`).

Buffers: the worker reads the inputs through fork's copy-on-write view of the caller's memory
(no copy). Each written tensor is backed by a shared mapping (one per thread, reused across
runs) that the worker fills from the caller's array and writes; only after a clean finish does
the parent copy it back, so on a crash or timeout the caller's arrays are exactly as they were.
"""

from __future__ import annotations

import ctypes
import mmap
import os
import pickle
import select
import signal
import struct
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from pypto import _native
from pypto.errors import KernelCrashError, PyptoError, SimulationLimitError

_RESULT = b"PYPTO-RESULT"
_CRASH = b"\nPYPTO-CRASH\t"
_EXIT_OK = 0  # the worker's own exit code (anything else comes from the kernel's exit())


class _Arena(threading.local):
    """One growing MAP_SHARED mapping per thread, reused by every isolated run: its pages are
    faulted in once, not on every call (a fresh 32 MiB shared mapping costs more to fault in
    than the kernel takes to run)."""

    buf: mmap.mmap | None = None

    def views(self, arrays: list[np.ndarray]) -> list[np.ndarray]:
        """Shared arrays shaped like ``arrays``, packed at 64-byte-aligned offsets."""
        offsets, end = [], 0
        for a in arrays:
            offsets.append(end)
            end += (a.nbytes + 63) // 64 * 64
        if self.buf is None or len(self.buf) < end:
            self.buf = mmap.mmap(-1, max(end, 1 << 20))  # the old mapping goes with its last view
        return [
            np.frombuffer(self.buf, dtype=a.dtype, count=a.size, offset=off).reshape(a.shape)
            if a.size
            else np.empty_like(a)
            for a, off in zip(arrays, offsets)
        ]


_arena = _Arena()


def _child(
    fd: int,
    call: Callable[[list[tuple[np.ndarray, int]]], Any],
    tensors: list[tuple[np.ndarray, int]],
    shared: dict[int, np.ndarray],
) -> None:
    """The worker: run, send the pickled result (or the raised error), exit without cleanup."""
    try:
        _native.arm_crash_report(fd)
        local = list(tensors)
        for i, view in shared.items():
            view[...] = tensors[i][0]
            local[i] = (view, tensors[i][1])
        try:
            payload = pickle.dumps(("ok", call(local)))
        except BaseException as e:  # noqa: BLE001 - every error goes back to the caller
            payload = _pickled_error(e)
        os.write(fd, _RESULT + struct.pack("<Q", len(payload)))
        unsent = memoryview(payload)
        while unsent:
            unsent = unsent[os.write(fd, unsent) :]
        ctypes.CDLL(None).fflush(None)  # a kernel's printf output, before _exit drops it
    finally:
        os._exit(_EXIT_OK)


def _pickled_error(e: BaseException) -> bytes:
    try:
        data = pickle.dumps(("error", e))
        pickle.loads(data)  # an error class whose __init__ cannot take its own args fails here
        return data
    except Exception:  # noqa: BLE001 - an unpicklable error still reports its text
        return pickle.dumps(("error", PyptoError(f"{type(e).__name__}: {e}")))


def _read_all(fd: int, deadline: float | None) -> bytes | None:
    """What the worker writes, up to its complete result or its exit; None past the deadline.
    Not waiting for the exit itself saves tearing down the worker's memory on the call path."""
    data = b""
    while not _complete(data):
        wait = None if deadline is None else max(0.0, deadline - time.monotonic())
        ready, _, _ = select.select([fd], [], [], wait)
        if not ready:
            return None
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            break
        data += chunk
    return data


def _complete(data: bytes) -> bool:
    at = data.find(_RESULT)
    if at < 0 or len(data) < at + len(_RESULT) + 8:
        return False
    (n,) = struct.unpack_from("<Q", data, at + len(_RESULT))
    return len(data) >= at + len(_RESULT) + 8 + n


# Copying outputs back writes the caller's pages, which fork made copy-on-write: while the
# worker lives each written page is copied first. Past this many bytes, waiting for the worker
# to exit is cheaper than those copies (assumption: measured on 2 MiB / 32 MiB outputs).
_WAIT_BYTES = 1 << 20
_exited: list[int] = []  # workers that sent their result and are still exiting: reaped later


def _reap() -> None:
    for pid in list(_exited):
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done:
            _exited.remove(pid)


def _parse(data: bytes) -> tuple[Any, tuple[str, str] | None]:
    """(the ("ok"|"error", value) result or None, the crash breadcrumb or None)."""
    result, crash = None, None
    at = data.find(_RESULT)
    if at >= 0:
        (n,) = struct.unpack("<Q", data[at + len(_RESULT) : at + len(_RESULT) + 8])
        body = data[at + len(_RESULT) + 8 : at + len(_RESULT) + 8 + n]
        if len(body) == n:
            result = pickle.loads(body)
    at = data.rfind(_CRASH)
    if at >= 0:
        fields = data[at + len(_CRASH) :].split(b"\n", 1)[0].split(b"\t")
        op, loc = (fields + [b"", b""])[:2]
        crash = (op.decode(errors="replace"), loc.decode(errors="replace"))
    return result, crash


def _crash_error(kernel: str, status: int, crash: tuple[str, str] | None) -> KernelCrashError:
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = f"signal {sig}"
        how = f"was killed by {name} ({signal.strsignal(sig) or 'signal'})"
    else:
        how = f"exited with code {os.WEXITSTATUS(status)} (exit() inside the kernel)"
    where = "before any ISA instruction"
    if crash and crash[0]:
        where = f"after the ISA instruction {crash[0]}" + (f" at {crash[1]}" if crash[1] else "")
    return KernelCrashError(
        f"kernel {kernel!r} {how} {where}; the run was isolated: your arrays are unchanged"
    )


def run_isolated(
    call: Callable[[list[tuple[np.ndarray, int]]], Any],
    tensors: list[tuple[np.ndarray, int]],
    written: list[int],
    *,
    kernel: str,
    timeout_s: float | None = None,
) -> Any:
    """``call(tensors)`` in a forked worker; returns its result or raises its error.

    ``written``: indices of the tensors the kernels may write (copied back after a clean run).
    """
    views = dict(zip(written, _arena.views([tensors[i][0] for i in written])))
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the worker; its outcome is asserted through the parent
        os.close(read_fd)
        _child(write_fd, call, tensors, views)
    os.close(write_fd)
    try:
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        try:
            data = _read_all(read_fd, deadline)
        except BaseException:  # Ctrl-C (KeyboardInterrupt) while waiting: the worker goes too
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            raise
        if data is None:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            raise SimulationLimitError(
                f"kernel {kernel!r} ran past timeout_s={timeout_s:g} s and was stopped; "
                "your arrays are unchanged"
            )
    finally:
        os.close(read_fd)
    result, crash = _parse(data)
    if result is None:  # the worker died before it could answer
        _, status = os.waitpid(pid, 0)
        raise _crash_error(kernel, status, crash)
    if sum(v.nbytes for v in views.values()) >= _WAIT_BYTES:
        os.waitpid(pid, 0)  # see _WAIT_BYTES
    else:
        _exited.append(pid)
        _reap()
    kind, value = result
    if kind == "error":
        raise value
    for i, view in views.items():  # the mappings are unmapped when the views are dropped
        tensors[i][0][...] = view
    return value
