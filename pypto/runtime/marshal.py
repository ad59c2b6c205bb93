"""Arguments from Python to the kernel ABI: arrays/tensors to GM tensors, numbers to slots.

numpy arrays and torch CPU tensors pass zero-copy. A non-contiguous input is copied; a
non-contiguous output is refused, because the kernel's writes would land in a copy.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

import numpy as np

from pypto.errors import PyptoError
from pypto.runtime.dtypes import CODES, code_of


class ArgumentError(PyptoError, TypeError):
    """A call argument cannot be passed to the kernel."""


@dataclass
class Marshalled:
    tensors: list[tuple[np.ndarray, int]]
    scalars: list[int]


def _torch_to_numpy(t: Any) -> tuple[np.ndarray, int]:
    if t.device.type != "cpu":
        raise ArgumentError(f"torch tensor on {t.device} — only CPU tensors can run on the simulator")
    t = t.detach()
    name = str(t.dtype).removeprefix("torch.")
    if name == "bfloat16":
        return t.view(dtype=__import__("torch").int16).numpy(), CODES["bfloat16"]
    return t.numpy(), code_of(np.dtype(name if name != "bool" else "bool"))


def as_array(value: Any, *, name: str, output: bool) -> tuple[np.ndarray, int]:
    """The numpy view (and dtype code) of one tensor argument."""
    if isinstance(value, np.ndarray):  # first: the common case, on the warm-call path
        array, code = value, code_of(value.dtype)
    elif type(value).__module__.startswith("torch"):
        array, code = _torch_to_numpy(value)
    else:
        raise ArgumentError(
            f"argument {name!r}: expected a numpy array or torch tensor, got {type(value).__name__}"
        )
    flags = array.flags  # a new flags object per access
    if not flags.c_contiguous:
        if output:
            raise ArgumentError(
                f"output argument {name!r} is not contiguous; the kernel's writes would "
                "land in a copy — pass a contiguous array (e.g. np.ascontiguousarray)"
            )
        array = np.ascontiguousarray(array)
        flags = array.flags
    if output and not flags.writeable:
        raise ArgumentError(f"output argument {name!r} is read-only")
    return array, code


def scalar_slot(value: Any, *, name: str) -> int:
    """A 64-bit slot: integers as int64, floats as the bits of a double."""
    if isinstance(value, (bool, np.bool_)):
        return int(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return struct.unpack("<q", struct.pack("<d", float(value)))[0]
    raise ArgumentError(f"argument {name!r}: expected a number, got {type(value).__name__}")


def marshal(args: list[Any], outputs: set[int] | None = None) -> Marshalled:
    """Tensors first (in order), then scalars — the kernel ABI's argument order."""
    outputs = outputs or set()
    tensors, scalars = [], []
    for i, a in enumerate(args):
        if isinstance(a, (int, float, np.number, bool)):
            scalars.append(scalar_slot(a, name=f"#{i}"))
        else:
            tensors.append(as_array(a, name=f"#{i}", output=i in outputs))
    return Marshalled(tensors, scalars)
