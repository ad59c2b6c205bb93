"""The gather / sort family: index sequences and per-element data movement on the vector unit
(TCI, TGATHER, TSORT32, TSORT), implemented in ``csrc/runtime/isa/gather_sort.cpp``.

Every op here with a tile operand is a vector tile op, so its tensor form (``pl.sort32`` on
tensors) comes from :mod:`pypto.ir.op_levels`; this module writes the tile level only.
``pl.arange`` has no operand to place: its tile is used as it is at either level.
"""

from __future__ import annotations

from pypto.ir.dtypes import FP32, INT16, INT32, UINT32
from pypto.ir.enums import MemorySpace, Pipe
from pypto.ir.op_def import Kind, OpDef, ParamSpec
from pypto.ir.op_rules import VEC, Bound, _like, _need_rank, _need_space
from pypto.ir.types import ScalarType, TileType, Type, format_type
from pypto.ops.family import CEntry, Family

T = Kind.TILE
TILE = "const pypto_tile*"


def _vector(_types: object) -> Pipe:
    return Pipe.VECTOR


def _tmp_in_vec(b: Bound) -> None:
    """An optional scratch tile (upstream's hardware needs one; the simulator does not)."""
    if "tmp" in b.args and isinstance(b.type("tmp"), TileType):
        _need_space(b, "tmp", VEC)


# --- typing rules -------------------------------------------------------------------------------
def gather_rule(b: Bound) -> Type:
    src, idx = b.array("src"), b.array("indices")
    if idx.dtype != INT32:
        raise b.fail(f"`indices` must be an INT32 tile, got {format_type(idx)}")
    for name in ("src", "indices"):
        _need_space(b, name, VEC)
    _tmp_in_vec(b)
    return _like(src, idx.shape, src.dtype)


def sort_rule(b: Bound) -> Type:
    src, idx = b.array("src"), b.array("idx")
    _need_rank(b, "src", 2)
    if src.dtype != FP32:
        raise b.fail(f"sorts FP32 values, got {format_type(src)} (pl.cast first)")
    if idx.dtype != INT32 or idx.shape != src.shape:
        raise b.fail(f"`idx` must be INT32 of shape {list(src.shape)}, got {format_type(idx)}")
    for name in ("src", "idx"):
        _need_space(b, name, VEC)
    return _like(src, (src.shape[0], 2 * src.shape[1]), src.dtype)  # type: ignore[operator]


ARANGE_DTYPES = (INT16, INT32, UINT32)


def arange_rule(b: Bound) -> Type:
    shape, dtype = b.ints("shape") or (), b.literal("dtype")
    if dtype not in ARANGE_DTYPES:
        names = ", ".join(f"pl.{d.name}" for d in ARANGE_DTYPES)
        raise b.fail(f"dtype must be one of {names}, got {dtype!r}")
    if len(shape) != 2 or shape[0] != 1 or shape[1] < 1:
        raise b.fail(f"shape must be one row [1, N] (the sequence runs along the row), got {list(shape)}")
    start = b.type("start")
    if not (isinstance(start, ScalarType) and start.dtype.is_integer):
        raise b.fail(f"start must be an integer scalar, got {start}")
    return TileType(shape, dtype, MemorySpace.Vec)  # type: ignore[arg-type]


# --- the family ---------------------------------------------------------------------------------
def _sort_op(name: str, doc: str) -> OpDef:
    params = (ParamSpec("src", T), ParamSpec("idx", T))
    return OpDef(name, params, sort_rule, "tile", _vector, {"src": VEC, "idx": VEC}, doc)


OPS = (
    OpDef(
        "tile.ci",
        (
            ParamSpec("start", Kind.SCALAR, dtype_of="dtype"),
            ParamSpec("shape", Kind.SHAPE),
            ParamSpec("dtype", Kind.DTYPE, INT32),
            ParamSpec("descending", Kind.BOOL, False),
        ),
        arange_rule,
        "tile",
        _vector,
        doc="[1, N] of start, start + 1, ... (start - 1, ... when descending), like numpy.arange",
    ),
    OpDef(
        "tile.gather",
        (ParamSpec("src", T), ParamSpec("indices", T), ParamSpec("tmp", T, None, optional=True)),
        gather_rule,
        "tile",
        _vector,
        {"src": VEC, "indices": VEC},
        "dst[i, j] = src.flat[indices[i, j]]",
    ),
    _sort_op("tile.sort", "rows sorted descending: (value, idx) pairs"),
    _sort_op("tile.sort32", "rows sorted descending in blocks of 32: (value, idx) pairs"),
)

ABI = (
    CEntry(
        "pypto_tci",
        (f"{TILE} dst", "int64_t start", "int32_t descending"),
        "dst[0, j] = start + j (start - j when descending), wrapped to dst's integer dtype;\n"
        "dst is one row (int16, int32 or uint32).",
        {"TCI": {}},
    ),
    CEntry(
        "pypto_tgather",
        (f"{TILE} dst", f"{TILE} src", f"{TILE} idx"),
        "dst[i,j] = src at flat (row-major over src's valid region) index idx[i,j] (idx is int32).",
        {"TGATHER": {}},
    ),
    CEntry(
        "pypto_tsort",
        ("int32_t block", f"{TILE} dst", f"{TILE} src", f"{TILE} idx"),
        "Sorts each row of src (fp32) descending, `block` elements at a time (0: the whole row),\n"
        "carrying the int32 idx alongside: dst[M, 2N] holds (value, index bits) pairs.",
        {"TSORT32": {"block": "32"}, "TSORT": {"block": "0"}},
    ),
)

FAMILY = Family(
    name="gather/sort",
    ops=OPS,
    dsl={"arange": ("tile.ci",), "gather": ("tile.gather",), "sort": ("tile.sort",)},
    emitters={
        "tile.ci": "TCI({dst}, {start}, {descending});",
        "tile.gather": "TGATHER({dst}, {src}, {indices});",
        "tile.sort": "TSORT({dst}, {src}, {idx});",
        "tile.sort32": "TSORT32({dst}, {src}, {idx});",
    },
    abi=ABI,
    isa_file="gather_sort.cpp",
)
