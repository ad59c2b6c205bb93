"""The op → C++ emitter table. Each emitter gets the call and the destination tile (or None)
and returns the statement(s) that run it on the ISA of ``<pypto/kernel.hpp>``."""

from __future__ import annotations

from collections.abc import Callable

from pypto.codegen.cpp_expr import cpp_expr, cpp_name, cpp_scalar_type
from pypto.ir.bind import infer_call_type
from pypto.ir.enums import AtomicType, MemorySpace, PadValue, Pipe
from pypto.ir.expr import Call, Const, Expr, ListExpr, Literal, Var


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


def _need(dst: str | None) -> str:
    if dst is None:
        raise EmitError("the result of this op must be assigned to a tile")
    return dst


def _load(c: Call, dst: str | None) -> list[str]:
    r, col = _offsets(c.arg("offsets"))
    return [f"TLOAD({_need(dst)}, {_name(c.arg('tensor'))}, {r}, {col});"]


def _store(c: Call, dst: str | None) -> list[str]:
    r, col = _offsets(c.arg("offsets"))
    fn = "TSTORE_ATOMIC_ADD" if _literal(c.arg("atomic")) is AtomicType.Add else "TSTORE"
    out = _name(c.arg("output_tensor"))
    lines = [f"{fn}({out}, {r}, {col}, {_name(c.arg('tile'))});"]
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
    if _literal(c.arg("target_memory")) is MemorySpace.Left and src.type.shape[0] == 1:  # type: ignore[attr-defined]
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
    return [f"TMATMUL_ACC({_need(dst)}, {_name(c.arg('lhs'))}, {_name(c.arg('rhs'))}, {trans});"]


def _index(e: Expr) -> str:
    return str(e) if isinstance(e, int) else cpp_expr(e)


def _extract(c: Call, dst: str | None) -> list[str]:
    r, col = _index(c.arg("index_row")), _index(c.arg("index_col"))
    return [f"TEXTRACT({_need(dst)}, {_name(c.arg('src'))}, {r}, {col});"]


def _slice(c: Call, dst: str | None) -> list[str]:
    r, col = _offsets(c.arg("offset"))
    x = c.arg("x")
    if x.type.memory is MemorySpace.Vec:  # type: ignore[attr-defined]  # a Vec window: a VECTOR copy
        return [f"TEXTRACT({_need(dst)}, {_name(x)}, {r}, {col});"]
    # elsewhere: a view of x's storage
    shape = c.arg("shape").items  # type: ignore[attr-defined]
    h, w = (1, shape[0]) if len(shape) == 1 else shape
    return [f"{_need(dst)} = TWINDOW({_name(x)}, {r}, {col}, {cpp_expr(h)}, {cpp_expr(w)});"]  # type: ignore[arg-type]


def _assemble(c: Call, dst: str | None) -> list[str]:
    r, col = _offsets(c.arg("offset"))  # the result is dst's own buffer (the planner forces it)
    return [f"TINSERT({_need(dst)}, {r}, {col}, {_name(c.arg('src'))});"]


def _concat(c: Call, dst: str | None) -> list[str]:
    d, lhs = _need(dst), c.arg("lhs")
    width = lhs.type.shape[-1]  # type: ignore[attr-defined]
    return [f"TINSERT({d}, 0, 0, {_name(lhs)});", f"TINSERT({d}, 0, {width}, {_name(c.arg('rhs'))});"]


PAD_CPP = {PadValue.zero: "PadValue::Zero", PadValue.max: "PadValue::Max", PadValue.min: "PadValue::Min"}


def _fillpad(c: Call, dst: str | None) -> list[str]:
    return [f"TFILLPAD({_need(dst)}, {_name(c.arg('x'))}, {PAD_CPP[_literal(c.arg('pad_value'))]});"]  # type: ignore[index]


def _create(c: Call, dst: str | None) -> list[str]:
    _need(dst)
    return []  # storage only: the declaration is the whole effect


def _flag(fn: str) -> Emitter:
    def emit(c: Call, dst: str | None) -> list[str]:
        src, dst_pipe, eid = (_literal(a) for a in c.args)
        return [f"{fn}({PIPE_CPP[src]}, {PIPE_CPP[dst_pipe]}, {eid});"]  # type: ignore[index]

    return emit


def _barrier(c: Call, dst: str | None) -> list[str]:
    pipe = _literal(c.args[0])
    return [f"pipe_barrier({'PIPE_ALL' if pipe is None else PIPE_CPP[pipe]});"]  # type: ignore[index]


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
    "tile.transpose": _two_arg("TTRANS", "x"),
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


def _indices(e: Expr) -> str:
    items = e.items if isinstance(e, ListExpr) else (e,)
    return "{" + ", ".join(f"static_cast<int64_t>({cpp_expr(i)})" for i in items) + "}"


def _read(c: Call, dst: str | None) -> list[str]:
    t = infer_call_type(c)
    value = f"TREAD({_name(c.arg('src'))}, {_indices(c.arg('indices'))})"
    ctype = cpp_scalar_type(t)
    return [f"const {ctype} {_need(dst)} = static_cast<{ctype}>({value});"]


def _write(c: Call, dst: str | None) -> list[str]:
    value = f"static_cast<double>({cpp_expr(c.arg('value'))})"
    return [f"TWRITE({_name(c.arg('dst'))}, {_indices(c.arg('indices'))}, {value});"]


def _dim(c: Call, dst: str | None) -> list[str]:
    shape = c.arg("x").type.shape  # type: ignore[attr-defined]
    axis = int(_literal(c.arg("axis"))) % len(shape)  # type: ignore[call-overload]
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
        "tile.gather": _two("TGATHER", "src", "indices"),
        "tile.sort": _two("TSORT", "src", "idx"),
        "tile.sort32": _two("TSORT32", "src", "idx"),
        "tile.read": _read,
        "tensor.read": _read,
        "tile.write": _write,
        "tensor.write": _write,
        "tensor.dim": _dim,
        "tile.get_block_idx": lambda c, dst: [f"const int64_t {_need(dst)} = get_block_idx();"],
        "tile.get_block_num": lambda c, dst: [f"const int64_t {_need(dst)} = get_block_num();"],
        "tile.gemv": _binary("TGEMV"),
        "tile.matmul_bias": lambda c, dst: [
            f"TMATMUL_BIAS({_need(dst)}, {', '.join(_name(c.arg(n)) for n in ('lhs', 'rhs', 'bias'))});"
        ],
    }
)
