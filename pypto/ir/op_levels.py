"""The tensor level of the vector ops, derived from their tile level.

Upstream PyPTO has each op at two levels: ``pl.tile.row_sum(t, tmp)`` on an on-chip tile and
``pl.tensor.row_sum(x)`` on a tensor (a parameter, a slice of one, or a value computed in the
kernel), which the compiler places. ``pl.row_sum`` dispatches on the argument's type. Here a
vector op is written once, at tile level, in the op table; this module gives every such op
its tensor form by one rule, so adding a vector op never means adding a tensor op:

* its tile operands accept tensors (``Kind.ARRAY``: a tile computed in the kernel mixes in);
* scratch operands (``tmp``) are dropped: ConvertTensorToTileOps allocates them; giving one
  at tensor level is a :class:`~pypto.errors.WrongLevelError` naming the tile form;
* its result type is the tile rule's, on the operands as Vec tiles, returned as a tensor.

ConvertTensorToTileOps lowers such an op (and the elementwise ones the table writes by hand)
by loading its tensor operands to Vec and calling the tile op (:func:`tile_form`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from pypto.errors import WrongLevelError
from pypto.ir import op_rules as R
from pypto.ir.enums import MemorySpace, Pipe
from pypto.ir.expr import OP_PARAMS, Var, as_expr, type_of, value_type
from pypto.ir.op_def import Kind, OpDef, ParamSpec
from pypto.ir.types import TensorType, TileType, Type, format_type, is_static

# Scratch operands: the hardware needs them, the tensor level never names them.
SCRATCH = frozenset({"tmp"})
# Views with no instruction that still have a tensor form (the same bytes seen another way).
_VIEWS = ("tile.reshape", "tile.set_validshape")
# Ops whose meaning is a placement between memories: no tensor form by this rule (the tensor
# level has its own slice, full and assemble, which ConvertTensorToTileOps places).
_PLACEMENT = ("tile.extract", "tile.full", "tile.create", "tile.assemble", "tile.slice")

# tensor.<op> -> the vector tile op it is (derived here, or written by hand in the table)
TILE_FORM: dict[str, str] = {}
# A tensor op written by hand under upstream's names (pl.tensor.scatter's `input`), whose
# arguments reach its tile op under other names: tensor op -> {tile parameter: tensor parameter}
TILE_ARGS: dict[str, Mapping[str, str]] = {}


def tile_form(op_name: str) -> str | None:
    """The vector tile op a tensor op is, placed on Vec tiles (None for other ops)."""
    return TILE_FORM.get(op_name)


def tile_args(op_name: str, args: Mapping[str, Any]) -> dict[str, Any]:
    """A tensor op's arguments by name, renamed to its tile op's parameters."""
    names = TILE_ARGS.get(op_name)
    return dict(args) if names is None else {tile: args[tensor] for tile, tensor in names.items()}


def add_tensor_form(tensor_op: str, tile_op: str, names: Mapping[str, str]) -> None:
    """A family's hand-written tensor op lowered to its vector ``tile_op`` (arguments renamed)."""
    TILE_FORM[tensor_op] = tile_op
    TILE_ARGS[tensor_op] = names


def scratch_params(tile_op: OpDef) -> tuple[ParamSpec, ...]:
    """The scratch operands the compiler must allocate for ``tile_op`` (required ones only)."""
    return tuple(p for p in tile_op.params if p.name in SCRATCH and p.required)


def _as_vec_tile(b: R.Bound, name: str, t: TensorType) -> Var:
    if not is_static(t.shape):
        raise b.fail(
            f"`{name}` {format_type(t)} has a pl.dynamic dim; a tensor-level operand inside a kernel "
            "needs a compile-time shape (take a slice of a static size)"
        )
    return Var(name, TileType(t.shape, t.dtype, MemorySpace.Vec))


def _lifted_rule(tile_op: OpDef) -> R.Rule:
    def rule(b: R.Bound) -> Type:
        args = dict(b.args)
        for name, e in b.args.items():
            t = type_of(e)
            if isinstance(t, TensorType):
                args[name] = _as_vec_tile(b, name, t)
        for p in tile_op.params:
            if p.name in SCRATCH and p.name not in args:
                x = args[tile_op.params[0].name]
                args[p.name] = Var(p.name, value_type(x)) if p.required else as_expr(None, b.span)
        result = tile_op.infer(R.Bound(tile_op.name, b.display, args, b.span))
        if isinstance(result, TileType):
            return TensorType(result.shape, result.dtype)
        return result

    return rule


def _lift(tile_op: OpDef) -> OpDef:
    params = tuple(
        dataclasses.replace(p, kind=Kind.ARRAY) if p.kind is Kind.TILE else p
        for p in tile_op.params
        if p.name not in SCRATCH
    )
    base = tile_op.name.removeprefix("tile.")
    return OpDef(
        f"tensor.{base}",
        params,
        _lifted_rule(tile_op),
        "any" if tile_op.name == "tile.reshape" else "tensor",  # in orchestration: a view
        lambda _types: None,
        doc=f"{tile_op.doc or base} (tensor level: operands placed by the compiler)".strip(),
        tile_only=tuple(p.name for p in tile_op.params if p.name in SCRATCH),
    )


def _liftable(op: OpDef) -> bool:
    if op.level != "tile" or op.name in _PLACEMENT or not any(p.kind is Kind.TILE for p in op.params):
        return False
    return op.pipe({}) is Pipe.VECTOR or op.name in _VIEWS  # a vector op's pipe is fixed


def derive_tensor_forms(ops: dict[str, OpDef], dsl_ops: dict[str, tuple[str, ...]]) -> None:
    """Add the tensor form of every liftable tile op to ``ops`` and to its ``pl.*`` spellings."""
    for op in [o for o in ops.values() if _liftable(o)]:
        name = f"tensor.{op.name.removeprefix('tile.')}"
        TILE_FORM[name] = op.name
        if name in ops:  # written by hand (elementwise, cast: they also take dynamic shapes)
            continue
        ops[name] = _lift(op)
        OP_PARAMS[name] = tuple(p.name for p in ops[name].params)
    for spelling, candidates in dsl_ops.items():
        extra = tuple(f"tensor.{c.removeprefix('tile.')}" for c in candidates if c.startswith("tile."))
        extra = tuple(e for e in extra if e in TILE_FORM and e not in candidates)
        if extra:
            dsl_ops[spelling] = (*candidates, *extra)


def reject_tile_only(op: OpDef, key: str, display: str, span) -> None:
    """A keyword only the tile level honours, given to the tensor level: say so and how."""
    if key in op.tile_only:
        raise WrongLevelError(
            f"{display}: `{key}` is a tile-level argument, but the operands here are tensors; at "
            f"tensor level the compiler allocates the scratch (drop `{key}`, or load the operands "
            f"and call pl.tile.{op.name.removeprefix('tensor.')} to give your own)",
            span,
        )
