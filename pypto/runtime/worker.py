"""``ChipWorker``: one simulated chip with its own device memory, as upstream PyPTO's L2 worker.

The worker owns simulated device memory (``malloc`` / ``free`` / ``copy_to`` / ``copy_from``,
and the ``DeviceTensor`` conveniences ``alloc_tensor`` / ``free_tensor``) and dispatches
compiled programs (``run``, ``register``). A launch runs the program through its own
``CompiledProgram`` call, so a launch here is exactly ``compiled(*args)``; a ``DeviceTensor``
argument is the worker's bytes, passed as the kernel's GM tensor without a copy.

``traffic`` counts the bytes that crossed between host and device: explicit copies, uploads of
``alloc_tensor(init=...)`` and the host arrays of every launch (an input moves in, an output in
and out). A resident weight therefore shows up once, at its upload.
"""

from __future__ import annotations

import ctypes
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pypto.errors import DeviceTensorError, WorkerClosedError
from pypto.runtime.config import RunConfig
from pypto.runtime.device_tensor import (
    ACTIVE,
    DISPATCHING,
    DeviceBuffer,
    DeviceTensor,
    StackedDeviceTensor,
    check_shape,
    dtype_name,
    storage_dtype,
)
from pypto.runtime.marshal import as_array


@dataclass
class HostTraffic:
    """Bytes moved between host and simulated device memory, and the copies that moved them."""

    host_to_device_bytes: int = 0
    device_to_host_bytes: int = 0
    host_to_device_copies: int = 0
    device_to_host_copies: int = 0

    def add(self, h2d: int, d2h: int) -> None:
        self.host_to_device_bytes += h2d
        self.device_to_host_bytes += d2h
        self.host_to_device_copies += h2d > 0
        self.device_to_host_copies += d2h > 0


class ChipWorker:
    """A simulated chip and its device memory. ``config`` gives the platform (``device_id``
    is accepted and means nothing: there is one simulated chip); ``level`` must be 2."""

    def __init__(self, config: RunConfig | None = None, *, level: int = 2, runtime: str | None = None,
                 enable_sdma: bool = False, auto_init: bool | None = None) -> None:  # fmt: skip
        if level != 2:
            raise ValueError(f"ChipWorker only supports level=2 (one chip); got level={level}")
        if config is not None and not isinstance(config, RunConfig):
            raise TypeError(f"ChipWorker(config=...) takes a RunConfig, got {type(config).__name__}")
        self.config = config or RunConfig()
        self.level, self.runtime, self.enable_sdma = level, runtime, bool(enable_sdma)
        self.traffic = HostTraffic()
        self._buffers: dict[int, DeviceBuffer] = {}
        self._owned: dict[int, DeviceTensor] = {}
        self._handles: weakref.WeakSet[RegistrationHandle] = weakref.WeakSet()
        self._loaded: dict[int, Any] = {}  # id -> each program this worker loaded (kept: ids stay unique)
        self._token: Any = None
        self._initialized = False
        self.closed = False
        if auto_init is None or auto_init:
            self.init()

    # --- lifecycle ----------------------------------------------------------------------
    @property
    def platform(self) -> str:
        return self.config.platform

    @property
    def initialized(self) -> bool:
        return self._initialized

    @property
    def aicpu_dlopen_count(self) -> int:
        """How many programs this worker has loaded (their kernels into a native task runner):
        one per program, at its ``register`` or its first ``run``; a closed worker starts
        again at 0. Upstream counts its AICPU's loads of a callable the same way."""
        return len(self._loaded)

    def _load(self, compiled: Any) -> None:
        if id(compiled) in self._loaded:
            return
        load = getattr(compiled, "load", None)
        if load is not None:
            load()
        self._loaded[id(compiled)] = compiled

    def init(self) -> None:
        """Opens the worker (idempotent; a closed worker opens again with empty memory)."""
        self._initialized, self.closed = True, False

    def close(self) -> None:
        """Frees every allocation and invalidates every handle (idempotent)."""
        for buf in self._buffers.values():
            buf.freed = True
        self._buffers.clear()
        self._owned.clear()
        for handle in list(self._handles):
            handle._closed = True
        self._loaded.clear()
        self._initialized, self.closed = False, True

    def __enter__(self) -> ChipWorker:
        if self in ACTIVE.get():
            raise ValueError("this ChipWorker is already active in an enclosing `with` block")
        self.init()
        self._token = ACTIVE.set((*ACTIVE.get(), self))
        return self

    def __exit__(self, *_exc: Any) -> None:
        if self._token is not None:
            ACTIVE.reset(self._token)
            self._token = None
        self.close()

    def _ready(self, op: str) -> None:
        if not self._initialized:
            raise WorkerClosedError(
                f"ChipWorker.{op}() on a closed worker; open it with init() or `with worker:`"
            )

    # --- device memory --------------------------------------------------------------------
    def malloc(self, nbytes: int, *, worker_id: int = 0) -> int:
        """``nbytes`` of zeroed device memory; returns its address."""
        self._ready("malloc")
        _local(worker_id, "malloc")
        if isinstance(nbytes, bool) or not isinstance(nbytes, int) or nbytes <= 0:
            raise ValueError(f"ChipWorker.malloc: nbytes must be a positive int, got {nbytes!r}")
        buf = DeviceBuffer(self, nbytes)
        self._buffers[buf.base] = buf
        return buf.base

    def _buffer(self, ptr: int, op: str, nbytes: int | None = None) -> DeviceBuffer:
        buf = self._buffers.get(ptr) if isinstance(ptr, int) else None
        if buf is None:
            raise ValueError(
                f"ChipWorker.{op}: {ptr!r} is not the address of a live allocation of this worker"
            )
        if nbytes is not None and (
            isinstance(nbytes, bool) or not isinstance(nbytes, int) or not 0 < nbytes <= buf.nbytes
        ):
            raise ValueError(
                f"ChipWorker.{op}: nbytes must be in [1, {buf.nbytes}] for this allocation, got {nbytes!r}"
            )
        return buf

    def free(self, ptr: int, *, worker_id: int = 0) -> None:
        self._ready("free")
        _local(worker_id, "free")
        self._buffer(ptr, "free").freed = True
        del self._buffers[ptr]

    def copy_to(self, dst_dev_ptr: int, src_host_ptr: int, nbytes: int, *, worker_id: int = 0) -> None:
        """Host → device: ``nbytes`` from host address ``src_host_ptr`` (e.g. ``t.data_ptr()``)."""
        self._ready("copy_to")
        _local(worker_id, "copy_to")
        buf = self._buffer(dst_dev_ptr, "copy_to", nbytes)
        ctypes.memmove(buf.base, _host_ptr(src_host_ptr, "copy_to"), nbytes)
        self.traffic.add(nbytes, 0)

    def copy_from(self, dst_host_ptr: int, src_dev_ptr: int, nbytes: int, *, worker_id: int = 0) -> None:
        """Device → host: ``nbytes`` of the allocation at ``src_dev_ptr`` to host ``dst_host_ptr``."""
        self._ready("copy_from")
        _local(worker_id, "copy_from")
        buf = self._buffer(src_dev_ptr, "copy_from", nbytes)
        ctypes.memmove(_host_ptr(dst_host_ptr, "copy_from"), buf.base, nbytes)
        self.traffic.add(0, nbytes)

    def alloc_tensor(
        self, shape: Sequence[int], dtype: Any, *, init: Any = None, worker_id: int = 0
    ) -> DeviceTensor:
        """A resident tensor; ``init`` (a host array of exactly this shape and dtype) is
        uploaded once. Nothing is allocated when ``init`` does not fit."""
        self._ready("alloc_tensor")
        shape_t = check_shape(shape, "alloc_tensor shape")
        kind = dtype_name(dtype)
        host = None if init is None else _host_bytes(init, shape_t, kind)
        ptr = self.malloc(int(storage_dtype(kind).itemsize) * int(_prod(shape_t)), worker_id=worker_id)
        t = DeviceTensor(ptr, shape_t, dtype, buffer=self._buffers[ptr])
        if host is not None:
            self.copy_to(ptr, host.ctypes.data, t.nbytes)
        self._owned[ptr] = t
        return t

    def free_tensor(self, t: DeviceTensor, *, worker_id: int = 0) -> None:
        """Releases ``t`` (a second free of the same tensor does nothing, as upstream)."""
        self._ready("free_tensor")
        if not isinstance(t, DeviceTensor):
            raise TypeError(f"free_tensor takes a DeviceTensor, got {type(t).__name__}")
        if t.buffer is not None and t.buffer.worker is not self:
            raise DeviceTensorError("free_tensor: this DeviceTensor belongs to another ChipWorker")
        if self._owned.get(t.data_ptr) is t:
            del self._owned[t.data_ptr]
            self.free(t.data_ptr, worker_id=worker_id)

    def alloc_stacked_tensor(
        self, host: Any, *, worker_ids: Sequence[int] | None = None
    ) -> StackedDeviceTensor:
        """Each ``host[i]`` uploaded once as a resident shard (all on this one simulated chip)."""
        shape = tuple(int(d) for d in host.shape)
        ids = tuple(range(shape[0])) if worker_ids is None else tuple(worker_ids)
        shards = [self.alloc_tensor(shape[1:], host.dtype, init=host[i]) for i in range(shape[0])]
        return StackedDeviceTensor(shards, shape, ids)

    def free_stacked_tensor(self, t: StackedDeviceTensor) -> None:
        for shard in t.shards:
            self.free_tensor(shard)

    # --- dispatch -------------------------------------------------------------------------
    def run(self, compiled: Any, *args: Any, config: RunConfig | None = None) -> Any:
        """Runs ``compiled`` on this worker: ``compiled(*args)`` with this worker's
        ``DeviceTensor``s usable. Returns what ``compiled(*args)`` returns."""
        self._ready("run")
        _check_platform(compiled, self.platform)
        self._load(compiled)
        token = DISPATCHING.set(self)
        try:
            return compiled(*args, config=config)
        finally:
            DISPATCHING.reset(token)

    def register(self, compiled: Any) -> RegistrationHandle:
        """A callable bound to ``compiled`` on this worker (checked and loaded now, not at the
        first call)."""
        self._ready("register")
        _check_platform(compiled, self.platform)
        self._load(compiled)
        handle = RegistrationHandle(self, compiled)
        self._handles.add(handle)
        return handle


class RegistrationHandle:
    """``worker.register(compiled)``: ``handle(*args)`` is ``worker.run(compiled, *args)``."""

    __test__ = False

    def __init__(self, worker: ChipWorker, compiled: Any) -> None:
        self.worker, self.compiled, self._closed = worker, compiled, False

    @property
    def closed(self) -> bool:
        return self._closed

    def __call__(self, *args: Any, config: RunConfig | None = None) -> Any:
        if self._closed:
            raise WorkerClosedError(
                "this registration handle was unregistered or its ChipWorker closed; register again"
            )
        return self.worker.run(self.compiled, *args, config=config)

    def unregister(self) -> None:
        self._closed = True

    def __enter__(self) -> RegistrationHandle:
        return self

    def __exit__(self, *_exc: Any) -> None:
        self.unregister()


def _local(worker_id: int, op: str) -> None:
    if worker_id != 0:
        raise ValueError(f"ChipWorker.{op}() only supports worker_id=0 (one chip), got {worker_id!r}")


def _host_ptr(ptr: Any, op: str) -> int:
    if isinstance(ptr, bool) or not isinstance(ptr, int) or ptr <= 0:
        raise ValueError(
            f"ChipWorker.{op}: the host address must be a positive int (e.g. t.data_ptr()), got {ptr!r}"
        )
    return ptr


def _prod(shape: tuple[int, ...]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def _host_bytes(init: Any, shape: tuple[int, ...], kind: str) -> Any:
    """A contiguous host copy of ``init`` as bytes, after checking its shape and dtype."""
    got_shape = tuple(int(d) for d in getattr(init, "shape", ()))
    try:
        got_kind = dtype_name(getattr(init, "dtype", None))
    except TypeError:
        got_kind = repr(getattr(init, "dtype", type(init).__name__))
    if got_shape != shape or got_kind != kind:
        raise ValueError(
            f"alloc_tensor: init must have shape={shape} dtype={kind}, got shape={got_shape} dtype={got_kind}"
        )
    array, _ = as_array(init, name="init", output=False)
    return array.copy(order="C")


def _check_platform(compiled: Any, platform: str) -> None:
    if getattr(compiled, "platform", platform) != platform:
        raise ValueError(
            f"CompiledProgram.platform={compiled.platform!r} does not match "
            f"ChipWorker.platform={platform!r}; "
            f"compile for {platform!r} or open ChipWorker(config=RunConfig(platform={compiled.platform!r}))"
        )
