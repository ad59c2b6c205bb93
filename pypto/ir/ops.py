"""The op table: every op the language knows, in one place.

Each :class:`OpDef` gives the IR name (``tile.load``), the parameters in order (kind,
default, keyword-only), the result-typing rule (:mod:`pypto.ir.op_rules`), where it may
appear (``level``: ``tile`` / ``tensor`` ops only inside InCore code, ``orchestration`` ops
only outside it), the pipe it issues on, and the memory spaces its tile operands accept.
The frontend, the builder, the verifier, the printer and later passes and codegen all key
off :data:`OPS`; the DSL spellings (``pl.add`` → ``tile.add``/``tile.adds``/``tensor.add``
...) are in :data:`DSL_OPS`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pypto.ir import layout_rules as L
from pypto.ir import op_rules as R
from pypto.ir import op_rules_cube as RC
from pypto.ir import op_rules_ext as RX
from pypto.ir.dtypes import INDEX
from pypto.ir.enums import AtomicType, MemorySpace, PadValue, Pipe
from pypto.ir.expr import OP_PARAMS, Const, Expr, ListExpr, type_of
from pypto.ir.op_def import _REQUIRED, Kind, OpDef, ParamSpec, PipeRule
from pypto.ir.types import ScalarType, TensorType, TileType, Type


def _fixed(pipe: Pipe | None) -> PipeRule:
    return lambda _types: pipe


def _store_pipe(types: Mapping[str, Type | None]) -> Pipe:
    t = types.get("tile")
    return Pipe.FIXPIPE if isinstance(t, TileType) and t.memory is MemorySpace.Acc else Pipe.MTE3


def _move_pipe(types: Mapping[str, Type | None]) -> Pipe:
    # L1 → L0A/L0B/Bias is MTE1; L0C out is FIXPIPE; UB → UB is a vector copy; UB → L1 (a5)
    # goes over MTE3. ``result`` (the assigned tile's type, when the caller knows it) tells
    # the two UB routes apart.
    t, dst = types.get("tile"), types.get("result")
    src = t.memory if isinstance(t, TileType) else None
    if src is MemorySpace.Acc:
        return Pipe.FIXPIPE
    if src is MemorySpace.Vec:
        to_vec = isinstance(dst, TileType) and dst.memory is MemorySpace.Vec
        return Pipe.VECTOR if to_vec else Pipe.MTE3
    return Pipe.MTE1


def _window_source(types: Mapping[str, Type | None]) -> MemorySpace | None:
    for name in ("src", "x"):
        t = types.get(name)
        if isinstance(t, TileType):
            return t.memory
    return None


def _window_pipe(types: Mapping[str, Type | None]) -> Pipe | None:
    # TEXTRACT / TINSERT run on the pipe of their route: L1 → L0 on MTE1, out of L0C on
    # FIXPIPE, UB → UB on VECTOR, UB → L1 (a5) on MTE3.
    src = _window_source(types)
    if src is MemorySpace.Mat:
        return Pipe.MTE1
    if src is MemorySpace.Acc:
        return Pipe.FIXPIPE
    dst = types.get("result")
    if src is MemorySpace.Vec and isinstance(dst, TileType) and dst.memory is MemorySpace.Mat:
        return Pipe.MTE3
    return Pipe.VECTOR


def _slice_pipe(types: Mapping[str, Type | None]) -> Pipe | None:
    # A Vec slice is a copy on VECTOR; a slice elsewhere is a window that FoldTileSlices turns
    # into the TEXTRACT of the move consuming it (no instruction of its own).
    return Pipe.VECTOR if _window_source(types) is MemorySpace.Vec else None


def _p(name: str, kind: Kind, default: Any = _REQUIRED, **kw: Any) -> ParamSpec:
    return ParamSpec(name, kind, default, **kw)


T, TN, A, S = Kind.TILE, Kind.TENSOR, Kind.ARRAY, Kind.SCALAR
IDX, SHAPE, DT, MEM = Kind.INDICES, Kind.SHAPE, Kind.DTYPE, Kind.MEMSPACE
VEC = frozenset({MemorySpace.Vec})
LEFT, RIGHT, ACC = (frozenset({m}) for m in (MemorySpace.Left, MemorySpace.Right, MemorySpace.Acc))
ROW_MAJOR = frozenset({MemorySpace.Vec, MemorySpace.Mat, MemorySpace.Acc})
WINDOW_SRC = frozenset({MemorySpace.Vec, MemorySpace.Mat, MemorySpace.Acc})
V = _fixed(Pipe.VECTOR)
NONE = _fixed(None)  # no instruction (allocation, views) or lowered away before pipes matter
BINARY = ("add", "sub", "mul", "div")
UNARY = ("exp", "log", "sqrt", "recip", "relu", "neg", "abs")

# The table proper. Kept aligned by hand (one op per entry) because it is read as a table.
# fmt: off
_TABLE: list[OpDef] = [
    OpDef("tile.load", (_p("tensor", TN), _p("offsets", IDX), _p("shapes", SHAPE),
                        _p("valid_shape", IDX, None, optional=True),
                        _p("target_memory", MEM, MemorySpace.Vec)),
          R.load_rule, "tile", _fixed(Pipe.MTE2), doc="DDR → Vec/Mat window load"),
    OpDef("tile.store", (_p("tile", T), _p("offsets", IDX), _p("output_tensor", TN),
                         _p("atomic", Kind.ATOMIC, AtomicType.None_, kw_only=True)),
          R.store_rule, "tile", _store_pipe, {"tile": VEC | ACC}, "tile → DDR store (from Acc via FIXPIPE)"),
    OpDef("tile.move", (_p("tile", T), _p("target_memory", MEM)), R.move_rule, "tile", _move_pipe,
          doc="on-chip move between memory spaces (the only way into Left/Right)"),
    OpDef("tile.create", (_p("shape", SHAPE), _p("dtype", DT), _p("target_memory", MEM, MemorySpace.Vec)),
          R.create_rule, "tile", NONE, doc="an uninitialised tile"),
    OpDef("tile.full", (_p("shape", SHAPE), _p("dtype", DT), _p("value", S, dtype_of="dtype"),
                        _p("target_memory", MEM, MemorySpace.Vec)),
          R.create_rule, "tile", V, doc="a tile filled with one value (TEXPANDS)"),
    OpDef("tile.cast", (_p("x", T), _p("target_type", DT), _p("mode", Kind.STR, "round")),
          R.cast_rule, "tile", V, {"x": VEC}),
    # Layout and windows (views share their source's buffer: AllocateMemoryAddr forces it).
    OpDef("tile.reshape", (_p("x", T), _p("shape", SHAPE)), R.reshape_rule, "tile", NONE, {"x": ROW_MAJOR},
          "the same bytes seen with another shape (a view, TRESHAPE)"),
    OpDef("tile.transpose", (_p("x", T), _p("axis1", Kind.INT), _p("axis2", Kind.INT)), L.transpose_rule,
          "tile", V, {"x": VEC}, "swap two axes (TTRANS)"),
    OpDef("tile.transpose_view", (_p("tile", T),), L.transpose_view_rule, "tile", NONE,
          {"tile": frozenset({MemorySpace.Mat})},
          "a Mat matmul operand seen transposed, no copy: the matmul reads it with a_trans/b_trans"),
    OpDef("tile.concat", (_p("lhs", T), _p("rhs", T)), L.concat_rule, "tile", V,
          {"lhs": VEC, "rhs": VEC}, "column-wise concatenation (two TINSERTs)"),
    OpDef("tile.slice", (_p("x", T), _p("shape", SHAPE), _p("offset", IDX),
                         _p("valid_shape", IDX, None, optional=True)), L.slice_rule, "tile",
          _slice_pipe, doc="a window: a Vec copy (TEXTRACT), elsewhere folded into the move using it"),
    OpDef("tile.extract", (_p("src", T), _p("index_row", S), _p("index_col", S), _p("shape", SHAPE),
                           _p("target_memory", MEM, kw_only=True)),
          L.extract_rule, "tile", _window_pipe, {"src": WINDOW_SRC},
          "a window of src into a new tile (TEXTRACT): Mat → Left/Right is the L1 → L0 extract"),
    OpDef("tile.assemble", (_p("dst", T), _p("src", T), _p("offset", IDX)), L.assemble_rule, "tile",
          _window_pipe, {"dst": frozenset({MemorySpace.Vec, MemorySpace.Mat}), "src": VEC | ACC},
          "src into a window of dst, in place (TINSERT; Acc → Mat on FIXPIPE)"),
    OpDef("tile.fillpad", (_p("x", T), _p("pad_value", Kind.PAD, PadValue.zero)), L.fillpad_rule, "tile",
          V, {"x": VEC}, "pad_value outside the valid region (TFILLPAD)"),
    OpDef("tile.set_validshape", (_p("x", T), _p("valid_rows", S), _p("valid_cols", S)),
          L.set_validshape_rule, "tile", NONE, doc="a smaller valid region of the same tile (a view)"),
    OpDef("tile.matmul", (_p("lhs", T), _p("rhs", T), _p("out_dtype", DT, None, optional=True),
                          _p("a_trans", Kind.BOOL, False), _p("b_trans", Kind.BOOL, False)),
          R.matmul_rule, "tile", _fixed(Pipe.CUBE), {"lhs": LEFT, "rhs": RIGHT}, "Left × Right → Acc"),
    OpDef("tile.matmul_acc", (_p("acc", T), _p("lhs", T), _p("rhs", T), _p("a_trans", Kind.BOOL, False),
                                  _p("b_trans", Kind.BOOL, False), _p("init_cond", S, None, optional=True)),
          R.matmul_acc_rule, "tile",
          _fixed(Pipe.CUBE), {"acc": ACC, "lhs": LEFT, "rhs": RIGHT}, "acc += Left × Right"),
    *(OpDef(f"tile.{n}", (_p("x", T), _p("tmp", T)), R.row_reduce_rule, "tile", V, {"x": VEC, "tmp": VEC},
            "[M, N] → [M, 1]; tmp is scratch of x's shape") for n in ("row_max", "row_sum")),
    *(OpDef(f"tile.{n}", (_p("x", T), _p("v", T)), R.row_expand_rule, "tile", V, {"x": VEC, "v": VEC},
            "x op v broadcast along rows (v is [M, 1])")
      for n in ("row_expand_sub", "row_expand_div", "row_expand_mul", "row_expand_add")),
    *(OpDef(f"tile.{n}", (_p("x", T), _p("v", T)), R.col_expand_rule, "tile", V, {"x": VEC, "v": VEC},
            "v ([1, N]) broadcast along columns") for n in ("col_expand_mul", "col_expand")),
    # add/sub/mul/div, their scalar forms (adds ...), and the unary ops — for tiles and for tensors
    *(op for prefix, kind, level, pipe in (("tile", T, "tile", V), ("tensor", TN, "tensor", NONE)) for op in (
        *(OpDef(f"{prefix}.{n}", (_p("lhs", kind), _p("rhs", kind)), R.binary_rule, level, pipe,
                {"lhs": VEC, "rhs": VEC}) for n in BINARY),
        *(OpDef(f"{prefix}.{n}s", (_p("lhs", kind), _p("rhs", S, dtype_of="lhs")), R.scalar_rule, level, pipe,
                {"lhs": VEC}) for n in BINARY),
        *(OpDef(f"{prefix}.{n}", (_p("x", kind),), R.unary_rule, level, pipe, {"x": VEC}) for n in UNARY),
    )),
    OpDef("tensor.slice", (_p("x", TN), _p("shape", IDX), _p("offset", IDX),
                           _p("valid_shape", IDX, None, optional=True)), L.slice_rule, "any", NONE,
          doc="a window view of a tensor (a[:, k0:k1]); valid_shape: the part a load reads (a tail)"),
    OpDef("tensor.view", (_p("x", TN), _p("shape", IDX)), L.view_rule, "orchestration", NONE,
          doc="orchestration's pl.reshape to sizes known at run time: a view of the same buffer"),
    OpDef("tensor.cast", (_p("x", TN), _p("target_type", DT), _p("mode", Kind.STR, "round")), R.cast_rule,
          "tensor", NONE),
    OpDef("tensor.matmul", (_p("lhs", TN), _p("rhs", TN), _p("out_dtype", DT, None, optional=True),
                            _p("a_trans", Kind.BOOL, False), _p("b_trans", Kind.BOOL, False)),
          RC.tensor_matmul_rule, "tensor", NONE),
    OpDef("tensor.matmul_acc", (_p("acc", Kind.ARRAY), _p("lhs", TN), _p("rhs", TN),
                                _p("a_trans", Kind.BOOL, False), _p("b_trans", Kind.BOOL, False)),
          RC.tensor_matmul_acc_rule, "tensor", NONE, doc="acc + lhs × rhs (acc FP32, on chip)"),
    OpDef("tensor.full", (_p("shape", SHAPE), _p("dtype", DT), _p("value", S, dtype_of="dtype")),
          R.full_rule, "tensor", NONE),
    OpDef("tensor.assemble", (_p("target", TN), _p("src", A), _p("offset", IDX),
                              _p("atomic", Kind.ATOMIC, AtomicType.None_)),
          L.assemble_rule, "any", NONE,
          doc="write src into a window of target (in orchestration: a buffer made a view of it)"),
    OpDef("tensor.create", (_p("shape", IDX), _p("dtype", DT), _p("manual_dep", Kind.BOOL, False),
                            _p("init_value", S, None, optional=True, dtype_of="dtype")),
          L.create_tensor_rule, "any", NONE,
          doc="a new tensor: in GM in orchestration, a kernel-local on-chip value inside a kernel"),
    # Synchronisation between pipes, inserted by the sync pass (never written by users).
    *(OpDef(f"system.{n}", (_p("src", Kind.PIPE), _p("dst", Kind.PIPE), _p("event_id", Kind.INT)),
            R.void_rule, "tile", _fixed(Pipe.SCALAR), doc=f"{n}(src, dst, event_id)")
      for n in ("set_flag", "wait_flag")),
    OpDef("system.pipe_barrier", (_p("pipe", Kind.PIPE, None, optional=True),), R.void_rule, "tile",
          _fixed(Pipe.SCALAR), doc="order one pipe (None: all pipes)"),
]
# fmt: on

# Op families beyond the tutorial set: names and parameters as upstream PyPTO. A `tmp` that
# upstream requires for the hardware's scratch is accepted and optional here (the simulator
# needs none).
S_PIPE = _fixed(Pipe.SCALAR)
TMP = _p("tmp", T, None, optional=True)
SCAL = _p("rhs", S, dtype_of="lhs")
HIGH_PRECISION = _p("high_precision", Kind.BOOL, False, kw_only=True)


def _xor_tmp(name: str) -> tuple[ParamSpec, ...]:
    return (TMP,) if name == "xor" else ()


BITWISE = ("and_", "or_", "xor", "shl", "shr")
MATH = ("rsqrt", "sin", "cos")
TENSOR_BIN = ("maximum", "minimum")
# fmt: off
_TABLE_EXT: list[OpDef] = [
    *(OpDef(f"tile.{n}", (_p("lhs", T), _p("rhs", T)), R.binary_rule, "tile", V, {"lhs": VEC, "rhs": VEC},
            f"element-wise {n}") for n in ("maximum", "minimum")),
    *(OpDef(f"tile.{n}s", (_p("lhs", T), SCAL), R.scalar_rule, "tile", V, {"lhs": VEC},
            f"element-wise {n} with a scalar") for n in ("maximum", "minimum")),
    # high_precision: upstream's choice of the exact (slower) device sequence over the fast
    # approximation; the simulator computes 1/sqrt in fp32 either way, so it only shows in dumps.
    OpDef("tile.rsqrt", (_p("x", T), TMP, HIGH_PRECISION), R.unary_rule, "tile", V, {"x": VEC},
          "1 / sqrt(x)"),
    *(OpDef(f"tile.{n}", (_p("x", T),), R.unary_rule, "tile", V, {"x": VEC}, f"element-wise {n} (radians)")
      for n in ("sin", "cos")),
    OpDef("tile.cmp", (_p("lhs", T), _p("rhs", T), _p("cmp_type", Kind.INT, 0)), RX.cmp_rule, "tile", V,
          {"lhs": VEC, "rhs": VEC}, "bool mask of lhs cmp rhs; cmp_type 0..5 = eq ne lt le gt ge"),
    OpDef("tile.cmps", (_p("lhs", T), _p("rhs", S, dtype_of="lhs"), _p("cmp_type", Kind.INT, 0)), RX.cmp_rule,
          "tile", V, {"lhs": VEC}, "bool mask of lhs cmp scalar"),
    OpDef("tile.sel", (_p("mask", T), _p("lhs", T), _p("rhs", T), TMP), RX.sel_rule, "tile", V,
          {"mask": VEC, "lhs": VEC, "rhs": VEC}, "mask ? lhs : rhs, element-wise"),
    *(OpDef(f"tile.{n}", (_p("lhs", T), _p("rhs", T), *_xor_tmp(n)), RX.bitwise_rule, "tile",
            V, {"lhs": VEC, "rhs": VEC}, f"bitwise {n.rstrip('_')} of integer tiles") for n in BITWISE),
    *(OpDef(f"tile.{n.rstrip('_')}s", (_p("lhs", T), SCAL, *_xor_tmp(n)), RX.bitwise_rule, "tile", V,
            {"lhs": VEC}, f"bitwise {n.rstrip('_')} with a scalar") for n in BITWISE),
    OpDef("tile.not_", (_p("x", T),), RX.not_rule, "tile", V, {"x": VEC}, "bitwise not of an integer tile"),
    OpDef("tile.row_min", (_p("x", T), _p("tmp", T)), R.row_reduce_rule, "tile", V, {"x": VEC, "tmp": VEC},
          "[M, N] → [M, 1]; tmp is scratch of x's shape"),
    OpDef("tile.col_sum", (_p("x", T), TMP), RX.col_reduce_rule, "tile", V, {"x": VEC}, "[M, N] → [1, N]"),
    *(OpDef(f"tile.{n}", (_p("x", T),), RX.col_reduce_rule, "tile", V, {"x": VEC}, "[M, N] → [1, N]")
      for n in ("col_max", "col_min")),
    *(OpDef(f"tile.row_expand_{n}", (_p("x", T), _p("v", T)), R.row_expand_rule, "tile", V,
            {"x": VEC, "v": VEC}, f"x {n} v broadcast along rows (v is [M, 1])") for n in ("max", "min")),
    *(OpDef(f"tile.col_expand_{n}", (_p("x", T), _p("v", T)), R.col_expand_rule, "tile", V,
            {"x": VEC, "v": VEC}, f"x {n} v broadcast down columns (v is [1, N])")
      for n in ("add", "sub", "div", "max", "min")),
    OpDef("tile.row_expand", (_p("x", T), _p("v", T)), R.row_expand_rule, "tile", V, {"x": VEC, "v": VEC},
          "v ([M, 1]) broadcast to x's shape"),
    OpDef("tile.expands", (_p("target", T), _p("scalar", S, dtype_of="target")), RX.expands_rule, "tile", V,
          {"target": VEC}, "a tile of target's shape filled with the scalar"),
    OpDef("tile.read", (_p("src", T), _p("indices", IDX)), RX.read_rule, "tile", S_PIPE, {"src": VEC},
          "one element of a Vec tile as a scalar"),
    OpDef("tile.write", (_p("dst", T), _p("indices", IDX), _p("value", S)), RX.write_rule,
          "tile", S_PIPE, {"dst": VEC}, "write one element of a Vec tile"),
    # Scalar access to GM runs inside InCore code as it is (level "tile": never lowered).
    OpDef("tensor.read", (_p("src", TN), _p("indices", IDX)), RX.read_rule, "any", S_PIPE,
          doc="one element of a tensor as a scalar (SCALAR pipe; in orchestration, read at launch)"),
    OpDef("tensor.write", (_p("dst", TN), _p("indices", IDX), _p("value", S)), RX.write_rule,
          "tile", S_PIPE, doc="write one element of a tensor (SCALAR pipe)"),
    OpDef("scalar.cast", (_p("x", S), _p("target_type", DT), _p("mode", Kind.STR, "trunc")),
          RX.scalar_cast_rule, "any", NONE, doc="a scalar in another dtype (truncated, then wrapped)"),
    OpDef("tensor.dim", (_p("x", TN), _p("axis", Kind.INT)), RX.dim_rule, "any", NONE,
          doc="the size of one axis (of a pl.dynamic dim: known when the call's sizes are)"),
    # tensor-level forms inside pl.at: lowered to the tile op on whole-tensor Vec loads
    *(OpDef(f"tensor.{n}", (_p("lhs", TN), _p("rhs", TN)), R.binary_rule, "tensor", NONE)
      for n in TENSOR_BIN),
    *(OpDef(f"tensor.{n}s", (_p("lhs", TN), SCAL), R.scalar_rule, "tensor", NONE) for n in TENSOR_BIN),
    *(OpDef(f"tensor.{n}", (_p("x", TN), *((HIGH_PRECISION,) if n == "rsqrt" else ())), R.unary_rule,
            "tensor", NONE) for n in MATH),
    OpDef("tile.gemv", (_p("lhs", T), _p("rhs", T)), RX.gemv_rule, "tile", _fixed(Pipe.CUBE),
          {"lhs": LEFT, "rhs": RIGHT}, "Left [1, K] × Right [K, N] → Acc [1, N]"),
    OpDef("tile.matmul_bias", (_p("lhs", T), _p("rhs", T), _p("bias", T)), RX.matmul_bias_rule, "tile",
          _fixed(Pipe.CUBE), {"lhs": LEFT, "rhs": RIGHT, "bias": frozenset({MemorySpace.Bias})},
          "Left × Right + bias[1, N] (Bias table) → Acc"),
]
# fmt: on
_TABLE.extend(_TABLE_EXT)
# SPMD (`with pl.spmd(n):`): which of the n blocks this task runs, and n; read from the task's
# launch record by the kernel's scalar code, no pipe instruction.
_TABLE.extend(
    OpDef(f"tile.get_block_{w}", (), lambda _b: ScalarType(INDEX), "tile", NONE, doc=doc)
    for w, doc in (("idx", "this block's index in its pl.spmd dispatch"), ("num", "the pl.spmd block count"))
)

# Batched and accumulating cube forms, as upstream PyPTO's tile.batch_matmul(_acc) and
# tile.gemv_acc / gemv_bias: a batch [B, M, K] is B matrices stacked by rows.
_TRANS = (_p("a_trans", Kind.BOOL, False), _p("b_trans", Kind.BOOL, False))
_CUBE = _fixed(Pipe.CUBE)
BIAS = frozenset({MemorySpace.Bias})
# fmt: off
_TABLE.extend([
    OpDef("tile.batch_matmul", (_p("lhs", T), _p("rhs", T), *_TRANS), RC.batch_matmul_rule, "tile", _CUBE,
          {"lhs": LEFT, "rhs": RIGHT}, "Left [B, M, K] × Right [B, K, N] → Acc [B, M, N], a TMATMUL a batch"),
    OpDef("tile.batch_matmul_acc", (_p("acc", T), _p("lhs", T), _p("rhs", T), *_TRANS),
          RC.batch_matmul_acc_rule, "tile", _CUBE, {"acc": ACC, "lhs": LEFT, "rhs": RIGHT},
          "acc[b] += Left[b] × Right[b]"),
    OpDef("tile.gemv_acc", (_p("acc", T), _p("lhs", T), _p("rhs", T)), RC.gemv_acc_rule, "tile", _CUBE,
          {"acc": ACC, "lhs": LEFT, "rhs": RIGHT}, "acc [1, N] += Left [1, K] × Right [K, N]"),
    OpDef("tile.gemv_bias", (_p("lhs", T), _p("rhs", T), _p("bias", T)), RC.gemv_bias_rule, "tile", _CUBE,
          {"lhs": LEFT, "rhs": RIGHT, "bias": BIAS}, "Left [1, K] × Right [K, N] + bias [1, N] → Acc"),
])
# fmt: on

OPS: dict[str, OpDef] = {op.name: op for op in _TABLE}
OP_PARAMS.update({op.name: tuple(p.name for p in op.params) for op in _TABLE})


def _overloads(name: str) -> tuple[str, ...]:
    found = [f"{p}.{name}{s}" for p in ("tile", "tensor") for s in ("", "s") if f"{p}.{name}{s}" in OPS]
    return tuple(found)


# DSL spelling → candidate ops, tried in order against the argument kinds.
DSL_OPS: dict[str, tuple[str, ...]] = {
    "load": ("tile.load",),
    "store": ("tile.store",),
    "move": ("tile.move",),
    "create_tile": ("tile.create",),
    "full": ("tensor.full",),
    "assemble": ("tensor.assemble", "tile.assemble"),
    "create_tensor": ("tensor.create",),
    **{n: _overloads(n) for n in BINARY + UNARY + ("slice", "matmul")},
    "cast": ("tile.cast", "tensor.cast", "scalar.cast"),
    "reshape": ("tile.reshape", "tensor.reshape", "tensor.view"),
    **{
        n: (f"tile.{n}",)
        for n in (
            "row_max",
            "row_sum",
            "row_expand_sub",
            "row_expand_div",
            "row_expand_mul",
            "row_expand_add",
            "col_expand_mul",
            "col_expand",
            "transpose",
            "concat",
            "fillpad",
            "set_validshape",
        )
    },
    "matmul_acc": ("tile.matmul_acc", "tensor.matmul_acc"),
}
# The scalar forms are spelled directly too (pl.adds, pl.muls ...).
DSL_OPS.update({f"{n}s": (f"tile.{n}s", f"tensor.{n}s") for n in BINARY})
DSL_OPS.update(
    {
        **{n: (f"tile.{n}", f"tile.{n}s", f"tensor.{n}", f"tensor.{n}s") for n in TENSOR_BIN},
        **{f"{n}s": (f"tile.{n}s", f"tensor.{n}s") for n in TENSOR_BIN},
        "cmp": ("tile.cmp", "tile.cmps"),
        "cmps": ("tile.cmps",),
        **{n: (f"tile.{n}", f"tile.{n.rstrip('_')}s") for n in BITWISE},
        **{f"{n.rstrip('_')}s": (f"tile.{n.rstrip('_')}s",) for n in BITWISE},
        **{
            n: (f"tile.{n}",)
            for n in (
                "sel",
                "not_",
                "row_min",
                "col_sum",
                "col_max",
                "col_min",
                "row_expand",
                "expands",
            )
        },
        **{n: (f"tile.{n}",) for n in ("matmul_bias", "gemv")},
        **{n: (f"tile.{n}", f"tensor.{n}") for n in MATH},
        **{f"row_expand_{n}": (f"tile.row_expand_{n}",) for n in ("max", "min")},
        **{f"col_expand_{n}": (f"tile.col_expand_{n}",) for n in ("add", "sub", "div", "max", "min")},
        "dim": ("tensor.dim",),
        "get_block_idx": ("tile.get_block_idx",),
        "get_block_num": ("tile.get_block_num",),
        **{n: (f"tile.{n}",) for n in ("batch_matmul", "batch_matmul_acc", "gemv_acc", "gemv_bias")},
        "read": ("tile.read", "tensor.read"),
        "write": ("tile.write", "tensor.write"),
    }
)


def get_op(name: str) -> OpDef:
    """The op called ``name`` (``KeyError`` listing nothing when unknown — callers word it)."""
    return OPS[name]


def _accepts(kind: Kind, t: Type | None, expr: Expr) -> bool:
    if kind is Kind.TILE:
        return isinstance(t, TileType)
    if kind is Kind.TENSOR:
        return isinstance(t, TensorType)
    if kind is Kind.ARRAY:
        return isinstance(t, (TileType, TensorType))
    if kind is Kind.SCALAR:
        return isinstance(t, ScalarType)
    if kind is Kind.SHAPE:  # a run-time size picks a form that takes one (tensor.view)
        return not isinstance(expr, ListExpr) or all(isinstance(i, Const) for i in expr.items)
    return True


def resolve_dsl(name: str, args: Sequence[Expr]) -> str:
    """Pick the op a DSL spelling (a key of ``DSL_OPS``) means for these positional arguments."""
    return resolve_candidates(DSL_OPS[name], args)


def resolve_candidates(candidates: Sequence[str], args: Sequence[Expr], keywords: Sequence[str] = ()) -> str:
    """The first candidate op whose leading parameters accept ``args`` (by kind) and that has
    every parameter named in ``keywords``; with no match the first candidate, so that binding
    reports the precise error."""
    for op_name in candidates:
        if any(k not in OP_PARAMS[op_name] for k in keywords):
            continue
        params = [p for p in OPS[op_name].params if not p.kw_only]
        if all(_accepts(p.kind, type_of(a), a) for p, a in zip(params[:2], args[:2])):
            return op_name
    return candidates[0]


# Cross-core tile pipes of a cluster (1 AIC + 2 AIVs): names and parameters as upstream PyPTO.
# A push issues on the pipe that drains its source (FIXPIPE out of Acc, MTE3 out of Vec); a
# pop and a free on MTE2, as the native ISA issues them (csrc/chip/isa/crosscore.cpp).
from pypto.ir import op_rules_cluster as RK  # noqa: E402  (the cluster rules build on op_rules)

SPLIT = _p("split", Kind.SPLIT, 0, kw_only=True)
PIPE_ID = _p("id", Kind.INT, 0, kw_only=True)
RING_SLOTS = _p("slots", Kind.INT, 0, kw_only=True)  # the ring's depth; 0: the platform's tpipe_slots
# fmt: off
_TABLE_CLUSTER: list[OpDef] = [
    OpDef("tile.tpush_to_aiv", (_p("tile", T), SPLIT, PIPE_ID, RING_SLOTS), RK.push_rule, "tile",
          _fixed(Pipe.FIXPIPE),
          {"tile": ACC}, "AIC → AIV: push an Acc tile into the pipe (split: how the AIVs share it)"),
    OpDef("tile.tpush_to_aic", (_p("tile", T), SPLIT, PIPE_ID, RING_SLOTS), RK.push_rule, "tile",
          _fixed(Pipe.MTE3),
          {"tile": VEC}, "AIV → AIC: push a Vec tile (with split, each AIV pushes its half)"),
    OpDef("tile.tpop_from_aic", (_p("shape", SHAPE, kw_only=True), _p("dtype", DT, kw_only=True), SPLIT,
                                 PIPE_ID), RK.pop_from_aic_rule, "tile", _fixed(Pipe.MTE2),
          doc="AIV: the next tile the AIC pushed (this AIV's half with split), into Vec"),
    OpDef("tile.tpop_from_aiv", (_p("shape", SHAPE, kw_only=True), _p("dtype", DT, kw_only=True), SPLIT,
                                 PIPE_ID), RK.pop_from_aiv_rule, "tile", _fixed(Pipe.MTE2),
          doc="AIC: the next tile the AIV(s) pushed (both halves with split), into Mat"),
    OpDef("tile.tfree_to_aic", (_p("tile", T), SPLIT, PIPE_ID), RK.free_rule, "tile", _fixed(Pipe.MTE2),
          {"tile": VEC}, "AIV: return the slot of a popped tile to the AIC"),
    OpDef("tile.tfree_to_aiv", (_p("tile", T), SPLIT, PIPE_ID), RK.free_rule, "tile", _fixed(Pipe.MTE2),
          {"tile": frozenset({MemorySpace.Mat})}, "AIC: return the slot(s) of a popped tile to the AIV(s)"),
    OpDef("tile.get_subblock_idx", (), lambda _b: ScalarType(INDEX), "tile", NONE,
          doc="which AIV of its cluster this core is (0 or 1)"),
]
# fmt: on
for _op in _TABLE_CLUSTER:
    OPS[_op.name] = _op
    OP_PARAMS[_op.name] = tuple(p.name for p in _op.params)
    DSL_OPS[_op.name.removeprefix("tile.")] = (_op.name,)


# The op families (pypto/ops): each family module holds its ops and their pl.* spellings.
# Every vector op's tensor form, derived from its tile form by one rule (pypto/ir/op_levels.py).
from pypto.ir.op_levels import add_tensor_form, derive_tensor_forms  # noqa: E402  (reads the finished table)
from pypto.ops import FAMILIES  # noqa: E402  (families build on the record types, not the table)

for _family in FAMILIES:
    for _op in _family.ops:
        OPS[_op.name] = _op
        OP_PARAMS[_op.name] = tuple(p.name for p in _op.params)
    DSL_OPS.update(_family.dsl)
    for _tensor_op, (_tile_op, _names) in _family.tensor_forms.items():
        add_tensor_form(_tensor_op, _tile_op, _names)

derive_tensor_forms(OPS, DSL_OPS)
