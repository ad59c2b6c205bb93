"""Typing rules the frontend applies on top of the op table.

The op table (``pypto.ir.ops`` / ``pypto.ir.bind``) types each call; this layer adds what
depends on *where* the call is: op placement (orchestration vs InCore), windows checked
against the loop ranges in scope, annotations merged with inferred types, scalar
arithmetic without implicit promotion, and the ``OutParamWriteDropped`` warning.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import field

from pypto._dataclass import dataclass
from pypto.errors import BoundsCheckError, MisplacedOpError, SourceSpan, TypeCheckError
from pypto.frontend.bounds import Interval, interval
from pypto.ir.bind import bind_call
from pypto.ir.dtypes import BOOL, INDEX, INT32, INT64, DataType
from pypto.ir.enums import FunctionType
from pypto.ir.expr import (
    BinOp,
    Call,
    Const,
    Expr,
    FuncCall,
    ListExpr,
    Literal,
    Var,
    make_binop,
    scalar_type,
    shaped_type,
    type_of,
)
from pypto.ir.ops import OPS, resolve_candidates
from pypto.ir.types import DynDim, ScalarType, TensorType, TileType, Type, format_type, refines


class OutParamWriteDropped(UserWarning):
    """Rebinding a ``pl.Out`` parameter to a new value writes nothing to the caller's buffer."""


@dataclass
class Context:
    """Where the code being parsed sits."""

    kind: FunctionType
    in_scope: bool = False  # inside a ``with pl.at(...)`` block
    # inside ``with pl.cluster():``: the split modes of the pl.at scopes met in it (None: none
    # given), in order; None outside a cluster
    cluster_ats: list | None = None
    # inside a pl.at scope: the (mode, span) of each pl.split_aiv region met in it, in order
    aiv_splits: list | None = None
    ranges: dict[str, Interval] = field(default_factory=dict)  # loop variable → value bounds


INCORE_BLOCK_HINT = "wrap them in `with pl.at(level=pl.Level.CORE_GROUP):`"


def check_placement(op_name: str, display: str, ctx: Context, span: SourceSpan | None) -> None:
    """Tile/tensor ops belong in InCore code; orchestration ops outside it."""
    op = OPS[op_name]
    incore = ctx.kind.is_incore or ctx.in_scope
    if op.allowed(incore):
        return
    if not incore:
        raise MisplacedOpError(
            f"Misplaced tensor op `{display}`: tensor and tile ops should be inside InCore block "
            f"({INCORE_BLOCK_HINT})",
            span,
        )
    raise MisplacedOpError(f"`{display}` is an orchestration op: use it outside pl.at / InCore kernels", span)


def op_call(
    candidates: Sequence[str],
    display: str,
    args: Sequence[Expr],
    kwargs: Mapping[str, Expr],
    ctx: Context,
    span: SourceSpan | None,
    window: Sequence[int | None] | None = None,
) -> tuple[Call, Type]:
    """Resolve, place, bind and type one op call, then check its window statically
    (``window``: the window's shape when it is not the operand's, ``pl.store(shapes=)``)."""
    if _takes_indices(candidates) and len(args) >= 2 and isinstance(type_of(args[1]), ScalarType):
        args = [args[0], flat_indices(args[0], args[1], display, span), *args[2:]]
    op_name = resolve_candidates(candidates, args, tuple(kwargs))
    check_placement(op_name, display, ctx, span)
    call, result = bind_call(op_name, args, kwargs, span=span, display=display)
    if ctx.kind.is_incore or ctx.in_scope:
        _static_sizes(call, display, span)
    check_window(call, ctx.ranges, display, span, window)
    return call, result


def _static_sizes(call: Call, display: str, span: SourceSpan | None) -> None:
    """On chip a window's sizes are the tile's, fixed when compiled; orchestration's views of
    tensors may be sized at run time."""
    if call.op == "tensor.slice" and any(not isinstance(i, Const) for i in call.list_arg("shape").items):
        raise TypeCheckError(
            f"{display} inside a kernel needs sizes known at compile time; for a tail, give the "
            "full sizes and valid_shape=[...] with the sizes computed at run time",
            span,
        )


def _takes_indices(candidates: Sequence[str]) -> bool:
    """Whether the ops take one element's ``indices`` second (pl.read, pl.write)."""
    return all(len(OPS[c].params) > 1 and OPS[c].params[1].name == "indices" for c in candidates)


def flat_indices(src: Expr, flat: Expr, display: str, span: SourceSpan | None) -> ListExpr:
    """``pl.read(x, i)`` with one index: upstream's flat (row-major) access, as one index per
    axis of ``x`` (``[i]`` for a rank-1 ``x``; ``[i // C, i % C]`` for ``[R, C]``)."""
    shape = getattr(type_of(src), "shape", None)
    if shape is None:
        raise TypeCheckError(
            f"{display}: one index addresses a tensor or tile, got {format_type(type_of(src))}", span
        )
    if not all(isinstance(d, int) for d in shape[1:]):
        raise TypeCheckError(
            f"{display}: a flat index into {list(shape)} needs compile-time sizes after the first axis; "
            "give one index per axis",
            span,
        )
    dtype = scalar_type(flat).dtype  # a scalar: the caller checked
    items: list[Expr] = []
    stride = 1
    for axis in range(len(shape) - 1, -1, -1):
        at = make_binop("//", flat, Const(stride, dtype, span=span), span) if stride > 1 else flat
        items.append(make_binop("%", at, Const(shape[axis], dtype, span=span), span) if axis else at)
        stride *= int(shape[axis]) if axis else 1
    return ListExpr(tuple(reversed(items)), span=span)


# op → (the window's shape: a parameter holding a shape list, or an array whose shape is used;
#       the offsets parameter; the container the window must fit in)
_WINDOWS = {
    "tile.load": ("shapes", "offsets", "tensor"),
    "tile.store": ("tile", "offsets", "output_tensor"),
    "tile.slice": ("shape", "offset", "x"),
    "tensor.slice": ("shape", "offset", "x"),
    "tile.assemble": ("src", "offset", "dst"),
    "tensor.assemble": ("src", "offset", "target"),
}


def _window_shape(call: Call, name: str) -> tuple[int | DynDim, ...]:
    e = call.arg(name)
    if isinstance(e, ListExpr):
        return tuple(int(i.value) if isinstance(i, Const) else DynDim("") for i in e.items)
    return shaped_type(e).shape


def check_window(
    call: Call,
    ranges: Mapping[str, Interval],
    display: str,
    span: SourceSpan | None,
    window: Sequence[int | None] | None = None,
) -> None:
    """Reject a window that provably reaches outside its tensor/tile for some loop value."""
    spec = _WINDOWS.get(call.op)
    if spec is None:
        return
    if any(p.name == "valid_shape" for p in OPS[call.op].params) and not _is_none(call.arg("valid_shape")):
        return  # the valid part is what is read: checked at run time against its sizes
    shape = tuple(window) if window is not None else _window_shape(call, spec[0])
    offsets = call.arg(spec[1])
    container = call.arg(spec[2])
    full = shaped_type(container).shape
    assert isinstance(offsets, ListExpr)
    for d, (off, n, size) in enumerate(zip(offsets.items, shape, full)):
        iv = interval(off, ranges)
        if iv is None or not isinstance(size, int) or not isinstance(n, int):  # pl.dynamic: at run time
            continue
        where = f"`{getattr(container, 'name', container)}` {format_type(type_of(container))}"
        if iv[0] < 0:
            raise BoundsCheckError(
                f"{display} window is outside {where}: on dim {d} the offset can be {iv[0]}; "
                "offsets must be >= 0",
                span,
            )
        if iv[1] + n > size:
            raise BoundsCheckError(
                f"{display} window is outside {where}: on dim {d} the offset ranges over "
                f"[{iv[0]}, {iv[1]}] and the window is {n} long, reaching {iv[1] + n} > size {size}",
                span,
            )


def _is_none(e: Expr) -> bool:
    return isinstance(e, Literal) and e.value is None


def check_slot_index(t: Type, ranges: Mapping[str, Interval], span: SourceSpan | None) -> None:
    """A slot index the loop ranges bound outside ``[0, slots)`` is refused before the run."""
    m = getattr(t, "memref", None)
    if m is None or m.index is None:
        return
    iv = interval(m.index, ranges)
    if iv is not None and (iv[0] < 0 or iv[1] >= m.slots):
        raise BoundsCheckError(
            f"slot index of pl.MemRef({m.name!r}, slots={m.slots}) ranges over [{iv[0]}, {iv[1]}], "
            f"outside [0, {m.slots - 1}]",
            span,
        )


def widens(have: DataType, want: DataType) -> bool:
    """An integer dtype ``want`` holds every value of the other integer dtype ``have``:
    INDEX and INT64 (both 64-bit), INT32 into either."""
    return want in {INDEX: (INT64,), INT64: (INDEX,), INT32: (INT64, INDEX)}.get(have, ())


def merge_annotation(name: str, declared: Type | None, inferred: Type, span: SourceSpan | None) -> Type:
    """The type of ``name: declared = <value of type inferred>``.

    An annotation may add a memory space the op left open, or a memref; shape and dtype
    must agree exactly.
    """
    if declared is None:
        return inferred
    merged = declared
    if isinstance(declared, TileType) and isinstance(inferred, TileType) and declared.memory is None:
        merged = dataclasses.replace(declared, memory=inferred.memory)
    if not refines(merged, inferred):
        raise TypeCheckError(
            f"`{name}` is annotated {format_type(declared)} but its value is {format_type(inferred)}", span
        )
    return merged


def coerce_literal(c: Const, dtype: DataType, span: SourceSpan | None) -> Const:
    """A number literal given the dtype its context declares (``x: pl.Scalar[pl.FP32] = 1``)."""
    if dtype.is_float:
        return Const(float(c.value), dtype, span=span)
    if dtype == BOOL:
        return Const(bool(c.value), dtype, span=span)
    if isinstance(c.value, float) and not c.value.is_integer():
        raise TypeCheckError(f"{c.value} is not an integer, so it cannot be {dtype}", span)
    return Const(int(c.value), dtype, span=span)


def scalar_binop(op: str, lhs: Expr, rhs: Expr, span: SourceSpan | None) -> Expr:
    """Scalar arithmetic/comparison; a literal adopts the other side's dtype, nothing else
    converts implicitly."""
    for side in (lhs, rhs):
        if not isinstance(type_of(side), ScalarType):
            raise TypeCheckError(
                f"operator `{op}` needs scalar operands, got {format_type(type_of(side))}", span
            )
    if op == "/" and not all(scalar_type(s).dtype.is_float for s in (lhs, rhs) if not isinstance(s, Const)):
        raise TypeCheckError("operator `/` divides float scalars; use // for integer division", span)
    out = make_binop(op, lhs, rhs, span)
    if isinstance(out, BinOp):
        lt, rt = scalar_type(out.lhs), scalar_type(out.rhs)
        integers = lt.dtype.is_integer and rt.dtype.is_integer
        if lt != rt and op not in ("and", "or") and not integers:
            raise TypeCheckError(
                f"operator `{op}` mixes {lt.dtype} and {rt.dtype} scalars "
                "(no implicit promotion, except integers of two dtypes meeting in INDEX; use a literal "
                "of the right kind or pl.cast)",
                span,
            )
    return out


_ALIASING_WRITES = {"tensor.assemble": "target", "tile.store": "output_tensor"}


def written_tensor(value: Expr) -> Var | None:
    """The tensor ``value`` writes into, when it is a store or a window assignment."""
    if isinstance(value, Call) and value.op in _ALIASING_WRITES:
        target = value.arg(_ALIASING_WRITES[value.op])
        if isinstance(target, Var) and isinstance(target.type, TensorType):
            return target
    return None


def warn_out_rebind(name: str, current: Var, value: Expr, span: SourceSpan | None) -> None:
    """Warn when an Out/InOut parameter name is rebound to a value that does not write it."""
    if isinstance(value, Call) and value.op in _ALIASING_WRITES:
        target = value.arg(_ALIASING_WRITES[value.op])
        if isinstance(target, Var) and target.name == current.name:
            return
    if isinstance(value, FuncCall) and any(isinstance(a, Var) and a.name == current.name for a in value.args):
        return
    if not isinstance(current.type, TensorType):
        return
    what = f"pl.{value.op.split('.', 1)[-1]}" if isinstance(value, Call) else "this value"  # DSL spelling
    message = (
        f"`{name}` is an output parameter; rebinding it to the result of {what} writes nothing to the "
        f"caller's buffer. Use `{name}[:] = ...` (or pl.assemble / pl.store into `{name}`)."
    )
    if span is None:
        warnings.warn(message, OutParamWriteDropped, stacklevel=3)
    else:
        warnings.warn_explicit(message, OutParamWriteDropped, span.file, span.line)
