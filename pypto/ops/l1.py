"""The L1 accumulator family: a matmul operand built on chip from GM rows the kernel picks
(upstream's ``pl.create_l1`` and ``pl.gather_row``), a paged-KV gather with no GM round trip.

``kv = pl.create_l1([K, D], dtype)`` is a kernel-local tensor in Mat (L1) with no values yet;
``kv = pl.gather_row(kv, pool, [r, 0], [row, 0], [1, D])`` DMAs the GM window
``pool[row : row + 1, 0 : D]`` straight into rows ``r ..`` of it (GM -> L1, MTE2) and returns
it; ``pl.matmul(q, kv)`` then reads it where it is. ConvertTensorToTileOps lowers the first to
``tile.create`` in Mat and the second to ``tile.gather_row``, whose result is the accumulator's
own storage (a written window, as ``tile.assemble``'s). The instruction is a TLOAD into a
window of the accumulator (``TWINDOW``), so it is priced as any GM -> L1 load of its bytes.
The transposed layout (``transpose=True``, a ZN fill for a ``b_trans`` operand) is refused:
the simulator's L1 tiles are row-major, and ``pl.matmul(q, kv, b_trans=True)`` reads the
row-major accumulator directly.
"""

from __future__ import annotations

from pypto.ir.enums import MemorySpace, Pipe
from pypto.ir.expr import Call, ListExpr
from pypto.ir.op_def import Kind, OpDef, ParamSpec
from pypto.ir.op_rules import Bound, _need_space
from pypto.ir.types import TensorType, TileType, Type, format_type
from pypto.ops.family import Cpp, Family

MAT = frozenset({MemorySpace.Mat})


def _none(_types: object) -> None:
    return None


def _mte2(_types: object) -> Pipe:
    return Pipe.MTE2


def _no_transpose(b: Bound) -> None:
    if b.literal("transpose"):
        raise b.fail(
            "transpose=True (a ZN-layout fill) is not supported: L1 tiles here are row-major; "
            "fill the rows as they are and multiply with pl.matmul(..., b_trans=True)"
        )


def create_l1_rule(b: Bound) -> Type:
    shape, dtype = b.ints("shape"), b.dtype("dtype")
    if shape is None or len(shape) != 2 or min(shape) < 1:
        raise b.fail(f"shape must be two compile-time sizes [rows, cols], got {b.args['shape']}")
    _no_transpose(b)
    return TensorType(shape, dtype)


def _rows_window(b: Bound, acc: TileType | TensorType) -> tuple[int, int]:
    shapes = b.ints("shapes")
    if shapes is None or len(shapes) != 2:
        raise b.fail(f"shapes must be two compile-time sizes [rows, cols], got {b.args['shapes']}")
    for name in ("dst_offset", "src_offset"):
        if b.rank_of_list(name) != 2:
            raise b.fail(f"{name} needs 2 entries [row, col]")
    if b.rank_of_list("valid_shape") not in (0, 2):
        raise b.fail("valid_shape needs 2 entries [rows, cols]")
    if any(isinstance(a, int) and w > a for w, a in zip(shapes, acc.shape)):
        raise b.fail(f"the window {list(shapes)} is larger than the accumulator {list(acc.shape)}")
    return shapes[0], shapes[1]


def _gather_types(b: Bound) -> TileType | TensorType:
    acc, src = b.array("acc"), b.type("src")
    if not isinstance(src, TensorType) or len(src.shape) != 2:
        raise b.fail(f"`src` must be a 2-d GM tensor (the pool rows come from), got {format_type(src)}")
    if len(acc.shape) != 2 or acc.dtype != src.dtype:
        raise b.fail(f"`acc` {format_type(acc)} must be a 2-d accumulator of src's dtype {src.dtype}")
    _rows_window(b, acc)
    return acc


def gather_row_rule(b: Bound) -> Type:
    """Tensor level: ``acc`` is the value of a pl.create_l1 (or of an earlier gather_row)."""
    _no_transpose(b)
    acc = _gather_types(b)
    return TensorType(acc.shape, acc.dtype)


def tile_gather_row_rule(b: Bound) -> Type:
    acc = _gather_types(b)
    _need_space(b, "acc", MAT)
    return acc


def _emit_gather_row(c: Call, dst: str | None, cpp: Cpp) -> list[str]:
    valid = c.arg("valid_shape")
    window = valid if isinstance(valid, ListExpr) else c.list_arg("shapes")
    rows, cols = (cpp.expr(e) for e in window.items)
    r, col = (cpp.expr(e) for e in c.list_arg("dst_offset").items)
    row0, col0 = (cpp.expr(e) for e in c.list_arg("src_offset").items)
    # the result is the accumulator's storage: the rows land in a window of it
    into = f"TWINDOW({cpp.dst(dst)}, {r}, {col}, {rows}, {cols})"
    return [f"TLOAD({into}, {cpp.arg(c, 'src')}, {row0}, {col0});"]


OFFSETS = (ParamSpec("dst_offset", Kind.INDICES), ParamSpec("src_offset", Kind.INDICES))
WINDOW = (ParamSpec("shapes", Kind.SHAPE),)
VALID = ParamSpec("valid_shape", Kind.INDICES, None, optional=True, kw_only=True)
TRANSPOSE = ParamSpec("transpose", Kind.BOOL, False)
ACC_ARRAY, SRC = ParamSpec("acc", Kind.ARRAY), ParamSpec("src", Kind.TENSOR)

OPS = (
    OpDef("tensor.create_l1", (ParamSpec("shape", Kind.SHAPE), ParamSpec("dtype", Kind.DTYPE), TRANSPOSE),
          create_l1_rule, "tensor", _none, doc="a kernel-local accumulator in L1 (Mat), no values yet"),
    OpDef("tensor.gather_row", (ACC_ARRAY, SRC, *OFFSETS, *WINDOW, TRANSPOSE, VALID),
          gather_row_rule, "tensor", _none,
          doc="acc with the GM window src[src_offset : + shapes] DMAed into it at dst_offset"),
    OpDef("tile.gather_row", (ParamSpec("acc", Kind.TILE), SRC, *OFFSETS, *WINDOW, VALID),
          tile_gather_row_rule, "tile", _mte2, {"acc": MAT},
          doc="TLOAD of a GM window into a window of the Mat tile acc (the result is acc's storage)"),
)  # fmt: skip

FAMILY = Family(
    name="l1",
    ops=OPS,
    dsl={"create_l1": ("tensor.create_l1",), "gather_row": ("tensor.gather_row",)},
    emitters={"tile.gather_row": _emit_gather_row},
    abi=(),
    isa_file="transfer.cpp",
)
