"""Arguments from Python to the kernel ABI: arrays/tensors to GM tensors, numbers to slots.

numpy arrays and torch CPU tensors pass zero-copy. A non-contiguous input is copied; a
non-contiguous output is refused, because the kernel's writes would land in a copy.
"""

from __future__ import annotations

import functools
import math
import struct
from dataclasses import dataclass
from typing import Any

import numpy as np

from pypto.errors import ArgumentError
from pypto.runtime.device_tensor import DeviceTensor, device_array
from pypto.runtime.dtypes import CODES, INPUT, code_of, flagged

__all__ = [
    "ArgumentError",
    "Marshalled",
    "as_array",
    "marshal",
    "scalar_slot",
    "table_entry",
    "table_names",
    "table_roots",
]


@dataclass
class Marshalled:
    tensors: list[tuple[np.ndarray, int]]
    scalars: list[int]
    names: list[str]  # of each tensor, for errors
    outputs: list[int]  # indices into tensors of the ones the kernel may write


def _torch_to_numpy(t: Any, name: str, output: bool) -> tuple[np.ndarray, int]:
    """The numpy view of a CPU tensor. An output the kernel writes gets what torch's own
    in-place ops do: a leaf that requires grad is refused, and the version counter is bumped,
    so a backward that saved the tensor raises instead of computing a wrong gradient."""
    import torch

    if t.device.type != "cpu":
        raise ArgumentError(
            f"argument {name!r}: torch tensor on {t.device} — only CPU tensors can run on the simulator"
        )
    if t.layout != torch.strided:
        raise ArgumentError(f"argument {name!r}: a {t.layout} torch tensor; pass a dense one (t.to_dense())")
    if output:
        if t.requires_grad and t.is_leaf:
            raise ArgumentError(
                f"output argument {name!r} is a leaf tensor that requires grad; torch refuses in-place "
                "writes into it — write into a tensor without requires_grad"
            )
        if t.is_neg() or t.is_conj():
            raise ArgumentError(
                f"output argument {name!r} is a lazily negated or conjugated view; pass t.resolve_neg()"
            )
        torch.autograd.graph.increment_version(t)
    t = t.detach().resolve_neg().resolve_conj()
    try:
        view = torch_view(t)
    except TypeError as e:
        raise ArgumentError(f"argument {name!r}: {e}") from None
    return view, torch_code(t, view)


def torch_view(t: Any) -> np.ndarray:
    """The numpy view of a detached CPU torch tensor; a bf16 one (numpy has no bf16) viewed as
    int16, its dtype code given by ``torch_code``. TypeError: another dtype numpy has not."""
    torch = torch_module()
    return t.view(torch.int16).numpy() if t.dtype is torch.bfloat16 else t.numpy()


@functools.cache
def torch_module() -> Any:
    """torch, imported at the first torch argument (never for numpy callers), then at the cost
    of a call rather than an import statement's lookup (the warm call reads it per tensor)."""
    import torch

    return torch


def torch_code(t: Any, view: np.ndarray) -> int:
    """The dtype code of torch tensor ``t`` seen as ``view`` (``torch_view``)."""
    return CODES["bfloat16"] if str(t.dtype) == "torch.bfloat16" else code_of(view.dtype)


def as_array(value: Any, *, name: str, output: bool) -> tuple[np.ndarray, int]:
    """The numpy view (and flagged dtype code, ``dtypes.flagged``) of one tensor argument.

    Inputs are flagged read-only for the simulator: a kernel's TSTORE into one is refused."""
    if isinstance(value, np.ndarray):  # first: the common case, on the warm-call path
        array, code = value, None
    elif type(value).__module__.startswith("torch"):
        array, code = _torch_to_numpy(value, name, output)
    elif type(value).__name__ == "DeviceTensor":  # resident in a ChipWorker: its device bytes
        if isinstance(value, DeviceTensor):
            return device_array(value, name=name, output=output)
        raise ArgumentError(
            f"argument {name!r}: expected a numpy array or torch tensor, got {type(value).__name__}"
        )
    else:
        raise ArgumentError(
            f"argument {name!r}: expected a numpy array or torch tensor, got {type(value).__name__}"
        )
    code = _code(array, name) if code is None else code
    flags = array.flags  # a new flags object per access
    if not flags.c_contiguous or not array.dtype.isnative:
        if output:
            why = "is not contiguous" if not flags.c_contiguous else "is not in native byte order"
            raise ArgumentError(
                f"output argument {name!r} {why}; the kernel's writes would land in a copy — pass "
                "a contiguous, native-order array (e.g. np.ascontiguousarray(x, x.dtype.newbyteorder('=')))"
            )
        array = np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("="))
        flags = array.flags
    if output and not flags.writeable:
        raise ArgumentError(f"output argument {name!r} is read-only")
    return array, code if output else flagged(code, INPUT)


def _code(array: np.ndarray, name: str) -> int:
    try:
        return code_of(array.dtype if array.dtype.isnative else array.dtype.newbyteorder("="))
    except TypeError as e:
        raise ArgumentError(f"argument {name!r}: {e}") from None


def check_no_overlap(arrays: list[tuple[np.ndarray, int]], names: list[str], outputs: set[int]) -> None:
    """Refuses an output that shares memory with another tensor argument (views of one
    buffer): the kernel would read values it has already overwritten."""
    for i in outputs:
        out = arrays[i][0]
        for j, (other, _) in enumerate(arrays):
            if j != i and not _owners_apart(out, other) and np.may_share_memory(out, other):
                raise ArgumentError(
                    f"output argument {names[i]!r} overlaps argument {names[j]!r} (views of one buffer); "
                    "the kernel would read what it already overwrote — pass separate arrays (e.g. a copy)"
                )


def _owners_apart(a: np.ndarray, b: np.ndarray) -> bool:
    """Two distinct arrays that each own their buffer cannot overlap: the common case, answered
    without ``np.may_share_memory`` (a third of a microsecond per pair on the warm call)."""
    return a is not b and a.flags.owndata and b.flags.owndata


def scalar_slot(value: Any, *, name: str) -> int:
    """A 64-bit slot: integers as int64, floats as the bits of a double."""
    if type(value) is int and -(2**63) <= value < 2**63:  # the commonest: a plan's index or size
        return value
    if isinstance(value, (bool, np.bool_)):
        return int(value)
    if isinstance(value, (int, np.integer)):
        if not -(2**63) <= int(value) < 2**63:
            raise ArgumentError(f"argument {name!r}: {int(value)} does not fit a 64-bit integer slot")
        return int(value)
    if isinstance(value, (float, np.floating)):
        return struct.unpack("<q", struct.pack("<d", float(value)))[0]
    raise ArgumentError(f"argument {name!r}: expected a number, got {type(value).__name__}")


def marshal(args: list[Any], outputs: set[int] | None = None) -> Marshalled:
    """Tensors first (in order), then scalars — the kernel ABI's argument order. Tensors not in
    ``outputs`` are inputs: read-only to the kernel."""
    if outputs is not None and not isinstance(outputs, (set, frozenset, list, tuple)):
        raise ArgumentError(f"outputs= must be a set of argument indices, got {outputs!r}")
    outputs = set(outputs or ())
    bad = sorted((i for i in outputs if not isinstance(i, int) or not 0 <= i < len(args)), key=repr)
    if bad:
        raise ArgumentError(f"outputs= names argument(s) {bad}, but there are {len(args)} arguments")
    tensors: list[tuple[np.ndarray, int]] = []
    scalars: list[int] = []
    names: list[str] = []
    outs: set[int] = set()
    for i, a in enumerate(args):
        if isinstance(a, (int, float, np.number, bool)):
            if i in outputs:
                raise ArgumentError(f"outputs= names argument #{i}, a scalar; only tensors can be outputs")
            scalars.append(scalar_slot(a, name=f"#{i}"))
        else:
            if i in outputs:
                outs.add(len(tensors))
            tensors.append(as_array(a, name=f"#{i}", output=i in outputs))
            names.append(f"#{i}")
    check_no_overlap(tensors, names, outs)
    return Marshalled(tensors, scalars, names, sorted(outs))


def table_entry(entry: tuple, table: list[tuple]) -> tuple:
    """(array, dtype code) of one entry after the parameters (``CompiledProgram.intermediates``)."""
    if entry[0] == "new":
        _, shape, dtype, init = entry
        storage, code = scratch_dtype(dtype)
        fill = scratch_fill(dtype, init)
        if fill is None:  # np.zeros: 3-4x np.full's speed
            return np.zeros(shape, storage), code
        return np.full(shape, fill, dtype=storage), code
    _, base, shape, offsets = entry
    array, code = table[base]
    if offsets is not None:
        if len(offsets) == 2:  # the common slice, spelled out: 4x the general form's speed
            (r, c), (rows, cols) = offsets, shape
            return array[r : r + rows, c : c + cols], code
        return array[tuple(slice(o, o + n) for o, n in zip(offsets, shape))], code
    view = array.view()
    try:
        view.shape = shape  # a view or nothing: a copy would not see the kernels' writes
    except AttributeError:
        raise ArgumentError(
            f"pl.reshape to {list(shape)} needs a contiguous tensor, got strides {list(array.strides)}"
        ) from None
    except ValueError:  # sizes known only now (a view sized from pl.dynamic dims)
        raise ArgumentError(
            f"pl.reshape of {list(array.shape)} to {list(shape)} changes the element count"
        ) from None
    return view, code


_SCRATCH_DTYPES: dict[str, tuple[np.dtype, int]] = {}


def scratch_fill(dtype: str, init: float) -> Any:
    """What a scratch tensor of ``dtype`` starting at ``init`` is filled with (bfloat16: its
    bits), or None when it starts at +0 (zeroed memory; -0.0 is a fill)."""
    if init == 0 and math.copysign(1.0, init) > 0:
        return None
    return bf16_bits(init) if dtype == "bfloat16" else init


def scratch_dtype(name: str) -> tuple[np.dtype, int]:
    """(the numpy dtype holding a scratch tensor of dtype ``name``, its ABI code), kept per name:
    a decode makes tens of thousands of scratch tensors a call."""
    found = _SCRATCH_DTYPES.get(name)
    if found is None:
        if name == "bfloat16":  # its bits in int16, as torch's are passed: no ml_dtypes (0.7 s)
            found = (np.dtype(np.int16), CODES["bfloat16"])
        else:
            found = (np.dtype(name), code_of(np.dtype(name)))
        _SCRATCH_DTYPES[name] = found
    return found


def table_roots(entries: list[tuple], n_params: int) -> list[int]:
    """Per table entry (parameters, then ``entries``), the entry whose buffer it sees."""
    roots = list(range(n_params))
    for k, e in enumerate(entries):
        roots.append(roots[e[1]] if e[0] == "view" else n_params + k)
    return roots


def table_names(params: list[str], entries: list[tuple], extra: list[int]) -> list[str]:
    """What an error calls each table entry: the tensor parameters ``params``, then ``entries``,
    then the read-only duplicates of the entries ``extra`` lists."""
    names = [f"argument {n!r}" for n in params]
    names += [f"pl.create_tensor #{k}" if e[0] == "new" else f"view #{k}" for k, e in enumerate(entries)]
    return names + [names[j] for j in extra]


def bf16_bits(value: float) -> int:
    """``value`` rounded to the nearest bfloat16 as ml_dtypes rounds a double (ties to even;
    past the largest, infinity; a NaN, the quiet NaN of its sign): the int16 of its bits."""
    x = float(value)
    sign = 0x8000 if math.copysign(1.0, x) < 0 else 0
    if math.isnan(x) or math.isinf(x):
        top = 0x7FC0 if math.isnan(x) else 0x7F80
    else:  # 8 significant bits at the value's binade (at the smallest normal one below it)
        ulp = math.ldexp(1.0, max(math.frexp(x)[1], -125) - 8)
        v = abs(round(x / ulp)) * ulp  # exact: the quotient is below 2**8
        top = 0x7F80 if v >= 2.0**128 else struct.unpack("<I", struct.pack("<f", v))[0] >> 16
    top |= sign
    return top - 0x10000 if top & 0x8000 else top
