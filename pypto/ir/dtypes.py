"""Element data types shared by the DSL (``pl.FP32``) and the IR.

One ``DataType`` instance exists per dtype, so identity and equality agree and the frontend
can fold ``pl.FP32`` straight into IR nodes.
"""

from __future__ import annotations

from pypto._light import Record

TYPE_CHECKING = False  # annotations only: not importing typing keeps `import pypto.language` light
if TYPE_CHECKING:
    from typing import Any


class DataType(Record):
    """An element type: its DSL name, width in bits, and numeric class."""

    __slots__ = ("name", "bits", "kind")
    name: str
    bits: int
    kind: str  # "float" | "int" | "uint" | "bool" | "index"

    def __init__(self, name: str, bits: int, kind: str) -> None:
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "bits", bits)
        object.__setattr__(self, "kind", kind)

    @property
    def itemsize(self) -> int:
        """Bytes per element (bool and int8 both take one byte)."""
        return max(1, self.bits // 8)

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def is_integer(self) -> bool:
        return self.kind in ("int", "uint", "index")

    def __repr__(self) -> str:
        return f"pl.{self.name}"

    def __str__(self) -> str:
        return self.name


FP32 = DataType("FP32", 32, "float")
FP16 = DataType("FP16", 16, "float")
BF16 = DataType("BF16", 16, "float")
INT8 = DataType("INT8", 8, "int")
INT16 = DataType("INT16", 16, "int")
INT32 = DataType("INT32", 32, "int")
INT64 = DataType("INT64", 64, "int")
UINT8 = DataType("UINT8", 8, "uint")
UINT32 = DataType("UINT32", 32, "uint")
BOOL = DataType("BOOL", 8, "bool")
# INDEX is the type of loop variables and offsets: a 64-bit signed scalar slot in the ABI.
INDEX = DataType("INDEX", 64, "index")
# A task's handle in orchestration (``with pl.at(...) as tid``): what ``deps=`` waits for. The
# launch plan evaluates it to the set of tasks it names; it never reaches a kernel.
TASK_ID = DataType("TASK_ID", 64, "task")
# The handles of pl.prefetch (pypto/ops/prefetch.py), named as upstream's handle types: scalars
# of their own kinds so that one cannot stand in for another; none reaches a tensor or the ABI.
PREFETCH_CONTEXT = DataType("PrefetchAsyncContext", 64, "handle")
ASYNC_SESSION = DataType("AsyncSession", 64, "handle")
ASYNC_EVENT = DataType("AsyncEvent", 64, "handle")

ALL_DTYPES: tuple[DataType, ...] = (
    FP32, FP16, BF16, INT8, INT16, INT32, INT64, UINT8, UINT32, BOOL, INDEX, TASK_ID
)  # fmt: skip
BY_NAME: dict[str, DataType] = {d.name: d for d in ALL_DTYPES}
# The element types a tensor or tile holds: the native ABI's pypto_dtype, one each (INDEX and
# TASK_ID are scalar-only). tests/sim/test_hardware_facts.py compares them with the C++ table.
ELEMENT_DTYPES: tuple[DataType, ...] = tuple(d for d in ALL_DTYPES if d.kind not in ("index", "task"))

# numpy / torch / ml_dtypes spell dtypes by these names (torch prefixes "torch.").
_ARRAY_NAMES: dict[str, DataType] = {
    "float32": FP32,
    "float": FP32,
    "float16": FP16,
    "half": FP16,
    "bfloat16": BF16,
    "int8": INT8,
    "int16": INT16,
    "int32": INT32,
    "int64": INT64,
    "long": INT64,
    "uint8": UINT8,
    "uint32": UINT32,
    "bool": BOOL,
}


def from_array_dtype(dtype: Any) -> DataType:
    """Map a numpy, ml_dtypes or torch dtype (or its name) onto a pypto ``DataType``.

    Raises ``ValueError`` naming the dtype when pypto has no equivalent.
    """
    if isinstance(dtype, DataType):
        return dtype
    name = str(getattr(dtype, "name", None) or dtype)
    name = name.removeprefix("torch.")
    found = _ARRAY_NAMES.get(name)
    if found is None:
        raise ValueError(f"dtype {name!r} has no pypto equivalent (supported: {sorted(_ARRAY_NAMES)})")
    return found


_NUMPY: dict[str, Any] = {}  # numpy_dtype's answers: a launch plan asks once per buffer


def numpy_dtype(dtype: DataType) -> Any:
    """The numpy dtype of a pypto ``DataType`` (bfloat16 from ml_dtypes; INDEX is int64)."""
    if dtype.name not in _NUMPY:
        _NUMPY[dtype.name] = _numpy_dtype(dtype)
    return _NUMPY[dtype.name]


def _numpy_dtype(dtype: DataType) -> Any:
    import numpy as np

    if dtype == BF16:
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    aliases = ("float", "half", "long")  # torch's spellings of names numpy has too
    return np.dtype(next((n for n, d in _ARRAY_NAMES.items() if d == dtype and n not in aliases), "int64"))


# Significand bits (with the implicit one) and largest exponent of each float dtype: a finite
# value at or beyond (2 - 2**-p) * 2**emax rounds to infinity (IEEE 754 round-to-nearest).
_FLOAT_FORMATS = {"FP32": (24, 127), "FP16": (11, 15), "BF16": (8, 127)}


def range_error(value: int | float, dtype: DataType) -> str | None:
    """Why a compile-time ``value`` does not fit ``dtype`` (None when it does).

    The static half of the dtype range rule: an integer outside the dtype's range, a
    fractional value for an integer dtype, or a finite value that rounds to infinity in a
    float dtype is refused. (Infinities and NaN given as such are values of a float dtype.)
    """
    if dtype.kind == "bool" or isinstance(value, bool):
        return None
    if dtype.is_float:
        p, emax = _FLOAT_FORMATS[dtype.name]
        limit = (2 - 2.0**-p) * 2.0**emax
        if value == value and abs(value) != float("inf") and abs(value) >= limit:
            largest = f"{(2 - 2.0 ** (1 - p)) * 2.0**emax:.6g}"
            return f"{value} overflows {dtype} (it would round to infinity; the largest is {largest})"
        return None
    if isinstance(value, float) and not value.is_integer():
        return f"{value} is not an integer for {dtype}"
    bits = 64 if dtype.kind == "index" else dtype.bits
    lo, hi = (0, 2**bits - 1) if dtype.kind == "uint" else (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
    return None if lo <= int(value) <= hi else f"{int(value)} does not fit {dtype} [{lo}, {hi}]"


SCALAR_CAST_TARGETS = ("INDEX", "INT64", "INT32", "INT16", "INT8", "UINT32", "UINT8", "BOOL", "FP32")


def cast_scalar(value: int | float | bool, dtype: DataType) -> int | float | bool:
    """``pl.cast`` of a scalar: a float truncates toward zero into an integer dtype, then the
    value wraps to the dtype's width as numpy's ``astype`` does; FP32 rounds to single
    precision. (Generated kernels do the same with ``pypto::cast_int`` in ``kernel.hpp``.)"""
    import struct

    if dtype.name == "BOOL":
        return bool(value)
    if dtype.is_float:
        return struct.unpack("f", struct.pack("f", float(value)))[0]
    v = int(value) if abs(float(value)) < 2.0**63 else -(2**63)  # NaN / too large: INT64_MIN, as x86
    bits = 64 if dtype.kind == "index" else dtype.bits
    v &= (1 << bits) - 1
    return v - (1 << bits) if dtype.kind != "uint" and v >> (bits - 1) else v
