"""IR types: scalars, tensors (global memory), tiles (on-chip), and memory references.

Types are plain frozen values without spans; equality is structural. A ``MemRef`` is the
binding of a tile to a named buffer: declared by the user (``pl.MemRef("ub", slots=2)[i % 2]``)
or created by address assignment (``pl.MemRef(mem_vec_0, 0, 32768)``).
"""

from __future__ import annotations

import math
from dataclasses import replace

from pypto._dataclass import dataclass
from pypto.ir.dims import DynDim
from pypto.ir.dtypes import INDEX, DataType
from pypto.ir.enums import MemorySpace

TYPE_CHECKING = False  # annotations only: not importing typing keeps `import pypto.language` light
if TYPE_CHECKING:
    from typing import TypeGuard

    from pypto.ir.expr import Expr


class Type:
    """Base of all IR types."""


@dataclass(frozen=True)
class ScalarType(Type):
    """A scalar value (loop variable, offset, scalar parameter)."""

    dtype: DataType


def is_static(shape: tuple) -> TypeGuard[tuple[int, ...]]:
    """True when every dimension is a compile-time int (no ``pl.dynamic`` dim)."""
    return all(isinstance(d, int) for d in shape)


@dataclass(frozen=True)
class TensorType(Type):
    """A tensor in global memory (DDR); a dim may be a :class:`DynDim` (sized at run time)."""

    shape: tuple[int | DynDim, ...]
    dtype: DataType

    @property
    def nbytes(self) -> int:
        if not is_static(self.shape):
            raise TypeError(f"a tensor with a pl.dynamic dim {list(self.shape)} has no static size")
        return math.prod(self.shape) * self.dtype.itemsize


@dataclass(frozen=True)
class MemRef:
    """A tile's storage: a named buffer of ``slots`` equal slots and the slot it uses.

    ``offset``/``size`` are set by address assignment: the slot-0 byte offset inside the
    tile's memory space and the bytes of one slot, so slot ``k`` sits at
    ``offset + k * size``. ``index`` selects the slot (any index expression, e.g. ``i % 2``).
    """

    name: str
    slots: int = 1
    index: Expr | None = None
    offset: int | None = None
    size: int | None = None

    @property
    def allocated(self) -> bool:
        """True once address assignment gave this buffer an offset and a slot size."""
        return self.offset is not None

    def at(self, index: Expr) -> MemRef:
        """This buffer with slot ``index`` selected (``pl.MemRef(...)[i % 2]`` in the DSL)."""
        return replace(self, index=index)

    def with_address(self, offset: int, size: int) -> MemRef:
        """This binding with its assigned slot-0 offset and per-slot size in bytes."""
        return replace(self, offset=offset, size=size)


TILE_REGION_PREFIX = "tile:"  # PTOAS regions of undeclared tiles: "tile:<first tile>"


def is_tile_region(ref: MemRef) -> bool:
    """True for a region the PTOAS planner made for undeclared tiles (not a ``pl.MemRef``)."""
    return ref.name.startswith(TILE_REGION_PREFIX)


@dataclass(frozen=True)
class TileType(Type):
    """An on-chip tile; ``memory`` is ``None`` until inferred, ``memref`` until bound/planned."""

    shape: tuple[int, ...]
    dtype: DataType
    memory: MemorySpace | None = None
    memref: MemRef | None = None

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * self.dtype.itemsize


@dataclass(frozen=True)
class ArrayType(Type):
    """``pl.array.create(n, dtype)``: ``n`` scalars of orchestration code (TaskIds, counters),
    updated by ``a[i] = v`` (a new value of the array, as any rebinding)."""

    size: int
    dtype: DataType


@dataclass(frozen=True)
class VoidType(Type):
    """The result of a call that produces no value."""


INDEX_TYPE = ScalarType(INDEX)


def is_task_ids(t: Type | None) -> bool:
    """A TaskId or an array of them: what ``deps=`` takes."""
    return isinstance(t, (ScalarType, ArrayType)) and t.dtype.kind == "task"


def is_tile(t: Type | None) -> bool:
    return isinstance(t, TileType)


def is_tensor(t: Type | None) -> bool:
    return isinstance(t, TensorType)


def is_scalar(t: Type | None) -> bool:
    return isinstance(t, ScalarType)


def same_shape_dtype(a: Type | None, b: Type | None) -> bool:
    """True when two tile/tensor types agree on shape and dtype (memory may differ)."""
    if a is None or b is None:
        return False
    return getattr(a, "shape", None) == getattr(b, "shape", None) and getattr(a, "dtype", None) == getattr(
        b, "dtype", None
    )


def passes_as(have: Type | None, want: Type) -> bool:
    """True when a value typed ``have`` may be passed for a parameter typed ``want``: a tile or
    tensor of the same shape and dtype, or a tensor whose differing dims are computed at run
    time or are the parameter's ``pl.dynamic`` dims (the launch plan checks those per call);
    any other value of the same type."""
    if isinstance(have, TensorType) and isinstance(want, TensorType) and have.dtype == want.dtype:
        return len(have.shape) == len(want.shape) and all(
            h == w or isinstance(h, DynDim) or isinstance(w, DynDim) for h, w in zip(have.shape, want.shape)
        )
    return same_shape_dtype(have, want) if isinstance(want, (TensorType, TileType)) else have == want


def refines(declared: Type, inferred: Type) -> bool:
    """True when ``declared`` may stand for a value the op typed ``inferred``: the same
    type, or a tile of the same shape/dtype adding a memory space the op left open, or a
    memref."""
    if isinstance(declared, TileType) and isinstance(inferred, TileType):
        if not same_shape_dtype(declared, inferred):
            return False
        return inferred.memory is None or declared.memory == inferred.memory
    return declared == inferred


def format_type(t: Type | None) -> str:
    """Short human form used in error messages (the printer has the full DSL form)."""
    if isinstance(t, ScalarType):
        return f"pl.Scalar[pl.{t.dtype.name}]"
    if isinstance(t, TensorType):
        return f"pl.Tensor[{list(t.shape)}, pl.{t.dtype.name}]"
    if isinstance(t, TileType):
        mem = f", {t.memory.dsl_name}" if t.memory is not None else ""
        return f"pl.Tile[{list(t.shape)}, pl.{t.dtype.name}{mem}]"
    if isinstance(t, ArrayType):
        return f"pl.Array[{t.size}, pl.{t.dtype.name}]"
    return "None"
