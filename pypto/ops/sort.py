"""The gather / sort family: index sequences and per-element data movement on the vector unit
(TCI, TGATHER, TSORT32, TSORT), implemented in ``csrc/chip/isa/gather_sort.cpp``.

Every op here with a tile operand is a vector tile op, so its tensor form (``pl.sort32`` on
tensors) comes from :mod:`pypto.ir.op_levels`; this module writes the tile level only.
``pl.arange`` has no operand to place: its tile is used as it is at either level.
TMRGSORT merges sorted runs; TROWARGMAX / TROWARGMIN give the column of a row's extremum;
TSCATTER (mask form) is the mask-form TGATHER's inverse, and ``pl.tensor.scatter`` its
upstream tensor-level spelling (:data:`TENSOR_SCATTER`).
"""

from __future__ import annotations

from pypto.ir.dtypes import FP16, FP32, INT16, INT32, UINT32, DataType
from pypto.ir.enums import MemorySpace, Pipe
from pypto.ir.expr import Call
from pypto.ir.op_def import Kind, OpDef, ParamSpec
from pypto.ir.op_rules import VEC, Bound, _like, _need_rank, _need_space
from pypto.ir.types import ScalarType, TileType, Type, format_type
from pypto.ops.family import CEntry, Cpp, Family

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


def gather_dim_rule(b: Bound) -> Type:
    """``pl.gather(input, dim=, index=)`` as torch.gather: out[i, j] = input[i, index[i, j]]
    (dim -1 / 1) or input[index[i, j], j] (dim 0 / -2); out has index's shape."""
    src, idx = b.tile("input"), b.tile("index")
    _need_rank(b, "input", 2)
    _need_rank(b, "index", 2)
    dim = b.literal("dim")
    if dim not in (-2, -1, 0, 1):
        raise b.fail(f"dim must be 0, 1, -1 or -2 for a 2-d input, got {dim!r}")
    if idx.dtype != INT32:
        raise b.fail(f"`index` must be INT32, got {format_type(idx)}")
    other = 0 if dim in (1, -1) else 1  # the axis index runs along the input's, not gathered
    if idx.shape[other] > src.shape[other]:
        raise b.fail(f"`index` {list(idx.shape)} is larger than `input` {list(src.shape)} on dim {other}")
    for name in ("input", "index"):
        _need_space(b, name, VEC)
    return _like(src, idx.shape, src.dtype)


def sort_rule(b: Bound) -> Type:
    src, idx = b.tile("src"), b.tile("idx")
    _need_rank(b, "src", 2)
    if src.dtype != FP32:
        raise b.fail(f"sorts FP32 values, got {format_type(src)} (pl.cast first)")
    if idx.dtype not in (INT32, UINT32) or idx.shape != src.shape:
        raise b.fail(f"`idx` must be INT32 or UINT32 of shape {list(src.shape)}, got {format_type(idx)}")
    for name in ("src", "idx"):
        _need_space(b, name, VEC)
    return _like(src, (src.shape[0], 2 * src.shape[1]), src.dtype)


def _pair_row(b: Bound, name: str) -> tuple[int, int]:
    """A row of (value, index) pairs: FP32, one row, an even width."""
    t = b.tile(name)
    _need_space(b, name, VEC)
    if t.dtype != FP32 or len(t.shape) != 2 or t.shape[0] != 1 or t.shape[1] % 2:
        raise b.fail(f"`{name}` must be one FP32 row of (value, index) pairs [1, 2N], got {format_type(t)}")
    return 1, t.shape[1]


def _given(b: Bound, name: str) -> bool:
    return b.type(name) is not None


def mrgsort_rule(b: Bound) -> Type:
    src0 = b.array("src0")
    _, width = _pair_row(b, "src0")
    lists = [n for n in ("src1", "src2", "src3") if _given(b, n)]
    if b.literal("block_len") is not None:  # one row of sorted runs, merged four at a time
        block = b.literal("block_len")
        if lists or b.literal("exhausted"):
            raise b.fail("block_len= merges the runs of one row; it takes no other lists nor exhausted=")
        if not (isinstance(block, int) and block > 0 and block % 64 == 0):
            raise b.fail(f"block_len must be a positive multiple of 64 (32 pairs), got {block!r}")
        if width % (4 * block):
            raise b.fail(
                f"block_len={block} merges groups of 4 runs ({4 * block} elements); the row has {width}"
            )
        return _like(src0, src0.shape, FP32)
    if not lists or lists != ["src1", "src2", "src3"][: len(lists)]:
        raise b.fail("give block_len= (one row of runs) or 2 to 4 sorted lists src0, src1[, src2[, src3]]")
    total = width + sum(_pair_row(b, n)[1] for n in lists)
    if _given(b, "tmp"):
        tmp = b.array("tmp")
        _need_space(b, "tmp", VEC)
        if tuple(tmp.shape) != (1, total):
            raise b.fail(f"`tmp` must be [1, {total}] (the merged lists), got {format_type(tmp)}")
    return _like(src0, (1, total), FP32)


def gather_mask_rule(b: Bound) -> Type:
    src = b.tile("src")
    _need_rank(b, "src", 2)
    _need_space(b, "src", VEC)
    pattern = b.literal("mask_pattern")
    if pattern not in MASK_STRIDE:
        raise b.fail(f"mask_pattern must be a pl.tile.MaskPattern (1..7), got {pattern!r}")
    stride, cols = MASK_STRIDE[pattern], src.shape[1]
    if cols % stride:
        raise b.fail(f"`src` has {cols} columns, not a multiple of the pattern's stride {stride}")
    given = b.literal("output_dtype")
    out = given if isinstance(given, DataType) else src.dtype
    if out.bits != src.dtype.bits or src.dtype.bits not in (16, 32):
        raise b.fail(f"output_dtype {out} must have the width of {src.dtype} (16 or 32 bits): bits are kept")
    return _like(src, (src.shape[0], cols // stride), out)


def scatter_mask_rule(b: Bound) -> Type:
    """The inverse of gather_mask: src's columns go to the columns of dst the pattern keeps;
    dst's other columns are kept. The result is the updated dst (a new value: dst is unchanged)."""
    dst, src = b.array("dst"), b.array("src")
    for name in ("dst", "src"):
        _need_rank(b, name, 2)
        _need_space(b, name, VEC)
    pattern = b.literal("mask_pattern")
    if pattern not in MASK_STRIDE:
        raise b.fail(f"mask_pattern must be a pl.tile.MaskPattern (1..7), got {pattern!r}")
    if src.dtype != dst.dtype:
        raise b.fail(f"`src` {format_type(src)} must have dst's dtype {dst.dtype}")
    stride, cols = MASK_STRIDE[pattern], dst.shape[1]
    if not isinstance(cols, int):
        raise b.fail(f"`dst` {format_type(dst)} must have a compile-time column count")
    want = (dst.shape[0], cols // stride)
    if cols % stride or tuple(src.shape) != want:
        raise b.fail(
            f"`src` {list(src.shape)} must be dst's rows by 1/{stride} of its {dst.shape[1]} columns "
            f"({list(want)}) for this pattern"
        )
    return _like(dst, dst.shape, dst.dtype)


def tensor_scatter_rule(b: Bound) -> Type:
    """``pl.tensor.scatter``: upstream's one tensor-level scatter, whose keywords pick the form.
    The mask form (``mask_pattern=``, ``dst=``) is ``tile.scatter_mask(dst, input, pattern)``."""
    index_form = [n for n in ("dim", "index", "src") if b.literal(n) is not None or b.type(n) is not None]
    mask_form = [n for n in ("mask_pattern", "dst") if b.literal(n) is not None or b.type(n) is not None]
    if index_form and mask_form:
        given = index_form + mask_form
        raise b.fail(
            f"give the index form (dim, index, src) or the mask form (mask_pattern, dst), not {given}"
        )
    if index_form:
        raise b.fail(
            "the index form (dim=, index=, src=) is not supported yet; the mask form is "
            "(mask_pattern=pl.tile.MaskPattern..., dst=...)"
        )
    if len(mask_form) != 2:
        raise b.fail("the mask form needs both mask_pattern= and dst=")
    args = {"dst": b.args["dst"], "src": b.args["input"], "mask_pattern": b.args["mask_pattern"]}
    return scatter_mask_rule(Bound("tile.scatter_mask", b.display, args, b.span))


def row_arg_rule(b: Bound) -> Type:
    """``pl.row_argmax`` / ``pl.row_argmin``: [M, N] -> [M, 1] INT32 column indices."""
    x, tmp = b.array("x"), b.array("tmp")
    _need_rank(b, "x", 2)
    if x.dtype not in ARG_DTYPES:
        raise b.fail(f"`x` must be FP32, FP16 or INT32, got {format_type(x)}")
    for name in ("x", "tmp"):
        _need_space(b, name, VEC)
    if tmp.dtype != x.dtype or tmp.shape != x.shape:
        raise b.fail(f"scratch tile `tmp` must be {format_type(x)}, got {format_type(tmp)}")
    return _like(x, (x.shape[0], 1), INT32)


ARG_DTYPES = (FP32, FP16, INT32)
# pattern -> how many source columns give one output column (P1111 keeps every one)
MASK_STRIDE = {1: 2, 2: 2, 3: 4, 4: 4, 5: 4, 6: 4, 7: 1}
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
    return TileType(shape, b.dtype("dtype"), MemorySpace.Vec)


def _emit_scatter_mask(c: Call, dst: str | None, cpp: Cpp) -> list[str]:
    # `dst` names the operand here, so the template's {dst} (the result) cannot be used
    operands = ", ".join(cpp.arg(c, n) for n in ("dst", "src", "mask_pattern"))
    return [f"TSCATTER({cpp.dst(dst)}, {operands});"]


def _emit_mrgsort(c: Call, dst: str | None, cpp: Cpp) -> list[str]:
    d, src0 = cpp.dst(dst), cpp.arg(c, "src0")
    if cpp.arg(c, "block_len") != "nullptr":
        return [f"TMRGSORT({d}, {src0}, {cpp.arg(c, 'block_len')});"]
    lists = [cpp.arg(c, n) for n in ("src1", "src2", "src3") if cpp.arg(c, n) != "nullptr"]
    return [f"TMRGSORT({d}, {src0}, {', '.join(lists)}, {cpp.arg(c, 'exhausted')});"]


# --- the family ---------------------------------------------------------------------------------
def _sort_op(name: str, doc: str) -> OpDef:
    params = (ParamSpec("src", T), ParamSpec("idx", T))
    return OpDef(name, params, sort_rule, "tile", _vector, {"src": VEC, "idx": VEC}, doc)


OPS: tuple[OpDef, ...] = (
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
    OpDef(
        "tile.gather_dim",
        (ParamSpec("input", T), ParamSpec("dim", Kind.INT), ParamSpec("index", T)),
        gather_dim_rule,
        "tile",
        _vector,
        {"input": VEC, "index": VEC},
        "out[i, j] = input[i, index[i, j]] along dim (torch.gather)",
    ),
    _sort_op("tile.sort", "rows sorted descending: (value, idx) pairs"),
    _sort_op("tile.sort32", "rows sorted descending in blocks of 32: (value, idx) pairs"),
)

MRGSORT_PARAMS = (
    ParamSpec("src0", T),
    *(ParamSpec(n, T, None, optional=True) for n in ("src1", "src2", "src3", "tmp")),
    ParamSpec("exhausted", Kind.BOOL, False),
    ParamSpec("block_len", Kind.INT, None, optional=True, kw_only=True),
)
OPS += (
    OpDef(
        "tile.mrgsort",
        MRGSORT_PARAMS,
        mrgsort_rule,
        "tile",
        _vector,
        {n: VEC for n in ("src0", "src1", "src2", "src3", "tmp")},
        "merge sorted (value, index) runs, descending: block_len= (runs of one row, 4 at a time) "
        "or 2-4 lists",
    ),
    OpDef(
        "tile.gather_mask",
        (
            ParamSpec("src", T),
            ParamSpec("mask_pattern", Kind.INT),
            ParamSpec("output_dtype", Kind.DTYPE, None, optional=True, kw_only=True),
        ),
        gather_mask_rule,
        "tile",
        _vector,
        {"src": VEC},
        "the columns of each row a pl.tile.MaskPattern keeps, packed (bits kept as output_dtype)",
    ),
    OpDef(
        "tile.scatter_mask",
        (ParamSpec("dst", T), ParamSpec("src", T), ParamSpec("mask_pattern", Kind.INT)),
        scatter_mask_rule,
        "tile",
        _vector,
        {"dst": VEC, "src": VEC},
        "dst with the columns a pl.tile.MaskPattern keeps replaced by src's, in order (gather_mask inverted)",
    ),
)
OPS += tuple(
    OpDef(
        f"tile.row_arg{m}",
        (ParamSpec("x", T), ParamSpec("tmp", T)),
        row_arg_rule,
        "tile",
        _vector,
        {"x": VEC, "tmp": VEC},
        f"[M, N] -> [M, 1] INT32: the column of each row's first {word} (tmp: scratch of x's shape)",
    )
    for m, word in (("max", "maximum"), ("min", "minimum"))
)
# The tensor-level spelling: upstream's signature, both forms; ConvertTensorToTileOps lowers the
# mask form to tile.scatter_mask with these arguments (tile parameter <- tensor parameter).
TENSOR_SCATTER = {"dst": "dst", "src": "input", "mask_pattern": "mask_pattern"}
OPS += (
    OpDef(
        "tensor.scatter",
        (
            ParamSpec("input", Kind.ARRAY),
            ParamSpec("dim", Kind.INT, None, optional=True),
            ParamSpec("index", Kind.ARRAY, None, optional=True),
            ParamSpec("src", Kind.ARRAY, None, optional=True),
            ParamSpec("mask_pattern", Kind.INT, None, optional=True, kw_only=True),
            ParamSpec("dst", Kind.ARRAY, None, optional=True, kw_only=True),
        ),
        tensor_scatter_rule,
        "tensor",
        lambda _types: None,
        doc="input's values scattered into dst (mask form: the columns mask_pattern keeps)",
    ),
)
MERGE = tuple(f"{TILE} src{i}" for i in range(4))
ABI = (
    CEntry(
        "pypto_tci",
        (f"{TILE} dst", "int64_t start", "int32_t descending"),
        "dst[0, j] = start + j (start - j when descending), wrapped to dst's integer dtype;\n"
        "dst is one row (int16, int32 or uint32).",
        (("TCI", {}),),
    ),
    CEntry(
        "pypto_tgather",
        (f"{TILE} dst", f"{TILE} src", f"{TILE} idx"),
        "dst[i,j] = src at flat (row-major over src's valid region) index idx[i,j] (idx is int32).",
        (("TGATHER", {}),),
    ),
    CEntry(
        "pypto_tgather_dim",
        (f"{TILE} dst", f"{TILE} src", f"{TILE} idx", "int32_t dim"),
        "torch.gather on 2-d tiles: dst[i,j] = src[i, idx[i,j]] (dim 1 or -1) or src[idx[i,j], j]\n"
        "(dim 0 or -2); idx is int32 and dst has its shape.",
        (("TGATHER", {}),),
    ),
    CEntry(
        "pypto_tsort",
        ("int32_t block", f"{TILE} dst", f"{TILE} src", f"{TILE} idx"),
        "Sorts each row of src (fp32) descending, `block` elements at a time (0: the whole row),\n"
        "carrying the int32 idx alongside: dst[M, 2N] holds (value, index bits) pairs.",
        (("TSORT32", {"block": "32"}), ("TSORT", {"block": "0"})),
    ),
    CEntry(
        "pypto_tmrgsort",
        (f"{TILE} dst", f"{TILE} src", "int32_t block_len"),
        "One row of sorted runs of block_len elements ((value, index) pairs, fp32) merged four\n"
        "runs at a time, descending; the row's width is a multiple of 4 * block_len.",
        (("TMRGSORT", {}),),
    ),
    CEntry(
        "pypto_tmrgsort_lists",
        (f"{TILE} dst", *MERGE, "int32_t exhausted"),
        "dst = the 2-4 sorted rows of pairs src0.. merged, descending (src2/src3 may be null).\n"
        "exhausted: stop when one list runs out (the rest of dst keeps what it held).",
        (
            ("TMRGSORT", {"src2": "nullptr", "src3": "nullptr"}),
            ("TMRGSORT", {"src3": "nullptr"}),
            ("TMRGSORT", {}),
        ),
    ),
    CEntry(
        "pypto_trowarg",
        (f"{TILE} dst", f"{TILE} src", f"{TILE} tmp", "int32_t is_max"),
        "dst[i, 0] = the column of the first maximum (minimum unless is_max) of src's row i,\n"
        "as int32 (src fp32, fp16 or int32; tmp is scratch of src's shape, clobbered).",
        (("TROWARGMAX", {"is_max": "1"}), ("TROWARGMIN", {"is_max": "0"})),
    ),
    CEntry(
        "pypto_tgather_mask",
        (f"{TILE} dst", f"{TILE} src", "int32_t mask_pattern"),
        "dst[i, :] = the columns of src[i, :] mask_pattern keeps (1..7, see pl.tile.MaskPattern),\n"
        "packed; dst may reinterpret the bits in another dtype of the same width.",
        (("TGATHER", {}),),
    ),
    CEntry(
        "pypto_tscatter_mask",
        (f"{TILE} out", f"{TILE} dst", f"{TILE} src", "int32_t mask_pattern"),
        "out = dst with the columns mask_pattern keeps (1..7, see pl.tile.MaskPattern) replaced by\n"
        "src's, in order: the inverse of the mask-form TGATHER (out may be dst's own storage).",
        (("TSCATTER", {}),),
    ),
)

FAMILY = Family(
    name="gather/sort",
    ops=OPS,
    dsl={
        "arange": ("tile.ci",),
        "gather": ("tile.gather", "tile.gather_mask", "tile.gather_dim"),
        "sort": ("tile.sort",),
        "sort32": ("tile.sort32",),
        "mrgsort": ("tile.mrgsort",),
        "scatter_mask": ("tile.scatter_mask",),
        "row_argmax": ("tile.row_argmax",),
        "row_argmin": ("tile.row_argmin",),
    },
    emitters={
        "tile.ci": "TCI({dst}, {start}, {descending});",
        "tile.gather": "TGATHER({dst}, {src}, {indices});",
        "tile.sort": "TSORT({dst}, {src}, {idx});",
        "tile.sort32": "TSORT32({dst}, {src}, {idx});",
        "tile.mrgsort": _emit_mrgsort,
        "tile.gather_mask": "TGATHER({dst}, {src}, {mask_pattern});",
        "tile.gather_dim": "TGATHER({dst}, {input}, {index}, {dim});",
        "tile.scatter_mask": _emit_scatter_mask,
        "tile.row_argmax": "TROWARGMAX({dst}, {x}, {tmp});",
        "tile.row_argmin": "TROWARGMIN({dst}, {x}, {tmp});",
    },
    abi=ABI,
    isa_file="gather_sort.cpp",
    tensor_forms={"tensor.scatter": ("tile.scatter_mask", TENSOR_SCATTER)},
)
