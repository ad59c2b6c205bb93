"""The op → C++ emitter table. Each emitter gets the call and the destination tile (or None)
and returns the statement(s) that run it on the ISA of ``<pypto/kernel.hpp>``."""

from __future__ import annotations

import enum
import string
from collections.abc import Callable
from typing import TypeVar

from pypto.codegen.cpp_expr import DTYPE_ENUM, cpp_expr, cpp_name, cpp_scalar_type
from pypto.ir.bind import infer_call_type
from pypto.ir.dtypes import DataType
from pypto.ir.enums import AtomicType, MemorySpace, PadValue, Pipe
from pypto.ir.expr import (
    Call,
    Const,
    Expr,
    ListExpr,
    Literal,
    Var,
    scalar_type,
    shaped_type,
    tensor_type,
    tile_type,
    type_of,
)
from pypto.ir.types import TensorType, TileType, Type
from pypto.ops import FAMILIES
from pypto.ops.family import EmitFn


class EmitError(Exception):
    """An op that codegen cannot lower; the driver adds the op and its source span."""


Emitter = Callable[[Call, "str | None"], list[str]]

PIPE_CPP = {
    Pipe.MTE2: "PIPE_MTE2",
    Pipe.MTE1: "PIPE_MTE1",
    Pipe.CUBE: "PIPE_M",
    Pipe.VECTOR: "PIPE_V",
    Pipe.FIXPIPE: "PIPE_FIX",
    Pipe.MTE3: "PIPE_MTE3",
    Pipe.SCALAR: "PIPE_S",
}
ROUND_CPP = {
    "none": "RoundMode::RINT",  # the hardware default: round to nearest, ties to even
    "round": "RoundMode::AWAY",  # ties away from zero (float -> integer)
    "rint": "RoundMode::RINT",
    "trunc": "RoundMode::TRUNC",
    "floor": "RoundMode::FLOOR",
    "ceil": "RoundMode::CEIL",
}


def _name(e: Expr) -> str:
    if not isinstance(e, Var):
        raise EmitError(f"expected a named tile or tensor, got {type(e).__name__}")
    return cpp_name(e.name)


def _offsets(e: Expr) -> tuple[str, str]:
    items = e.items if isinstance(e, ListExpr) else (e,)
    if len(items) == 1:
        return "0", cpp_expr(items[0])
    if len(items) != 2:
        raise EmitError(f"only 1-D and 2-D windows are supported, got {len(items)} offsets")
    return cpp_expr(items[0]), cpp_expr(items[1])


def _literal(e: Expr) -> object:
    if isinstance(e, (Literal, Const)):
        return e.value
    raise EmitError("expected a compile-time value")


_Member = TypeVar("_Member", bound=enum.Enum)


def _member(e: Expr, kind: type[_Member]) -> _Member:
    """A compile-time enum argument (a pipe, a pad value) of the kind the op table declares."""
    value = _literal(e)
    if not isinstance(value, kind):
        raise EmitError(f"expected a {kind.__name__}, got {value!r}")
    return value


def _need(dst: str | None) -> str:
    if dst is None:
        raise EmitError("the result of this op must be assigned to a tile")
    return dst


def _load(c: Call, dst: str | None) -> list[str]:
    if _batched(c.arg("offsets")):  # a rank-3 window: one 2-D load per batch
        b0, r, col = (cpp_expr(i) for i in c.list_arg("offsets").items)
        batches = c.list_arg("shapes").items[0]
        return [
            f"TLOAD_BATCH({_need(dst)}, {_name(c.arg('tensor'))}, {b0}, {r}, {col}, {cpp_expr(batches)});"
        ]
    r, col = _offsets(c.arg("offsets"))
    return [f"TLOAD({_need(dst)}, {_name(c.arg('tensor'))}, {r}, {col});"]


def _store(c: Call, dst: str | None) -> list[str]:
    atomic = _literal(c.arg("atomic")) is AtomicType.Add
    out, tile = _name(c.arg("output_tensor")), _name(c.arg("tile"))
    if _batched(c.arg("offsets")):  # a rank-3 window: one 2-D store per batch
        b0, r, col = (cpp_expr(i) for i in c.list_arg("offsets").items)
        batches = tile_type(c.arg("tile")).shape[0]
        flag = "true" if atomic else "false"
        lines = [f"TSTORE_BATCH({out}, {b0}, {r}, {col}, {tile}, {batches}, {flag});"]
        return lines + ([f"Tensor {dst} = {out};"] if dst is not None else [])
    r, col = _offsets(c.arg("offsets"))
    fn = "TSTORE_ATOMIC_ADD" if atomic else "TSTORE"
    lines = [f"{fn}({out}, {r}, {col}, {tile});"]
    if dst is not None:  # `t2 = pl.store(...)` names the written tensor
        lines.append(f"Tensor {dst} = {out};")
    return lines


def _binary(fn: str) -> Emitter:
    return lambda c, dst: [f"{fn}({_need(dst)}, {_name(c.arg('lhs'))}, {_name(c.arg('rhs'))});"]


def _scalar(fn: str) -> Emitter:
    return lambda c, dst: [f"{fn}({_need(dst)}, {_name(c.arg('lhs'))}, {cpp_expr(c.arg('rhs'))});"]


def _unary(fn: str) -> Emitter:
    return lambda c, dst: [f"{fn}({_need(dst)}, {_name(c.arg('x'))});"]


def _two(fn: str, a: str, b: str) -> Emitter:
    return lambda c, dst: [f"{fn}({_need(dst)}, {_name(c.arg(a))}, {_name(c.arg(b))});"]


def _two_arg(fn: str, a: str) -> Emitter:
    return lambda c, dst: [f"{fn}({_need(dst)}, {_name(c.arg(a))});"]


def _cast(c: Call, dst: str | None) -> list[str]:
    mode = str(_literal(c.arg("mode")))
    if mode not in ROUND_CPP:
        raise EmitError(f"unknown cast mode {mode!r}; use one of {', '.join(ROUND_CPP)}")
    return [f"TCVT({_need(dst)}, {_name(c.arg('x'))}, {ROUND_CPP[mode]});"]


def _col_expand(c: Call, dst: str | None) -> list[str]:
    return [f"TCOLEXPAND({_need(dst)}, {_name(c.arg('v'))});"]  # v[1, N] copied down the rows


def _move(c: Call, dst: str | None) -> list[str]:
    # The ISA checks the route against the platform (and names the legal ones).
    src = c.arg("tile")
    shape = tile_type(src).shape
    if _literal(c.arg("target_memory")) is MemorySpace.Left and len(shape) == 2 and shape[0] == 1:
        return [f"TMOV_ROW_VECTOR({_need(dst)}, {_name(src)});"]  # a gemv operand, held row-major
    return [f"TMOV({_need(dst)}, {_name(src)});"]


def _flag_arg(c: Call, name: str) -> str:
    return "true" if _literal(c.arg(name)) else "false"


def _matmul(c: Call, dst: str | None) -> list[str]:
    lhs, rhs = _name(c.arg("lhs")), _name(c.arg("rhs"))
    return [f"TMATMUL({_need(dst)}, {lhs}, {rhs}, {_flag_arg(c, 'a_trans')}, {_flag_arg(c, 'b_trans')});"]


def _matmul_acc(c: Call, dst: str | None) -> list[str]:
    # Accumulates in place: the planner gives the result the accumulator's buffer.
    trans = f"{_flag_arg(c, 'a_trans')}, {_flag_arg(c, 'b_trans')}"
    operands = f"{_need(dst)}, {_name(c.arg('lhs'))}, {_name(c.arg('rhs'))}, {trans}"
    cond = c.arg("init_cond")
    if isinstance(cond, Literal) and cond.value is None:
        return [f"TMATMUL_ACC({operands});"]
    return [f"TMATMUL_ACC_INIT({operands}, {cpp_expr(cond)});"]  # overwrites when cond holds


def _index(e: Expr) -> str:
    return str(e) if isinstance(e, int) else cpp_expr(e)


def _extract(c: Call, dst: str | None) -> list[str]:
    r, col = _index(c.arg("index_row")), _index(c.arg("index_col"))
    return [f"TEXTRACT({_need(dst)}, {_name(c.arg('src'))}, {r}, {col});"]


def _slice(c: Call, dst: str | None) -> list[str]:
    r, col = _offsets(c.arg("offset"))
    x = c.arg("x")
    if tile_type(x).memory is MemorySpace.Vec:  # a Vec window: a VECTOR copy
        return [f"TEXTRACT({_need(dst)}, {_name(x)}, {r}, {col});"]
    # elsewhere: a view of x's storage
    h, w = ["1", *(cpp_expr(i) for i in c.list_arg("shape").items)][-2:]  # a 1-D window is one row
    return [f"{_need(dst)} = TWINDOW({_name(x)}, {r}, {col}, {h}, {w});"]


def _assemble(c: Call, dst: str | None) -> list[str]:
    r, col = _offsets(c.arg("offset"))  # the result is dst's own buffer (the planner forces it)
    return [f"TINSERT({_need(dst)}, {r}, {col}, {_name(c.arg('src'))});"]


def _concat(c: Call, dst: str | None) -> list[str]:
    d, lhs = _need(dst), c.arg("lhs")
    width = tile_type(lhs).shape[-1]
    return [f"TINSERT({d}, 0, 0, {_name(lhs)});", f"TINSERT({d}, 0, {width}, {_name(c.arg('rhs'))});"]


PAD_CPP = {PadValue.zero: "PadValue::Zero", PadValue.max: "PadValue::Max", PadValue.min: "PadValue::Min"}


def _fillpad(c: Call, dst: str | None) -> list[str]:
    return [f"TFILLPAD({_need(dst)}, {_name(c.arg('x'))}, {PAD_CPP[_member(c.arg('pad_value'), PadValue)]});"]


def _create(c: Call, dst: str | None) -> list[str]:
    _need(dst)
    return []  # storage only: the declaration is the whole effect


def _flag(fn: str) -> Emitter:
    def emit(c: Call, dst: str | None) -> list[str]:
        src, dst_pipe = (PIPE_CPP[_member(a, Pipe)] for a in c.args[:2])
        return [f"{fn}({src}, {dst_pipe}, {_literal(c.args[2])});"]

    return emit


def _barrier(c: Call, dst: str | None) -> list[str]:
    pipe = "PIPE_ALL" if _literal(c.args[0]) is None else PIPE_CPP[_member(c.args[0], Pipe)]
    return [f"pipe_barrier({pipe});"]


EMITTERS: dict[str, Emitter] = {
    "tile.load": _load,
    "tile.store": _store,
    "tile.move": _move,
    "tile.matmul": _matmul,
    "tile.matmul_acc": _matmul_acc,
    "tile.create": _create,
    "tile.slice": _slice,
    "tile.extract": _extract,
    "tile.assemble": _assemble,
    "tile.concat": _concat,
    "tile.fillpad": _fillpad,
    "tile.reshape": _two_arg("TRESHAPE", "x"),
    "tile.transpose": lambda c, dst: _transpose(c, dst),
    "tile.set_validshape": _create,  # the declaration carries the valid shape
    "tile.full": lambda c, dst: [f"TEXPANDS({_need(dst)}, {cpp_expr(c.arg('value'))});"],
    "tile.cast": _cast,
    "tile.row_max": _two("TROWMAX", "x", "tmp"),
    "tile.row_sum": _two("TROWSUM", "x", "tmp"),
    "tile.row_expand_add": _two("TROWEXPANDADD", "x", "v"),
    "tile.row_expand_sub": _two("TROWEXPANDSUB", "x", "v"),
    "tile.row_expand_mul": _two("TROWEXPANDMUL", "x", "v"),
    "tile.row_expand_div": _two("TROWEXPANDDIV", "x", "v"),
    "tile.col_expand_mul": _two("TCOLEXPANDMUL", "x", "v"),
    "tile.col_expand": _col_expand,
    "system.set_flag": _flag("set_flag"),
    "system.wait_flag": _flag("wait_flag"),
    "system.pipe_barrier": _barrier,
    **{f"tile.{n}": _binary(f"T{n.upper()}") for n in ("add", "sub", "mul", "div")},
    **{f"tile.{n}s": _scalar(f"T{n.upper()}S") for n in ("add", "sub", "mul", "div")},
    **{f"tile.{n}": _unary(f"T{n.upper()}") for n in ("exp", "log", "sqrt", "recip", "relu", "neg", "abs")},
}


# --- op families beyond the tutorial set ---------------------------------------------------------
def _cmp(scalar: bool) -> Emitter:
    def emit(c: Call, dst: str | None) -> list[str]:
        rhs = cpp_expr(c.arg("rhs")) if scalar else _name(c.arg("rhs"))
        fn = "TCMPS" if scalar else "TCMP"
        return [f"{fn}({_need(dst)}, {_name(c.arg('lhs'))}, {rhs}, {_literal(c.arg('cmp_type'))});"]

    return emit


def _element(c: Call, name: str) -> tuple[str, str]:
    """The tensor or tile and the index list of a scalar access; an element of a batch of
    matrices is read from its matrix (a window of the stack), so each index is checked."""
    e, x = c.arg("indices"), c.arg(name)
    items = [cpp_expr(i) for i in (e.items if isinstance(e, ListExpr) else (e,))]
    where = _name(x)
    t = type_of(x)
    if isinstance(t, TileType) and len(t.shape) == 3 and len(items) == 3:
        _, r, col = t.shape
        where, items = f"TWINDOW({where}, ({items[0]}) * {r}, 0, {r}, {col})", items[1:]
    return where, "{" + ", ".join(f"static_cast<int64_t>({i})" for i in items) + "}"


def _read(c: Call, dst: str | None) -> list[str]:
    t = infer_call_type(c)
    value = "TREAD({}, {})".format(*_element(c, "src"))
    ctype = cpp_scalar_type(t)
    return [f"const {ctype} {_need(dst)} = static_cast<{ctype}>({value});"]


def _write(c: Call, dst: str | None) -> list[str]:
    # An integer value wraps to the element's width as numpy's astype does (the store itself
    # would saturate); the typing rule refuses a float value for an integer element.
    t = shaped_type(c.arg("dst")).dtype
    x = cpp_expr(c.arg("value"))
    if t.is_integer:
        x = f"pypto::cast_int({x}, {t.bits}, {str(t.kind != 'uint').lower()})"
    value = f"static_cast<double>({x})"
    return ["TWRITE({}, {}, {});".format(*_element(c, "dst"), value)]


def _scalar_cast(c: Call, dst: str | None) -> list[str]:
    t = scalar_type(c).dtype
    x = cpp_expr(c.arg("x"))
    if t.name == "BOOL":
        value = f"({x}) != 0"
    elif t.is_float:
        value = f"static_cast<double>(static_cast<float>({x}))"
    else:
        value = (
            f"pypto::cast_int({x}, {64 if t.kind == 'index' else t.bits}, {str(t.kind != 'uint').lower()})"
        )
    return [f"const {cpp_scalar_type(t)} {_need(dst)} = {value};"]


def _dim(c: Call, dst: str | None) -> list[str]:
    shape = tensor_type(c.arg("x")).shape
    axis = int(c.const_arg("axis").value) % len(shape)
    size = shape[axis] if isinstance(shape[axis], int) else f"{_name(c.arg('x'))}.desc->shape[{axis}]"
    return [f"const int64_t {_need(dst)} = {size};"]  # a pl.dynamic dim: read from the tensor


EMITTERS.update(
    {
        "tile.maximum": _binary("TMAX"),
        "tile.minimum": _binary("TMIN"),
        "tile.maximums": _scalar("TMAXS"),
        "tile.minimums": _scalar("TMINS"),
        **{f"tile.{n}": _unary(f"T{n.upper()}") for n in ("rsqrt", "sin", "cos")},
        "tile.cmp": _cmp(False),
        "tile.cmps": _cmp(True),
        "tile.sel": lambda c, dst: [
            f"TSEL({_need(dst)}, {_name(c.arg('mask'))}, {_name(c.arg('lhs'))}, {_name(c.arg('rhs'))});"
        ],
        **{f"tile.{n}": _binary(f"T{n.rstrip('_').upper()}") for n in ("and_", "or_", "xor", "shl", "shr")},
        **{f"tile.{n}s": _scalar(f"T{n.upper()}S") for n in ("and", "or", "xor", "shl", "shr")},
        "tile.not_": _unary("TNOT"),
        "tile.row_min": _two("TROWMIN", "x", "tmp"),
        "tile.col_sum": _unary("TCOLSUM"),
        "tile.col_max": _unary("TCOLMAX"),
        "tile.col_min": _unary("TCOLMIN"),
        **{f"tile.row_expand_{n}": _two(f"TROWEXPAND{n.upper()}", "x", "v") for n in ("max", "min")},
        **{
            f"tile.col_expand_{n}": _two(f"TCOLEXPAND{n.upper()}", "x", "v")
            for n in ("add", "sub", "div", "max", "min")
        },
        "tile.row_expand": lambda c, dst: [f"TROWEXPAND({_need(dst)}, {_name(c.arg('v'))});"],
        "tile.expands": lambda c, dst: [f"TEXPANDS({_need(dst)}, {cpp_expr(c.arg('scalar'))});"],
        "tile.read": _read,
        "tensor.read": _read,
        "tile.write": _write,
        "tensor.write": _write,
        "tensor.dim": _dim,
        "scalar.cast": _scalar_cast,
        "tile.get_block_idx": lambda c, dst: [f"const int64_t {_need(dst)} = get_block_idx();"],
        "tile.get_block_num": lambda c, dst: [f"const int64_t {_need(dst)} = get_block_num();"],
        "tile.gemv": _binary("TGEMV"),
        "tile.matmul_bias": lambda c, dst: [
            f"TMATMUL_BIAS({_need(dst)}, {', '.join(_name(c.arg(n)) for n in ('lhs', 'rhs', 'bias'))});"
        ],
    }
)


# --- batched (rank-3) tiles and the accumulating / biased gemv -----------------------------------
def _transpose(c: Call, dst: str | None) -> list[str]:
    d, x = _need(dst), c.arg("x")
    shape = tile_type(x).shape
    if len(shape) != 3:
        return [f"TTRANS({d}, {_name(x)});"]
    b, r, col = shape  # each matrix of the batch
    rows = f"TWINDOW({d}, i_ * {col}, 0, {col}, {r}), TWINDOW({_name(x)}, i_ * {r}, 0, {r}, {col})"
    return [f"for (int32_t i_ = 0; i_ < {b}; ++i_) TTRANS({rows});"]


def _batched(offsets: Expr) -> bool:
    return isinstance(offsets, ListExpr) and len(offsets.items) == 3


def _batches(t: Type | None) -> int:
    shape = tile_type(t).shape
    return shape[0] if len(shape) == 3 else 1


def _batch_matmul(accumulate: bool) -> Emitter:
    def emit(c: Call, dst: str | None) -> list[str]:
        d = _need(dst)  # batch_matmul_acc: the planner gives the result the accumulator's buffer
        lhs, rhs = c.arg("lhs"), c.arg("rhs")
        counts = f"{_batches(infer_call_type(c))}, {_batches(type_of(lhs))}, {_batches(type_of(rhs))}"
        flags = f"{_flag_arg(c, 'a_trans')}, {_flag_arg(c, 'b_trans')}, {'true' if accumulate else 'false'}"
        return [f"TMATMUL_BATCH({d}, {_name(lhs)}, {_name(rhs)}, {counts}, {flags});"]

    return emit


EMITTERS.update(
    {
        "tile.batch_matmul": _batch_matmul(False),
        "tile.batch_matmul_acc": _batch_matmul(True),
        "tile.gemv_acc": _binary("TGEMV_ACC"),  # in place: the result is the accumulator's buffer
        "tile.gemv_bias": lambda c, dst: [
            f"TGEMV_BIAS({_need(dst)}, {', '.join(_name(c.arg(n)) for n in ('lhs', 'rhs', 'bias'))});"
        ],
    }
)


# --- the op families (pypto/ops): each names its emitters, as templates or functions -------------
class _FamilyCpp:
    """How a family's emitter spells operands (pypto.ops.family.Cpp)."""

    def dst(self, dst: str | None) -> str:
        return _need(dst)

    def arg(self, call: Call, name: str) -> str:
        e = call.arg(name)
        if isinstance(e, Literal):
            v = e.value
            if isinstance(v, DataType):
                return DTYPE_ENUM[v.name]
            return "nullptr" if v is None else str(getattr(v, "value", v))
        if isinstance(type_of(e), (TileType, TensorType)):
            return _name(e)
        return cpp_expr(e)

    def expr(self, e: Expr) -> str:
        return cpp_expr(e)

    def error(self, message: str) -> Exception:
        return EmitError(message)


def _family_emitter(emit: str | EmitFn) -> Emitter:
    if not isinstance(emit, str):
        return lambda c, dst: emit(c, dst, _FamilyCpp())
    fields = [f for _, f, _, _ in string.Formatter().parse(emit) if f]
    cpp = _FamilyCpp()
    return lambda c, dst: [emit.format(**{f: cpp.dst(dst) if f == "dst" else cpp.arg(c, f) for f in fields})]


EMITTERS.update({op: _family_emitter(e) for fam in FAMILIES for op, e in fam.emitters.items()})

# The cross-core tile-pipe ops register their emitters from their own module.
from pypto.codegen import cluster as _cluster  # noqa: E402, F401
