"""``torch_codegen``: a program's IR as plain torch code, to run its meaning on the host.

Each IR function becomes a Python function over torch tensors: tensor- and tile-level ops
become torch expressions, ``pl.at`` scopes and loops become Python blocks, pipe syncs disappear
(they order work, they compute nothing), a store writes into its tensor in place. Running it
answers "is the IR right?" apart from "does the chip compute what the IR says?" — compare its
outputs with your reference and with the simulator's.

Ops outside the table below (cross-core pipes, sorts, gathers, ...) are refused with a
``CodegenError`` naming the op; block indices read 0 (one block).
"""

from __future__ import annotations

import keyword
from typing import Any

from pypto.errors import CodegenError
from pypto.ir.dtypes import DataType
from pypto.ir.enums import Direction
from pypto.ir.expr import BinOp, Call, Const, Expr, FuncCall, ListExpr, Literal, UnaryOp, Var
from pypto.ir.stmt import Assign, Eval, For, Function, If, Program, Return, Scope, Stmt, Yield

PRELUDE = """import torch

_DTYPES = {"FP32": torch.float32, "FP16": torch.float16, "BF16": torch.bfloat16, "INT8": torch.int8,
           "INT16": torch.int16, "INT32": torch.int32, "INT64": torch.int64, "UINT8": torch.uint8,
           "BOOL": torch.bool, "INDEX": torch.int64}


def _window(offsets, shape):
    return tuple(slice(o, o + s) for o, s in zip(offsets, shape))


def _load(t, offsets, shape):
    return t[_window(offsets, shape)].clone()


def _store(tile, offsets, out):
    out[_window(offsets, tile.shape)] = tile.to(out.dtype)
    return out


def _cast(x, dtype):
    if dtype.is_floating_point or not x.is_floating_point():
        return x.to(dtype)
    return torch.round(x).to(dtype)  # round to nearest, ties to even (the default cast mode)


def _matmul(a, b, out_dtype, a_trans=False, b_trans=False, acc=None):
    a = a.transpose(-1, -2) if a_trans else a
    b = b.transpose(-1, -2) if b_trans else b
    c = torch.matmul(a.float(), b.float())
    c = c if acc is None else acc.float() + c
    return c.to(_DTYPES[out_dtype] if out_dtype else (acc.dtype if acc is not None else torch.float32))
"""

_UNARY = {"exp": "torch.exp({x})", "log": "torch.log({x})", "sqrt": "torch.sqrt({x})",
          "abs": "torch.abs({x})", "neg": "(-{x})", "recip": "(1.0 / {x})", "rsqrt": "torch.rsqrt({x})",
          "relu": "torch.relu({x})", "sin": "torch.sin({x})", "cos": "torch.cos({x})"}  # fmt: skip
_BINARY = {"add": "({a} + {b})", "sub": "({a} - {b})", "mul": "({a} * {b})", "div": "({a} / {b})",
           "maximum": "torch.maximum({a}, {b})", "minimum": "torch.minimum({a}, {b})"}  # fmt: skip
_ROW = {"row_sum": "{x}.sum(dim=-1, keepdim=True)", "row_max": "{x}.amax(dim=-1, keepdim=True)",
        "row_min": "{x}.amin(dim=-1, keepdim=True)", "col_sum": "{x}.sum(dim=-2, keepdim=True)",
        "col_max": "{x}.amax(dim=-2, keepdim=True)", "col_min": "{x}.amin(dim=-2, keepdim=True)"}  # fmt: skip
_EXPAND = {"add": "+", "sub": "-", "mul": "*", "div": "/"}
_NO_VALUE = ("system.set_flag", "system.wait_flag", "system.pipe_barrier")


def _name(n: str) -> str:
    return f"{n}_" if keyword.iskeyword(n) or n in ("torch", "_DTYPES") else n


class _Emitter:
    def __init__(self, check_shapes: bool) -> None:
        self.lines: list[str] = []
        self.check_shapes = check_shapes

    def emit(self, depth: int, text: str) -> None:
        self.lines.append("    " * depth + text)

    def expr(self, e: Expr) -> str:
        if isinstance(e, Var):
            return _name(e.name)
        if isinstance(e, Const):
            return repr(e.value)
        if isinstance(e, Literal):
            return repr(e.value.name if isinstance(e.value, DataType) else getattr(e.value, "name", e.value))
        if isinstance(e, ListExpr):
            return "[" + ", ".join(self.expr(i) for i in e.items) + "]"
        if isinstance(e, BinOp):
            if e.op in ("min", "max"):
                return f"{e.op}({self.expr(e.lhs)}, {self.expr(e.rhs)})"
            return f"({self.expr(e.lhs)} {e.op} {self.expr(e.rhs)})"
        if isinstance(e, UnaryOp):
            return f"(not {self.expr(e.operand)})" if e.op == "not" else f"(-{self.expr(e.operand)})"
        if isinstance(e, FuncCall):
            return f"{_name(e.callee)}({', '.join(self.expr(a) for a in e.args)})"
        if isinstance(e, Call):
            return self.call(e)
        raise CodegenError(f"torch_codegen: cannot translate expression {type(e).__name__}", e.span)

    def call(self, c: Call) -> str:
        family, _, op = c.op.partition(".")
        a = [self.expr(x) for x in c.args]
        if op in _UNARY and len(a) >= 1:
            return _UNARY[op].format(x=a[0])
        base = op[:-1] if op.endswith("s") and op[:-1] in _BINARY else op
        if base in _BINARY:
            return _BINARY[base].format(a=a[0], b=a[1])
        if op in _ROW:
            return _ROW[op].format(x=a[0])
        for kind in ("row_expand", "col_expand"):
            if op == kind:
                return f"{a[1]}.expand_as({a[0]}).clone()"
            if op.startswith(kind + "_") and op[len(kind) + 1 :] in _EXPAND:
                return f"({a[0]} {_EXPAND[op[len(kind) + 1 :]]} {a[1]})"
        return self.special(c, family, op, a)

    def special(self, c: Call, family: str, op: str, a: list[str]) -> str:
        if op == "load":
            return f"_load({a[0]}, {a[1]}, {a[2]})"
        if op == "store":
            return f"_store({a[0]}, {a[1]}, {a[2]})"
        if op == "cast":
            return f"_cast({a[0]}, _DTYPES[{a[1]}])"
        if op in ("matmul", "batch_matmul"):
            trans = a[3:5] if op == "matmul" else a[2:4]
            return f"_matmul({a[0]}, {a[1]}, {a[2] if op == 'matmul' else None}, {trans[0]}, {trans[1]})"
        if op in ("matmul_acc", "batch_matmul_acc"):
            return f"_matmul({a[1]}, {a[2]}, None, {a[3]}, {a[4]}, acc={a[0]})"
        if op in ("move", "reshape") or c.op in ("tile.fillpad",):
            return f"{a[0]}.clone()" if op != "reshape" else f"{a[0]}.reshape({a[1]})"
        if op in ("create", "full"):
            fill = a[2] if op == "full" else "0"
            return f"torch.full({a[0]}, {fill}, dtype=_DTYPES[{a[1]}])"
        if op == "transpose":
            return f"{a[0]}.transpose({a[1]}, {a[2]}).contiguous()"
        if op in ("get_block_idx", "get_subblock_idx"):
            return "0"
        if op == "get_block_num":
            return "1"
        if op == "slice" and family == "tensor":
            return f"{a[0]}[_window({a[2]}, {a[1]})]"
        raise CodegenError(f"torch_codegen: op {c.op} has no torch translation", c.span)

    def block(self, body: tuple[Stmt, ...], depth: int, results: tuple[Var, ...] = ()) -> None:
        before = len(self.lines)
        for s in body:
            if isinstance(s, Yield):
                if results:
                    self.emit(
                        depth, f"{', '.join(_name(v.name) for v in results)}, = {self.values(s.values)},"
                    )
            else:
                self.stmt(s, depth)
        if len(self.lines) == before:
            self.emit(depth, "pass")

    def values(self, values: tuple[Expr, ...]) -> str:
        return ", ".join(self.expr(v) for v in values)

    def stmt(self, s: Stmt, depth: int) -> None:
        if isinstance(s, Assign):
            self.emit(depth, f"{_name(s.var.name)} = {self.expr(s.value)}")
            shape = getattr(s.var.type, "shape", None)
            if self.check_shapes and shape and all(isinstance(d, int) for d in shape):
                self.emit(
                    depth, f"assert tuple({_name(s.var.name)}.shape) == {tuple(shape)!r}, {s.var.name!r}"
                )
        elif isinstance(s, Eval):
            if not (isinstance(s.value, Call) and s.value.op in _NO_VALUE):
                self.emit(depth, self.expr(s.value))
        elif isinstance(s, For):
            self.for_(s, depth)
        elif isinstance(s, If):
            self.emit(depth, f"if {self.expr(s.cond)}:")
            self.block(s.then_body, depth + 1, s.results)
            if s.else_body or s.results:
                self.emit(depth, "else:")
                self.block(s.else_body, depth + 1, s.results)
        elif isinstance(s, Scope):
            self.block(s.body, depth)
        elif isinstance(s, Return):
            self.emit(depth, f"return {self.values(s.values)}".rstrip())
        else:
            raise CodegenError(f"torch_codegen: cannot translate statement {type(s).__name__}", s.span)

    def for_(self, s: For, depth: int) -> None:
        carried = [_name(a.var.name) for a in s.iter_args]
        for a in s.iter_args:
            self.emit(depth, f"{_name(a.var.name)} = {self.expr(a.init)}")
        if s.cond is not None:
            self.emit(depth, f"while {self.expr(s.cond)}:")
        else:
            bounds = f"{self.expr(s.start)}, {self.expr(s.stop)}, {self.expr(s.step)}"
            self.emit(depth, f"for {_name(s.var.name)} in range({bounds}):")
        self.block(s.body, depth + 1, tuple(a.var for a in s.iter_args))
        if s.results:
            self.emit(depth, f"{', '.join(_name(v.name) for v in s.results)}, = {', '.join(carried)},")

    def function(self, f: Function) -> None:
        self.emit(0, f"def {_name(f.name)}({', '.join(_name(p.var.name) for p in f.params)}):")
        if f.external_source is not None:
            raise CodegenError(f"torch_codegen: `{f.name}` is hand-written C++ ({f.external_source})", f.span)
        self.block(f.body, 1)
        if not any(isinstance(s, Return) for s in f.body):  # a kernel's result is what it wrote
            outs = [_name(p.var.name) for p in f.params if p.direction is not Direction.In]
            self.emit(1, f"return {', '.join(outs)}" if outs else "return None")


def torch_codegen(ir: Program | Function | Any, *, check_shapes: bool = False) -> str:
    """Python source defining one torch function per IR function (the program's entry last
    defined wins no name clash: names are the IR's). ``check_shapes`` asserts each assigned
    value's static shape. ``exec`` it and call the entry with torch tensors."""
    functions = ir.functions if isinstance(ir, Program) else (ir,)
    if not all(isinstance(f, Function) for f in functions):
        raise TypeError(f"torch_codegen takes an ir.Program or ir.Function, got {type(ir).__name__}")
    em = _Emitter(check_shapes)
    for f in functions:
        em.emit(0, "")
        em.emit(0, "")
        em.function(f)
    return PRELUDE + "\n".join(em.lines) + "\n"


def run_torch(program: Program, *args: Any, check_shapes: bool = False) -> Any:
    """Runs ``program``'s entry function through ``torch_codegen`` on torch tensors ``args``
    (outputs written in place, as on the simulator); returns what the entry returns."""
    namespace: dict[str, Any] = {}
    exec(
        compile(torch_codegen(program, check_shapes=check_shapes), f"<torch:{program.name}>", "exec"),
        namespace,
    )
    return namespace[_name(program.entry.name)](*args)
