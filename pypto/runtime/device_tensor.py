"""Tensors that live in a ``ChipWorker``'s simulated device memory.

A :class:`DeviceTensor` is a handle (``data_ptr``, ``shape``, ``dtype``) to bytes the worker
owns. A kernel launch that gets one uses those bytes as its GM tensor directly: nothing moves
between host and device for that argument, which is what keeps a weight resident across
launches. Its contents reach the host only through ``ChipWorker.copy_from``.

The bytes are a real buffer (``data_ptr`` is its address), separate from any host array: after
``alloc_tensor(init=w)`` changing ``w`` does not change the device copy, and a kernel writing
the device tensor does not change ``w``.
"""

from __future__ import annotations

import contextvars
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from pypto.errors import DeviceTensorError, WorkerClosedError
from pypto.ir.dims import DynDim
from pypto.ir.dtypes import from_array_dtype
from pypto.runtime.dtypes import CODES, INPUT, code_of, flagged

if TYPE_CHECKING:
    from pypto.runtime.worker import ChipWorker

# The worker a launch is dispatched through (ChipWorker.run / a registration handle), and the
# stack of workers opened with ``with``: a DeviceTensor must belong to the first, else to the
# innermost of the second.
DISPATCHING: contextvars.ContextVar[ChipWorker | None] = contextvars.ContextVar(
    "pypto_dispatch", default=None
)
ACTIVE: contextvars.ContextVar[tuple[ChipWorker, ...]] = contextvars.ContextVar("pypto_active", default=())


def dtype_name(dtype: Any) -> str:
    """The numpy-style name of a torch, numpy or ml_dtypes dtype (``TypeError`` if unsupported)."""
    name = str(getattr(dtype, "name", None) or dtype).removeprefix("torch.")
    if isinstance(dtype, type) and issubclass(dtype, np.generic):
        name = np.dtype(dtype).name
    if name not in CODES:
        raise TypeError(f"unsupported dtype {dtype!r}; supported: {', '.join(CODES)}")
    return name


def storage_dtype(name: str) -> np.dtype:
    """How the bytes of ``name`` are viewed for a kernel (bfloat16 as int16, like torch's)."""
    return np.dtype("int16") if name == "bfloat16" else np.dtype(name)


class DeviceBuffer:
    """Bytes of simulated device memory owned by one worker (what ``malloc`` returns)."""

    def __init__(self, worker: ChipWorker, nbytes: int) -> None:
        self.worker = worker
        self.storage = np.zeros(nbytes, np.uint8)
        self.freed = False

    @property
    def base(self) -> int:
        return int(self.storage.ctypes.data)

    @property
    def nbytes(self) -> int:
        return int(self.storage.nbytes)


def check_shape(shape: Sequence[int], what: str) -> tuple[int, ...]:
    """A non-empty tuple of positive ints (bool is refused: it is not a size)."""
    dims = tuple(shape)
    if not dims or not all(isinstance(d, (int, np.integer)) and not isinstance(d, bool) for d in dims):
        raise TypeError(f"{what} must be a non-empty sequence of ints, got {shape!r}")
    if any(d <= 0 for d in dims):
        raise ValueError(f"{what} must hold positive sizes, got {dims}")
    return tuple(int(d) for d in dims)


class DeviceTensor:
    """A tensor resident in a ``ChipWorker``'s device memory (made by ``alloc_tensor``)."""

    __slots__ = ("data_ptr", "shape", "dtype", "buffer")
    data_ptr: int
    shape: tuple[int, ...]
    dtype: Any
    buffer: DeviceBuffer | None

    def __init__(self, data_ptr: int, shape: Sequence[int], dtype: Any, *, buffer: Any = None) -> None:
        if isinstance(data_ptr, bool) or not isinstance(data_ptr, int) or data_ptr <= 0:
            raise ValueError(f"DeviceTensor.data_ptr must be a positive int, got {data_ptr!r}")
        shape_t = check_shape(shape, "DeviceTensor.shape")
        kind = dtype_name(dtype)
        if not type(dtype).__module__.startswith("torch"):
            dtype = storage_dtype(kind) if kind != "bfloat16" else dtype  # np.float32 -> dtype('float32')
        if buffer is not None and not isinstance(buffer, DeviceBuffer):
            raise TypeError(
                f"DeviceTensor.buffer must come from ChipWorker.malloc, got {type(buffer).__name__}"
            )
        if buffer is not None and buffer.base != data_ptr:
            raise ValueError(
                f"DeviceTensor.data_ptr 0x{data_ptr:x} is not its buffer's base 0x{buffer.base:x}"
            )
        for name, value in (("data_ptr", data_ptr), ("shape", shape_t), ("dtype", dtype), ("buffer", buffer)):
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"DeviceTensor is immutable: cannot set {name}")

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape)) * storage_dtype(dtype_name(self.dtype)).itemsize

    @property
    def numel(self) -> int:
        return int(np.prod(self.shape))

    def __repr__(self) -> str:
        return f"DeviceTensor(data_ptr=0x{self.data_ptr:x}, shape={self.shape}, dtype={self.dtype})"


class StackedDeviceTensor:
    """``B`` device tensors of one shape and dtype, stacked on a leading axis of size ``B``.

    Upstream PyPTO places shard ``i`` on card ``worker_ids[i]`` for a multi-card program. The
    simulator runs one chip, so a stacked tensor is its shards on one worker: indexing
    ``x[i]`` (or ``x[i, ...]``) gives shard ``i``'s :class:`DeviceTensor`, which runs like
    any other. ``ChipWorker.alloc_stacked_tensor(host)`` uploads each shard once."""

    __slots__ = ("shards", "full_shape", "worker_ids")
    shards: tuple[DeviceTensor, ...]
    full_shape: tuple[int, ...]
    worker_ids: tuple[int, ...]

    def __init__(
        self, shards: Sequence[DeviceTensor], full_shape: Sequence[int], worker_ids: Sequence[int]
    ) -> None:
        shards_t, full, ids = tuple(shards), check_shape(full_shape, "full_shape"), tuple(worker_ids)
        if len(full) < 2:
            raise ValueError(f"StackedDeviceTensor.full_shape must have rank >= 2, got {full}")
        if len(shards_t) != full[0] or len(ids) != full[0]:
            raise ValueError(
                f"StackedDeviceTensor of shape {full} needs {full[0]} shards and worker_ids, "
                f"got {len(shards_t)} and {len(ids)}"
            )
        if len(set(ids)) != len(ids):
            raise ValueError(f"StackedDeviceTensor.worker_ids must be distinct, got {ids}")
        for i, s in enumerate(shards_t):
            if not isinstance(s, DeviceTensor):
                raise TypeError(f"shard {i} must be a DeviceTensor, got {type(s).__name__}")
            if s.shape != full[1:] or dtype_name(s.dtype) != dtype_name(shards_t[0].dtype):
                raise ValueError(
                    f"shard {i} is {s.shape} {s.dtype}; every shard must be {full[1:]} {shards_t[0].dtype}"
                )
        for name, value in (("shards", shards_t), ("full_shape", full), ("worker_ids", ids)):
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"StackedDeviceTensor is immutable: cannot set {name}")

    @property
    def shape(self) -> tuple[int, ...]:
        return self.full_shape

    @property
    def dtype(self) -> Any:
        return self.shards[0].dtype

    def __getitem__(self, idx: Any) -> DeviceTensor:
        rank, rest = (idx[0], idx[1:]) if isinstance(idx, tuple) and idx else (idx, ())
        if isinstance(rank, bool) or not isinstance(rank, int):
            raise TypeError(f"StackedDeviceTensor's leading index must be an int, got {rank!r}")
        if not 0 <= rank < len(self.shards):
            raise IndexError(f"shard index {rank} out of range [0, {len(self.shards)})")
        whole = all(s is Ellipsis or s == slice(None) for s in rest)
        if not whole or sum(s is Ellipsis for s in rest) > 1 or len(rest) > len(self.full_shape):
            raise ValueError(f"StackedDeviceTensor takes whole shards only (x[i] or x[i, ...]), got {idx!r}")
        return self.shards[rank]

    def __repr__(self) -> str:
        ids = self.worker_ids
        return f"StackedDeviceTensor(full_shape={self.full_shape}, worker_ids={ids}, dtype={self.dtype})"


def device_array(t: DeviceTensor, *, name: str, output: bool) -> tuple[np.ndarray, int]:
    """The kernel's view of a resident tensor (its device bytes), after checking that the
    launch may use it; a ``DeviceTensorError`` / ``WorkerClosedError`` names the argument."""
    buf = t.buffer
    if buf is None:
        raise DeviceTensorError(
            f"argument {name!r}: a DeviceTensor made by hand has no device memory behind it; "
            "allocate it with ChipWorker.alloc_tensor"
        )
    if buf.worker.closed:
        raise WorkerClosedError(
            f"argument {name!r}: the ChipWorker that allocated this DeviceTensor is closed"
        )
    if buf.freed:
        raise DeviceTensorError(
            f"argument {name!r}: this DeviceTensor was freed (free_tensor); allocate a new one"
        )
    worker = DISPATCHING.get() or (ACTIVE.get() or (None,))[-1]
    if worker is None:
        raise DeviceTensorError(
            f"argument {name!r}: a DeviceTensor runs only through its ChipWorker "
            "(worker.run(compiled, ...), a worker.register(compiled) handle, or inside `with worker:`)"
        )
    if buf.worker is not worker:
        raise DeviceTensorError(
            f"argument {name!r}: this DeviceTensor belongs to another ChipWorker; "
            "a DeviceTensor is usable only by the worker that allocated it"
        )
    kind = dtype_name(t.dtype)
    view = buf.storage[: t.nbytes].view(storage_dtype(kind)).reshape(t.shape)
    code = CODES[kind] if kind == "bfloat16" else code_of(view.dtype)
    return view, code if output else flagged(code, INPUT)


def launch_traffic(args: tuple, tensor_params: list[int], outputs: frozenset[int]) -> tuple[int, int]:
    """Bytes a launch moves between host and device: each host array argument moves in (and,
    when the program may write it, back out); a ``DeviceTensor`` stays where it is."""
    h2d = d2h = 0
    for i in tensor_params:
        a = args[i]
        if type(a) is np.ndarray:  # the common case first: this runs on every warm call
            nbytes = a.nbytes
        elif isinstance(a, DeviceTensor):
            continue
        else:
            nbytes = _host_nbytes(a)
        h2d += nbytes
        if i in outputs:
            d2h += nbytes
    return h2d, d2h


def _host_nbytes(a: Any) -> int:
    nbytes = getattr(a, "nbytes", None)
    if isinstance(nbytes, int):  # numpy
        return nbytes
    return int(a.numel()) * int(a.element_size())  # torch


def account(h2d: int, d2h: int) -> None:
    """Adds a launch's traffic to the worker it ran on, if any (``run``, a handle, ``with``)."""
    worker = DISPATCHING.get() or (ACTIVE.get() or (None,))[-1]
    if worker is not None:
        worker.traffic.add(h2d, d2h)


def check_declared(t: DeviceTensor, param: Any, program: str) -> None:
    """A resident tensor must have the shape and dtype the program was compiled for."""
    declared = param.var.type
    shape = getattr(declared, "shape", None)
    if shape is None:
        return
    fits = len(shape) == len(t.shape) and all(isinstance(d, DynDim) or d == g for d, g in zip(shape, t.shape))
    if not fits or from_array_dtype(dtype_name(t.dtype)) != declared.dtype:
        raise DeviceTensorError(
            f"{program}: argument `{param.var.name}` is a DeviceTensor of {list(t.shape)} "
            f"{from_array_dtype(dtype_name(t.dtype))}, but the program was compiled for "
            f"{list(shape)} {declared.dtype}"
        )
