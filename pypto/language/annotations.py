"""Type annotations of the DSL: ``pl.Tensor``, ``pl.Tile``, ``pl.Scalar``, ``pl.Out``,
``pl.InOut`` and ``pl.MemRef``.

They are real Python objects because parameter annotations are evaluated when a kernel is
defined; the frontend reads their AST (or these objects) and turns them into IR types.

The IR types (``pypto.ir.types``, dataclasses) load when first needed: by ``pl.MemRef``, or
when the compiler converts an annotation. Defining a kernel needs neither, and a call served
by the program cache converts none.
"""

from __future__ import annotations

import os.path
import sys

from pypto._light import Record
from pypto.ir.dims import DynDim
from pypto.ir.dtypes import DataType
from pypto.ir.enums import Direction, MemorySpace, PadValue, TensorLayout

TYPE_CHECKING = False  # annotations only: not importing typing keeps `import pypto.language` light
if TYPE_CHECKING:
    from typing import Any

    from pypto.ir.types import MemRef as _IRMemRef
    from pypto.ir.types import ScalarType, TensorType, TileType, Type
    from pypto.language.memref import MemRefDecl


def _shape(value: Any, what: str, dynamic: bool = False) -> tuple[int, ...]:
    def ok(d: Any) -> bool:
        if isinstance(d, int):
            return not isinstance(d, bool) and d > 0
        return dynamic and isinstance(d, DynDim)

    if not isinstance(value, (list, tuple)) or not all(ok(d) for d in value):
        kinds = "positive ints or pl.dynamic dims" if dynamic else "positive ints"
        raise TypeError(f"{what} shape must be a list of {kinds}, got {value!r}")
    return tuple(value)


def dynamic(name: str) -> DynDim:
    """``M = pl.dynamic("M")``: a tensor dim sized at run time, for ``pl.Tensor[[M, 128], ...]``.

    One compile serves every size; in a kernel body ``M`` is the size of the call's tensor."""
    if not isinstance(name, str) or not name.isidentifier():
        raise TypeError(f"pl.dynamic needs an identifier name, got {name!r}")
    return DynDim(name)


def _dtype(value: Any, what: str) -> DataType:
    if not isinstance(value, DataType):
        raise TypeError(f"{what} dtype must be a pl dtype such as pl.FP32, got {value!r}")
    return value


class TensorView(Record):
    """``pl.TensorView(stride=, layout=, valid_shape=, pad=)``, a tensor annotation's third
    item: how its elements lie in GM. Tensors here are row-major (ND) with the strides the
    caller's array has, so a view may say so — ``layout=pl.TensorLayout.ND``, row-major
    ``stride`` — and anything else is refused with what to write instead: another layout or
    stride, and a ``valid_shape`` (with its ``pad``), which a load of the tensor would have to
    inherit — give ``valid_shape=`` (and a fill) to the loads instead."""

    __slots__ = ("stride", "layout", "valid_shape", "pad")
    stride: tuple[Any, ...] | None
    layout: TensorLayout
    valid_shape: tuple[Any, ...] | None
    pad: PadValue | None

    def __init__(
        self,
        stride: Any = None,
        layout: TensorLayout = TensorLayout.ND,
        valid_shape: Any = None,
        pad: PadValue | None = None,
    ) -> None:
        object.__setattr__(self, "stride", None if stride is None else tuple(stride))
        object.__setattr__(self, "layout", layout)
        object.__setattr__(self, "valid_shape", None if valid_shape is None else tuple(valid_shape))
        object.__setattr__(self, "pad", pad)

    def check(self, shape: tuple[Any, ...]) -> None:
        """Refuses (TypeError) what this view asks of a tensor of ``shape`` beyond row-major."""
        if self.layout is not TensorLayout.ND:
            layout = f"pl.TensorLayout.{self.layout.name}"
            raise TypeError(f"pl.TensorView(layout={layout}): tensors here are row-major (ND)")
        if self.stride is not None:
            row_major: list[Any] = [1]
            for d in reversed(shape[1:]):
                row_major.insert(0, d * row_major[0] if isinstance(d, int) and row_major[0] else None)
            if len(self.stride) != len(shape) or any(
                w is not None and s != w for s, w in zip(self.stride, row_major)
            ):
                raise TypeError(f"pl.TensorView(stride={list(self.stride)}): tensors here are row-major")
        if self.valid_shape is not None or self.pad is not None:
            raise TypeError(
                "pl.TensorView(valid_shape=/pad=) is not supported: give valid_shape= (and the fill, "
                "pl.tile.fillpad) to the loads that read the tensor"
            )


class TensorSpec(Record):
    """``pl.Tensor`` (shape/dtype from the argument) or ``pl.Tensor[[d0, d1], pl.FP32]``."""

    __slots__ = ("shape", "dtype")
    shape: tuple[int, ...] | None
    dtype: DataType | None

    def __init__(self, shape: tuple[int, ...] | None = None, dtype: DataType | None = None) -> None:
        object.__setattr__(self, "shape", shape)
        object.__setattr__(self, "dtype", dtype)

    def __getitem__(self, item: Any) -> TensorSpec:
        if not isinstance(item, tuple) or len(item) not in (2, 3):
            raise TypeError("write pl.Tensor[[d0, d1, ...], dtype] (or with a pl.TensorView third)")
        shape = _shape(item[0], "pl.Tensor", dynamic=True)
        if len(item) == 3:
            if not isinstance(item[2], TensorView):
                raise TypeError(f"the third item of pl.Tensor[...] is a pl.TensorView, got {item[2]!r}")
            item[2].check(shape)
        return TensorSpec(shape, _dtype(item[1], "pl.Tensor"))

    def to_type(self) -> TensorType | None:
        """The IR type, or None for a bare ``pl.Tensor`` (specialised from the argument)."""
        if self.shape is None or self.dtype is None:
            return None
        from pypto.ir.types import TensorType

        return TensorType(self.shape, self.dtype)


class TileSpec(Record):
    """``pl.Tile[[r, c], dtype(, pl.MemRef(...)[idx])(, pl.Mem.<Space>)]``."""

    __slots__ = ("shape", "dtype", "memory", "memref")
    shape: tuple[int, ...] | None
    dtype: DataType | None
    memory: MemorySpace | None
    memref: _IRMemRef | None

    def __init__(
        self,
        shape: tuple[int, ...] | None = None,
        dtype: DataType | None = None,
        memory: MemorySpace | None = None,
        memref: _IRMemRef | None = None,
    ) -> None:
        object.__setattr__(self, "shape", shape)
        object.__setattr__(self, "dtype", dtype)
        object.__setattr__(self, "memory", memory)
        object.__setattr__(self, "memref", memref)

    def __getitem__(self, item: Any) -> TileSpec:
        if not isinstance(item, tuple) or len(item) < 2:
            raise TypeError("write pl.Tile[[rows, cols], dtype, (pl.MemRef(...),) (pl.Mem.<Space>)]")
        memory, memref = None, None
        for extra in item[2:]:
            if isinstance(extra, MemorySpace):
                memory = extra
                continue
            from pypto.ir.types import MemRef as IRMemRef  # loaded already if pl.MemRef was used
            from pypto.language.memref import ir_memref

            if isinstance(extra, IRMemRef):
                memref = ir_memref(extra)
            else:
                raise TypeError(f"pl.Tile takes a memory space or a pl.MemRef after the dtype, got {extra!r}")
        if memref is not None and memory is None:
            raise TypeError("pl.Tile with a pl.MemRef needs a memory space, e.g. pl.Mem.Vec")
        return TileSpec(_shape(item[0], "pl.Tile"), _dtype(item[1], "pl.Tile"), memory, memref)

    def to_type(self) -> TileType | None:
        if self.shape is None or self.dtype is None:
            return None
        from pypto.ir.types import TileType

        return TileType(self.shape, self.dtype, self.memory, self.memref)


class ScalarSpec(Record):
    """``pl.Scalar[pl.INDEX]``; a bare dtype (``n: pl.INDEX``) means the same."""

    __slots__ = ("dtype",)
    dtype: DataType | None

    def __init__(self, dtype: DataType | None = None) -> None:
        object.__setattr__(self, "dtype", dtype)

    def __getitem__(self, item: Any) -> ScalarSpec:
        return ScalarSpec(_dtype(item, "pl.Scalar"))

    def to_type(self) -> ScalarType | None:
        from pypto.ir.types import ScalarType

        return ScalarType(self.dtype) if self.dtype is not None else None


class ArraySpec(Record):
    """``pl.Array[n, dtype]``: an orchestration array (``pl.array.create(n, dtype)``)."""

    __slots__ = ("size", "dtype")
    size: int | None
    dtype: DataType | None

    def __init__(self, size: int | None = None, dtype: DataType | None = None) -> None:
        object.__setattr__(self, "size", size)
        object.__setattr__(self, "dtype", dtype)

    def __getitem__(self, item: Any) -> ArraySpec:
        if not (isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], int) and item[0] > 0):
            raise TypeError("write pl.Array[n, dtype] with n a positive int")
        return ArraySpec(item[0], _dtype(item[1], "pl.Array"))

    def to_type(self) -> Type | None:
        from pypto.ir.types import ArrayType

        return ArrayType(self.size, self.dtype) if self.size is not None and self.dtype else None


class DirectionSpec(Record):
    """``pl.Out[...]`` / ``pl.InOut[...]``: a parameter the function writes."""

    __slots__ = ("direction", "inner")
    direction: Direction
    inner: Any

    def __init__(self, direction: Direction, inner: Any = None) -> None:
        object.__setattr__(self, "direction", direction)
        object.__setattr__(self, "inner", inner)

    def __getitem__(self, item: Any) -> DirectionSpec:
        if not isinstance(item, (TensorSpec, TileSpec)):
            raise TypeError(f"{self.direction.name} wraps a pl.Tensor or pl.Tile annotation, got {item!r}")
        return DirectionSpec(self.direction, item)


Tensor = TensorSpec()
Tile = TileSpec()
Scalar = ScalarSpec()
Array = ArraySpec()
Out = DirectionSpec(Direction.Out)
InOut = DirectionSpec(Direction.InOut)


def MemRef(  # noqa: N802 - spelled like a type in the DSL
    name: str | None = None, offset: int | None = None, size: int | None = None, *, slots: int = 1
) -> MemRefDecl:
    """A named buffer of ``slots`` equal slots; subscript it to pick a slot: ``m[i % 2]``.

    Without a name the buffer is named after the line that spells it (``pl.MemRef()``,
    ``pl.MemRef(slots=2)``): one spelling, one buffer. ``offset``/``size`` (bytes) appear once
    address assignment has placed the buffer; a ``size`` alone is a PTOAS region, placed when
    the kernel starts.
    """
    if name is None:
        caller = sys._getframe(1)
        # os.path, not pathlib: importing pathlib would cost pypto.language 4 ms
        stem = os.path.splitext(os.path.basename(caller.f_code.co_filename))[0]
        name = f"memref_{stem}_l{caller.f_lineno}"
    if not isinstance(name, str) or not name:
        raise TypeError(f"pl.MemRef needs a name string, got {name!r}")
    if not isinstance(slots, int) or slots < 1:
        raise ValueError(f"pl.MemRef slots must be a positive int, got {slots!r}")
    if offset is not None and size is None:
        raise ValueError("pl.MemRef with an offset needs a size too")
    from pypto.language.memref import MemRefDecl

    return MemRefDecl(name, slots, None, offset, size)


def spec_to_type(spec: Any) -> tuple[Type | None, Direction] | None:
    """Convert an evaluated annotation object to (IR type or None, direction); None if not one."""
    if isinstance(spec, DirectionSpec):
        inner = spec_to_type(spec.inner)
        return (inner[0] if inner else None), spec.direction
    if isinstance(spec, DataType):
        from pypto.ir.types import ScalarType

        return ScalarType(spec), Direction.In
    if isinstance(spec, (TensorSpec, TileSpec, ScalarSpec, ArraySpec)):
        return spec.to_type(), Direction.In
    return None
