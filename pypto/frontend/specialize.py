"""Specialising a kernel on its call arguments.

Tensors (numpy arrays, torch tensors, anything with ``.shape`` and ``.dtype``) contribute
their shape and dtype; scalars contribute their value, which folds into the kernel body.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from typing import Any

from pypto.errors import ArgumentMismatchError, SourceSpan
from pypto.ir.dims import DynDim
from pypto.ir.dtypes import BOOL, FP32, INDEX, DataType, from_array_dtype

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pypto.ir.types import TensorType


def is_array(value: Any) -> bool:
    return hasattr(value, "shape") and hasattr(value, "dtype") and not isinstance(value, (int, float))


def scalar_value(value: Any) -> int | float | bool | None:
    """A Python number for ``value`` (numpy scalars unwrapped), or None if it is not one."""
    if isinstance(value, (bool, int, float)):
        return value
    item = getattr(value, "item", None)
    if callable(item) and getattr(value, "shape", None) == ():
        v = item()
        return v if isinstance(v, (bool, int, float)) else None
    return None


def bind_arguments(
    fn_name: str,
    params: Sequence[str],
    args: Sequence[Any],
    kwargs: Mapping[str, Any],
    span: SourceSpan | None,
) -> list[Any]:
    """Arguments in parameter order; a wrong count or an unknown keyword is an error."""
    if len(args) > len(params) or any(k not in params for k in kwargs):
        extra = [k for k in kwargs if k not in params]
        detail = f"unknown keyword `{extra[0]}`" if extra else f"{len(args)} were given"
        raise ArgumentMismatchError(
            f"{fn_name}() takes {len(params)} arguments ({', '.join(params)}) but {detail}", span
        )
    twice = [k for k in params[: len(args)] if k in kwargs]
    if twice:  # Python's own rule: "got multiple values for argument"
        raise ArgumentMismatchError(
            f"{fn_name}() got multiple values for argument `{twice[0]}` (given by position and by keyword)",
            span,
        )
    values = list(args)
    for name in params[len(args) :]:
        if name not in kwargs:
            given = len(args) + len(kwargs)
            raise ArgumentMismatchError(
                f"{fn_name}() takes {len(params)} arguments ({', '.join(params)}) but {given} were given; "
                f"`{name}` is missing",
                span,
            )
        values.append(kwargs[name])
    return values


def tensor_arg(value: Any, pname: str, fn_name: str, declared: TensorType | None, span: SourceSpan | None):
    """The tensor type of an array argument, checked against a declared type."""
    # The IR types load here, in a compile: a call served by the program cache only needs the key.
    from pypto.ir.types import TensorType, is_static

    if not is_array(value):
        raise ArgumentMismatchError(
            f"argument `{pname}` of {fn_name}() must be a tensor (numpy array or torch tensor), "
            f"got {type(value).__name__}",
            span,
        )
    try:
        dtype = from_array_dtype(value.dtype)
    except ValueError as err:
        raise ArgumentMismatchError(f"argument `{pname}` of {fn_name}(): {err}", span) from None
    t = TensorType(tuple(int(d) for d in value.shape), dtype)
    if declared is not None and not is_static(declared.shape):
        t = _with_dynamic_dims(t, declared)  # sized at run time: the type keeps the symbol
    if declared is not None and declared != t:
        raise ArgumentMismatchError(
            f"argument `{pname}` of {fn_name}() is {list(t.shape)} {dtype} but the signature declares "
            f"{list(declared.shape)} {declared.dtype}",
            span,
        )
    return t


def _with_dynamic_dims(t: TensorType, declared: TensorType) -> TensorType:
    if len(t.shape) != len(declared.shape):
        return t  # the rank mismatch is reported against the declaration
    from pypto.ir.types import TensorType

    return TensorType(
        tuple(d if isinstance(d, DynDim) else n for n, d in zip(t.shape, declared.shape)), t.dtype
    )


def dynamic_axes(jit: Any) -> tuple[tuple[int, int, str], ...]:
    """(parameter index, axis, symbol) of every ``pl.dynamic`` dim in the signature (cached)."""
    found = jit.__dict__.get("_dynamic_axes")
    if found is None:
        try:
            hints = inspect.get_annotations(jit.fn, eval_str=True)
        except Exception:  # an annotation Python cannot evaluate: the frontend reports it
            hints = {}
        found = []
        for i, name in enumerate(jit.param_names):
            spec = hints.get(name)
            spec = getattr(spec, "inner", spec)  # pl.Out[...] / pl.InOut[...]
            for axis, d in enumerate(getattr(spec, "shape", None) or ()):
                if isinstance(d, DynDim):
                    found.append((i, axis, d.name))
        found = jit.__dict__["_dynamic_axes"] = tuple(found)
    return found


def _dynamic_key(jit: Any, args: Sequence[Any], key: list[tuple]) -> None:
    """Dynamic dims leave the key (the symbol stands in); one symbol must mean one size."""
    sizes: dict[str, tuple[int, str]] = {}
    for i, axis, sym in dynamic_axes(jit):
        shape = getattr(args[i], "shape", None)
        if shape is None or axis >= len(shape) or key[i][0] != "tensor":
            continue  # not an array of that rank: the frontend reports the mismatch
        n, pname = int(shape[axis]), jit.param_names[i]
        if sym in sizes and sizes[sym][0] != n:
            raise ArgumentMismatchError(
                f"{jit.name}(): dynamic dim {sym} is {sizes[sym][0]} in `{sizes[sym][1]}` "
                f"but {n} in `{pname}`"
            )
        sizes[sym] = (n, pname)
        dims = list(key[i][1])
        dims[axis] = sym
        key[i] = ("tensor", tuple(dims), key[i][2])


def scalar_arg(value: Any, pname: str, fn_name: str, dtype: DataType | None, span: SourceSpan | None):
    """(scalar type, Python value) of a scalar argument (specialisation constant)."""
    from pypto.ir.types import ScalarType

    v = scalar_value(value)
    if v is None:
        raise ArgumentMismatchError(
            f"argument `{pname}` of {fn_name}() must be a number, got {type(value).__name__}", span
        )
    if dtype is None:
        dtype = BOOL if isinstance(v, bool) else INDEX if isinstance(v, int) else FP32
    if dtype.is_float:
        v = float(v)
    elif dtype.is_integer:
        if isinstance(v, float) and not v.is_integer():
            raise ArgumentMismatchError(
                f"argument `{pname}` of {fn_name}() must be an integer, got {v}", span
            )
        v = int(v)
    return ScalarType(dtype), v


# numpy.ndarray once one was seen (the frontend does not import numpy): its shape is already a
# tuple, so the common argument's key skips the probing below.
_ARRAY_TYPES: set[type] = set()


def _key_of(value: Any) -> tuple:
    if type(value) in _ARRAY_TYPES:
        return ("tensor", value.shape, value.dtype)
    shape = getattr(value, "shape", None)
    if shape is not None and not isinstance(value, (int, float)):
        dtype = getattr(value, "dtype", None)
        if dtype is not None:  # dtype objects hash and compare; str() would cost microseconds
            if type(value).__name__ == "ndarray" and type(value).__module__ == "numpy":
                _ARRAY_TYPES.add(type(value))
            return ("tensor", tuple(shape), dtype)
    v = scalar_value(value)
    if v is not None:
        return (type(v).__name__, v)
    return ("object", type(value).__name__)


def specialization_key(jit: Any, args: Sequence[Any], kwargs: Mapping[str, Any]) -> tuple:
    """Per parameter: (``"tensor"``, shape, dtype) or (scalar type, value).

    On the warm-call path, so it avoids ``inspect`` and allocations beyond the key itself.
    """
    params = jit.param_names
    if kwargs or len(args) != len(params):
        args = bind_arguments(jit.name, params, args, kwargs, None)
    key = [_key_of(v) for v in args]
    if dynamic_axes(jit):
        _dynamic_key(jit, args, key)
    return tuple(key)
