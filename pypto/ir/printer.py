"""Print IR as DSL text that the frontend parses back to an equal program.

The output is a ``@pl.program`` class (first line ``# pypto.program: <name>``). Every
assignment carries its full type, so memory spaces and memrefs — including assigned
addresses, ``pl.MemRef(mem_vec_0, 0, 32768)`` — survive the round trip. The module starts
with ``from __future__ import annotations`` so a dump is also importable Python.

The pipelining decisions are printed where they live: a planned loop as
``pl.pipeline(..., stage=2, staged=["t", "e"])``, an expanded kernel's clone groups as
``@pl.function(..., pipeline_groups=[pl.PipelineGroup(...)])``. Only the ``@pl.program``
form accepts them back (see :mod:`pypto.frontend.pipeline_attrs`).
"""

from __future__ import annotations

import enum
import json
import math

from pypto.ir.dtypes import DataType
from pypto.ir.enums import Direction
from pypto.ir.expr import (
    BinOp,
    Call,
    Const,
    Expr,
    FuncCall,
    ListExpr,
    Literal,
    UnaryOp,
    Var,
    as_expr,
)
from pypto.ir.ops import OPS
from pypto.ir.stmt import (
    Assign,
    Eval,
    For,
    Function,
    If,
    Param,
    PipelineClone,
    PipelineGroup,
    Program,
    Return,
    Scope,
    Stmt,
    TaskRegion,
    Yield,
)
from pypto.ir.types import (
    ArrayType,
    DynDim,
    MemRef,
    ScalarType,
    TensorType,
    TileType,
    Type,
    VoidType,
    format_type,
)
from pypto.ir.visit import nodes_of

INDENT = "    "
MAX_COLS = 110

# Binding strength, weakest first; operands of the same strength are parenthesised on the
# right (and comparisons on both sides) so the printed text re-parses to the same tree.
_PREC = {
    "or": 1,
    "and": 2,
    "not": 3,
    "==": 4,
    "!=": 4,
    "<": 4,
    "<=": 4,
    ">": 4,
    ">=": 4,
    "+": 5,
    "-": 5,
    "*": 6,
    "/": 6,
    "//": 6,
    "%": 6,
    "neg": 7,
}
_ATOM = 8


def _literal(value: DataType | enum.Enum | str | None) -> str:
    if value is None:
        return "None"
    if isinstance(value, DataType):
        return f"pl.{value.name}"
    if isinstance(value, str):
        return json.dumps(value)
    return repr(value)  # the IR's enums print as the DSL attribute that names them (pl.Mem.Vec)


def _const(value: int | float | bool) -> str:
    if isinstance(value, float) and not math.isfinite(value):
        return f'float("{value}")'
    return repr(value)


def _prec(e: Expr) -> int:
    if isinstance(e, BinOp):
        return _ATOM if e.op in ("min", "max") else _PREC[e.op]
    if isinstance(e, UnaryOp):
        return _PREC["not"] if e.op == "not" else _PREC["neg"]
    if isinstance(e, Const) and isinstance(e.value, (int, float)) and e.value < 0:
        return _PREC["neg"]
    return _ATOM


def _wrap(e: Expr, need: int) -> str:
    text = print_expr(e)
    return f"({text})" if _prec(e) < need else text


def _call_args(call: Call) -> list[str]:
    out = []
    for p, a in zip(OPS[call.op].params, call.args):
        if p.required and not p.kw_only:
            out.append(print_expr(a))
        elif p.required or print_expr(a) != print_expr(_default_expr(p.default)):
            out.append(f"{p.name}={print_expr(a)}")
    return out


def _default_expr(value: object) -> Expr:
    return as_expr(value)


def print_expr(e: Expr) -> str:
    """One expression in DSL syntax."""
    if isinstance(e, Var):
        return e.name
    if isinstance(e, Const):
        return _const(e.value)
    if isinstance(e, Literal):
        return _literal(e.value)
    if isinstance(e, ListExpr):
        return "[" + ", ".join(print_expr(i) for i in e.items) + "]"
    if isinstance(e, BinOp) and e.op in ("min", "max"):
        return f"{e.op}({print_expr(e.lhs)}, {print_expr(e.rhs)})"
    if isinstance(e, BinOp):
        p = _PREC[e.op]
        left_need = p + 1 if p == _PREC["<"] else p
        return f"{_wrap(e.lhs, left_need)} {e.op} {_wrap(e.rhs, p + 1)}"
    if isinstance(e, UnaryOp):
        if e.op == "not":
            return f"not {_wrap(e.operand, _PREC['not'])}"
        return f"-{_wrap(e.operand, _PREC['neg'] + 1)}"
    if isinstance(e, Call):
        return f"pl.{e.op}({', '.join(_call_args(e))})"
    if isinstance(e, FuncCall):
        args = [print_expr(a) for a in e.args]
        if e.handle is not None:
            args.append(f"handle={json.dumps(e.handle)}")
        if e.deps or e.dep_values:
            args.append(f"deps=[{', '.join([*e.deps, *map(print_expr, e.dep_values)])}]")
        if e.blocks != 1:
            args.append(f"blocks={_blocks(e.blocks)}")
        args += _task_hints(e.early_resolve, e.no_dep, e.sync_start)
        return f"self.{e.callee}({', '.join(args)})"
    raise TypeError(f"cannot print expression {e!r}")


def _task_hints(early_resolve: bool, no_dep: tuple[Var, ...], sync_start: bool = False) -> list[str]:
    """A task's ``allow_early_resolve=`` / ``no_dep_args=`` / ``sync_start=`` keywords (only
    when given)."""
    hints = ["allow_early_resolve=True"] if early_resolve else []
    if no_dep:
        hints.append(f"no_dep_args=[{', '.join(v.name for v in no_dep)}]")
    if sync_start:
        hints.append("sync_start=True")
    return hints


def print_memref(m: MemRef) -> str:
    """``pl.MemRef("ub", slots=2)[i % 2]`` or, once allocated, ``pl.MemRef(mem_vec_0, 0, 32768)``."""
    if m.allocated:
        name = m.name if m.name.isidentifier() else json.dumps(m.name)
        args = [name, str(m.offset), str(m.size)]
    else:
        args = [json.dumps(m.name)]
    if m.slots != 1:
        args.append(f"slots={m.slots}")
    if not m.allocated and m.size is not None:  # a PTOAS region: placed when the kernel starts
        args.append(f"size={m.size}")
    text = f"pl.MemRef({', '.join(args)})"
    return text if m.index is None else f"{text}[{print_expr(m.index)}]"


def print_type(t: Type) -> str:
    """A type as the DSL annotation that spells it."""
    if isinstance(t, ScalarType):
        return f"pl.Scalar[pl.{t.dtype.name}]"
    if isinstance(t, TensorType):
        return f"pl.Tensor[{list(t.shape)}, pl.{t.dtype.name}]"
    if isinstance(t, TileType):
        parts = [str(list(t.shape)), f"pl.{t.dtype.name}"]
        if t.memref is not None:
            parts.append(print_memref(t.memref))
        if t.memory is not None:
            parts.append(t.memory.dsl_name)
        return f"pl.Tile[{', '.join(parts)}]"
    if isinstance(t, VoidType):
        return "None"
    if isinstance(t, ArrayType):
        return format_type(t)
    raise TypeError(f"cannot print type {t!r}")


def _tuple(items: list[str]) -> str:
    return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"


def _targets(names: tuple[Var, ...]) -> str:
    return ", ".join(v.name for v in names)


class _Printer:
    def __init__(self, concise: bool = False) -> None:
        self.lines: list[str] = []
        self.concise = concise  # assignments without their type annotation (for reading)

    def emit(self, depth: int, text: str) -> None:
        self.lines.append(INDENT * depth + text)

    def block(self, body: tuple[Stmt, ...], depth: int, results: tuple[Var, ...] = ()) -> None:
        if not body:
            self.emit(depth, "pass")
        for s in body:
            if isinstance(s, Yield) and results:
                values = ", ".join(print_expr(v) for v in s.values)
                self.emit(depth, f"{_targets(results)} = pl.yield_({values})")
            else:
                self.stmt(s, depth)

    def stmt(self, s: Stmt, depth: int) -> None:
        if isinstance(s, Assign):
            annotation = "" if self.concise else f": {print_type(s.var.type)}"
            self.emit(depth, f"{s.var.name}{annotation} = {print_expr(s.value)}")
        elif isinstance(s, Eval):
            self.emit(depth, print_expr(s.value))
        elif isinstance(s, For):
            self.for_(s, depth)
        elif isinstance(s, If):
            self.emit(depth, f"if {print_expr(s.cond)}:")
            self.block(s.then_body, depth + 1, s.results)
            if s.else_body or s.results:
                self.emit(depth, "else:")
                self.block(s.else_body, depth + 1, s.results)
        elif isinstance(s, Scope):
            self.scope(s, depth)
        elif isinstance(s, TaskRegion):
            self.emit(depth, "with pl.manual_scope():" if s.manual else "with pl.scope():")
            self.block(s.body, depth + 1)
        elif isinstance(s, Return):
            self.emit(depth, ("return " + ", ".join(print_expr(v) for v in s.values)).rstrip())
        elif isinstance(s, Yield):
            self.emit(depth, f"pl.yield_({', '.join(print_expr(v) for v in s.values)})")
        else:
            raise TypeError(f"cannot print statement {s!r}")

    def for_(self, s: For, depth: int) -> None:
        if s.cond is not None:
            inits = _tuple([print_expr(a.init) for a in s.iter_args])
            self.emit(
                depth, f"for {_tuple([a.var.name for a in s.iter_args])} in pl.while_(init_values={inits}):"
            )
            self.emit(depth + 1, f"pl.cond({print_expr(s.cond)})")
            self.block(s.body, depth + 1, s.results)
            return
        bounds = [s.stop]
        if s.step != Const(1):
            bounds = [s.start, s.stop, s.step]
        elif s.start != Const(0):
            bounds = [s.start, s.stop]
        args = [print_expr(b) for b in bounds]
        target = s.var.name
        if s.iter_args:
            args.append(f"init_values={_tuple([print_expr(a.init) for a in s.iter_args])}")
            target += f", {_tuple([a.var.name for a in s.iter_args])}"
        if s.stage is not None:
            args.append(f"stage={s.stage}")
        if s.staged is not None:
            args.append(f"staged={_names(s.staged)}")
        self.emit(depth, f"for {target} in {s.kind.dsl_name}({', '.join(args)}):")
        self.block(s.body, depth + 1, s.results)

    def scope(self, s: Scope, depth: int) -> None:
        args = [f"level={s.level.dsl_name}"] if s.blocks == 1 else [_blocks(s.blocks)]
        if s.name_hint is not None:
            args.append(f"name_hint={json.dumps(s.name_hint)}")
        if s.deps or s.dep_values:
            args.append(f"deps=[{', '.join([*s.deps, *map(print_expr, s.dep_values)])}]")
        if s.split is not None:
            args.append(f"optimizations=[pl.split({s.split.dsl_name})]")
        args += _task_hints(s.early_resolve, s.no_dep, s.sync_start)
        handle = f" as {s.handle}" if s.handle else ""
        if s.cluster:
            args = args[1:]  # pl.cluster has no level
        form = "cluster" if s.cluster else "at" if s.blocks == 1 else "spmd"
        self.emit(depth, f"with pl.{form}({', '.join(args)}){handle}:")
        self.block(s.body, depth + 1)

    def groups(self, groups: tuple[PipelineGroup, ...], depth: int) -> None:
        """``pipeline_groups=[...]``: one group per loop, one clone per line (or, when one of a
        group's clones is too long for a line, every clone of it one field per line)."""
        self.emit(depth, "pipeline_groups=[")
        for g in groups:
            self.emit(depth + 1, f"pl.PipelineGroup({json.dumps(g.name)}, depth={g.depth}, blocks=[")
            clones = [_clone_fields(c) for block in g.blocks for c in block]
            wide = any(
                len(INDENT * (depth + 3) + f"pl.PipelineClone({', '.join(f)}),") > MAX_COLS for f in clones
            )
            for block in g.blocks:
                self.emit(depth + 2, "[")
                for c in block:
                    self.clone(_clone_fields(c), depth + 3, wide)
                self.emit(depth + 2, "],")
            self.emit(depth + 1, "]),")
        self.emit(depth, "],")

    def clone(self, fields: list[str], depth: int, wide: bool) -> None:
        if not wide:
            self.emit(depth, f"pl.PipelineClone({', '.join(fields)}),")
            return
        self.emit(depth, "pl.PipelineClone(")
        for part in fields:
            self.emit(depth + 1, part + ",")
        self.emit(depth, "),")

    def function(self, f: Function, depth: int) -> None:
        deco = [f"type={f.kind.dsl_name}"]
        if f.external_source is not None:
            deco.append(f"external_source={json.dumps(f.external_source)}")
        if f.include_dirs:
            deco.append(f"include_dirs={json.dumps(list(f.include_dirs))}")
        if f.pipeline_groups:
            self.emit(depth, "@pl.function(")
            for d in deco:
                self.emit(depth + 1, d + ",")
            self.groups(f.pipeline_groups, depth + 1)
            self.emit(depth, ")")
        else:
            self.emit(depth, f"@pl.function({', '.join(deco)})")
        params = ["self"] + [_param(p) for p in f.params]
        ret = ""
        if len(f.return_types) == 1:
            ret = f" -> {print_type(f.return_types[0])}"
        elif f.return_types:
            ret = f" -> tuple[{', '.join(print_type(t) for t in f.return_types)}]"
        head = f"def {f.name}({', '.join(params)}){ret}:"
        if len(INDENT * depth + head) <= MAX_COLS:
            self.emit(depth, head)
        else:
            self.emit(depth, f"def {f.name}(")
            for p in params:
                self.emit(depth + 1, p + ",")
            self.emit(depth, f"){ret}:")
        if f.external_source is not None and not f.body:
            self.emit(depth + 1, "...")
        else:
            self.block(f.body, depth + 1)


def _param(p: Param) -> str:
    t = print_type(p.var.type)
    if p.direction is Direction.Out:
        t = f"pl.Out[{t}]"
    elif p.direction is Direction.InOut:
        t = f"pl.InOut[{t}]"
    return f"{p.var.name}: {t}"


def print_function(f: Function, concise: bool = False) -> str:
    """One function as a ``@pl.function`` method (indented for a program class); ``concise``
    leaves out the types of assigned values (parameters and returns keep theirs)."""
    pr = _Printer(concise)
    pr.function(f, 1)
    return "\n".join(pr.lines) + "\n"


def print_program(p: Program, concise: bool = False) -> str:
    """The whole program as re-parseable DSL text; ``concise`` leaves out the types of assigned
    values (memory spaces and addresses with them): shorter to read, but only the full text
    parses back to an equal program."""
    pr = _Printer(concise)
    pr.lines += [
        f"# pypto.program: {p.name}",
        "from __future__ import annotations",
        "",
        "import pypto.language as pl",
        "",
        *_dynamic_dims(p),
        "",
        "@pl.program",
        f"class {p.name}:",
    ]
    for i, f in enumerate(p.functions):
        if i:
            pr.lines.append("")
        pr.function(f, 1)
    if not p.functions:
        pr.emit(1, "pass")
    return "\n".join(pr.lines) + "\n"


def _names(names: tuple[str, ...]) -> str:
    return json.dumps(list(names))


def _clone_fields(c: PipelineClone) -> list[str]:
    return [f"{f}={_names(getattr(c, f))}" for f in ("staged", "defs", "hoisted")]


def _blocks(blocks: int | Expr) -> str:
    return str(blocks) if isinstance(blocks, int) else print_expr(blocks)


def _dynamic_dims(p: Program) -> list[str]:
    """``M = pl.dynamic("M")`` for each dynamic dim the signatures use, so the text parses."""
    names = {
        d.name
        for f in p.functions
        for v in [prm.var for prm in f.params] + nodes_of(f.body, Var)  # views' run-time sizes too
        for d in getattr(v.type, "shape", ())
        if isinstance(d, DynDim)
    }
    return [f"{n} = pl.dynamic({json.dumps(n)})" for n in sorted(names)] + ([""] if names else [])
