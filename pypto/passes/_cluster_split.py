"""The two AIVs sharing each tile of a mixed ``pl.at`` scope (private to SplitClusterKernels).

With ``optimizations=[pl.split(pl.SplitMode.UP_DOWN)]`` both AIVs run the AIV kernel, each on
half of every tile: rows halved (AIV ``k`` takes rows ``[k * R/2, (k + 1) * R/2)``), or with
``LEFT_RIGHT`` columns halved. So every Vec tile of the AIV kernel is retyped to its half,
loads and stores move their GM window to this AIV's half (``pl.get_subblock_idx()``), and
the pipes carry halves (the AIC pushes and pops each tile as two halves). A size-1 dimension
is not split (a per-row statistic under UP_DOWN, a broadcast row); an op whose meaning would
change with half a tile — a reduction across the halved dimension, a window into a tile — is
refused with its line.
"""

from __future__ import annotations

import dataclasses

from pypto.errors import CompileError
from pypto.ir.bind import bind_call, with_args
from pypto.ir.dtypes import INDEX
from pypto.ir.enums import MemorySpace, SplitMode
from pypto.ir.expr import Call, Expr, ListExpr, Var, as_expr, make_binop
from pypto.ir.names import NameSupply
from pypto.ir.ops import get_op
from pypto.ir.stmt import Assign, Eval, Stmt
from pypto.ir.types import ScalarType, TileType
from pypto.ir.visit import nodes_of, rewrite, walk

_SHAPED = {"tile.load": "shapes", "tile.create": "shape", "tile.full": "shape", "tile.tpop_from_aic": "shape"}
_ACROSS = {  # reductions across a dimension: wrong on half of it
    SplitMode.UP_DOWN: ("tile.col_sum", "tile.col_max", "tile.col_min"),
    SplitMode.LEFT_RIGHT: ("tile.row_max", "tile.row_sum", "tile.row_min"),
}
_WINDOWS = (
    *("tile.slice", "tile.extract", "tile.assemble", "tile.reshape", "tile.transpose", "tile.concat"),
    *("tile.set_validshape", "tile.gather", "tile.sort", "tile.sort32", "tile.read", "tile.write"),
)


def _dims(shape: tuple[int, ...]) -> tuple[int, int]:
    return (1, shape[0]) if len(shape) == 1 else (shape[-2], shape[-1])


def _half(t: TileType, mode: SplitMode, span) -> TileType:
    rows, cols = _dims(t.shape)
    axis = 0 if mode is SplitMode.UP_DOWN else 1
    size = (rows, cols)[axis]
    if size == 1:
        return t
    if size % 2:
        raise CompileError(
            f"split {mode.name} halves every Vec tile, but a {list(t.shape)} tile has an odd "
            f"{'row' if axis == 0 else 'column'} count",
            span,
        )
    shape = list(t.shape)
    shape[len(shape) - 2 + axis if len(shape) == 2 else 0] = size // 2
    return dataclasses.replace(t, shape=tuple(shape))


def _check_ops(body: tuple[Stmt, ...], mode: SplitMode) -> None:
    for s in walk(body):
        if not isinstance(s, Stmt) or not hasattr(s, "value"):
            continue
        for c in nodes_of(s.value, Call):
            if c.op in _ACROSS[mode] or c.op in _WINDOWS:
                raise CompileError(
                    f"pl.{c.op.removeprefix('tile.')} cannot run on half a tile (split {mode.name}): "
                    "use pl.split(pl.SplitMode.UP_DOWN) for row-wise work, or no split",
                    s.span,
                )


def _shift(offsets: Expr, old: TileType, new: TileType, sub: Var) -> Expr:
    """The GM window of this AIV's half: the halved axis moves by sub * half."""
    items = list(offsets.items) if isinstance(offsets, ListExpr) else [offsets]
    (r0, c0), (r1, c1) = _dims(old.shape), _dims(new.shape)
    axis = 0 if r1 != r0 else 1 if c1 != c0 else None
    if axis is None:
        return offsets
    k = len(items) - 2 + axis if len(items) >= 2 else 0
    size = (r1, c1)[axis]
    items[k] = make_binop("+", items[k], make_binop("*", sub, as_expr(size)))
    return ListExpr(tuple(items), span=getattr(offsets, "span", None))


def halve_aiv(body: tuple[Stmt, ...], mode: SplitMode) -> tuple[Stmt, ...]:
    """The AIV kernel body with every tile halved for ``mode`` (see the module doc)."""
    _check_ops(body, mode)
    old: dict[str, TileType] = {}
    new: dict[str, TileType] = {}
    for v in nodes_of(body, Var):
        if isinstance(v.type, TileType) and v.type.memory is MemorySpace.Vec and v.name not in new:
            old[v.name], new[v.name] = v.type, _half(v.type, mode, v.span)
    call, _ = bind_call("tile.get_subblock_idx", [], {})
    sub = Var(NameSupply(v.name for v in nodes_of(body, Var)).fresh("subblock_idx"), ScalarType(INDEX))

    def fix(x: object) -> object:
        if isinstance(x, Var) and x.name in new and x.type != new[x.name]:
            return dataclasses.replace(x, type=new[x.name])
        return None

    def shapes(s: object) -> object:
        if isinstance(s, Assign) and isinstance(s.value, Call) and s.value.op in _SHAPED:
            c = s.value
            t = new.get(s.var.name, s.var.type)
            if not isinstance(t, TileType):
                return None
            args = list(c.args)
            args[_index(c, _SHAPED[c.op])] = as_expr(list(t.shape))
            if c.op == "tile.load":
                args[_index(c, "offsets")] = _shift(c.arg("offsets"), old[s.var.name], t, sub)
            return dataclasses.replace(s, value=with_args(c, args))
        if isinstance(s, (Assign, Eval)) and isinstance(s.value, Call) and s.value.op == "tile.store":
            c = s.value
            tile = c.arg("tile")
            if isinstance(tile, Var) and tile.name in new:
                args = list(c.args)
                args[_index(c, "offsets")] = _shift(c.arg("offsets"), old[tile.name], new[tile.name], sub)
                return dataclasses.replace(s, value=with_args(c, args))
        return None

    out = tuple(rewrite(rewrite(s, fix), shapes) for s in body)
    return (Assign(sub, call), *out)


def _index(c: Call, name: str) -> int:
    return get_op(c.op).param_index(name)
