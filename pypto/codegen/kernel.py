"""The codegen driver: one InCore function → one C++ translation unit.

A table (``emitters.EMITTERS``) plus one loop over statements. Every op statement is tagged
with its Python ``file:line:col`` (``PYPTO_LOC``), so simulator errors and traces point at
the user's source; any failure here is a CodegenError naming the op and that span.
"""

from __future__ import annotations

import math

from pypto.codegen.cpp_expr import DTYPE_ENUM, c_string, cpp_expr, cpp_name, cpp_scalar_type
from pypto.codegen.emitters import EMITTERS, EmitError
from pypto.codegen.regions import check_slot_rules, region_prologue, regions_of
from pypto.codegen.valid import valid_flow
from pypto.errors import CodegenError, SourceSpan
from pypto.ir.enums import FunctionType, MemorySpace
from pypto.ir.expr import Call, Const, Expr, FuncCall, ListExpr, Var, as_var, tile_type
from pypto.ir.stmt import Assign, Eval, For, Function, If, Program, Return, Stmt, Yield
from pypto.ir.types import ScalarType, TensorType, TileType, Type

# <pypto/kernel.hpp>'s Mem spells each on-chip space as the IR does (GM is never a tile's).
MEM_CPP = {m.name: f"Mem::{m.name}" for m in MemorySpace if m is not MemorySpace.DDR}


def _loc(span: SourceSpan | None) -> str | None:
    return None if span is None else f"PYPTO_LOC({c_string(str(span))});"


def tile_address(t: TileType, var: str, span: SourceSpan | None, regions: dict[str, int]) -> str:
    """PYPTO: the planned offset; PTOAS: the region's base, chosen when the kernel starts.
    A runtime slot select goes through ``slot_address``, which refuses an index out of range."""
    ref = t.memref
    if ref is None or ref.size is None:
        raise CodegenError(f"tile {var!r} has no storage (did the memory planner run?)", span)
    base = str(ref.offset) if ref.allocated else f"region_base[{regions[ref.name]}]"
    if ref.slots > 1 and ref.index is not None:
        index, name = cpp_expr(ref.index), c_string(ref.name)
        return f"slot_address({base}, {index}, {ref.slots}, int64_t{{{ref.size}}}, {name})"
    return base


def tile_decl(var: Var, span: SourceSpan | None, regions: dict[str, int], valid: Expr | None = None) -> str:
    t = var.type
    assert isinstance(t, TileType)
    if t.memory is None or t.memory.name not in MEM_CPP:
        raise CodegenError(f"tile {var.name!r} has no on-chip memory space", span)
    # a batch [B, R, C] is its B matrices stacked by rows: [B * R, C]
    rows, cols = (1, t.shape[0]) if len(t.shape) == 1 else (math.prod(t.shape[:-1]), t.shape[-1])
    decl = (
        f"Tile {cpp_name(var.name)}({MEM_CPP[t.memory.name]}, {DTYPE_ENUM[t.dtype.name]}, {rows}, "
        f"{cols}, {tile_address(t, var.name, span, regions)}"
    )
    if isinstance(valid, ListExpr) and valid.items:
        vr, vc = ["1", *map(cpp_expr, valid.items)][-2:]  # a 1-D tile is one row
        decl += f", static_cast<int32_t>({vr}), static_cast<int32_t>({vc})"
    return decl + ");"


class _Emitter:
    def __init__(self, regions: dict[str, int]) -> None:
        self.lines: list[str] = []
        self.depth = 1
        self.regions = regions

    def put(self, line: str) -> None:
        self.lines.append("  " * self.depth + line)

    def block(self, stmts: tuple[Stmt, ...]) -> None:
        for s in stmts:
            self.stmt(s)

    def stmt(self, s: Stmt) -> None:
        if isinstance(s, Assign):
            self.assign(s)
        elif isinstance(s, Eval):
            self.call(s.value, None, s.span)
        elif isinstance(s, For):
            self.for_(s)
        elif isinstance(s, If):
            self.if_(s)
        elif isinstance(s, (Return, Yield)):
            pass  # outputs are written in place; yields are handled by their loop / branch
        else:
            raise CodegenError(f"{type(s).__name__} cannot appear in a kernel body", s.span)

    def call(self, value: Expr, dst: str | None, span: SourceSpan | None) -> None:
        if isinstance(value, FuncCall):
            raise CodegenError(f"kernel calls kernel {value.callee!r}: not supported inside a kernel", span)
        assert isinstance(value, Call)
        emitter = EMITTERS.get(value.op)
        if emitter is None:
            raise CodegenError(f"op {value.op} is not supported by this version's native ISA", span)
        try:
            lines = emitter(value, dst)
        except EmitError as e:
            raise CodegenError(f"cannot generate {value.op}: {e}", span) from None
        except Exception as e:  # an emitter bug still names the op and the user's line
            raise CodegenError(f"internal error generating {value.op}: {type(e).__name__}: {e}", span) from e
        loc = _loc(span)
        if loc and lines:
            self.put(loc)
        for line in lines:
            self.put(line)

    def assign(self, s: Assign) -> None:
        t, name = s.var.type, cpp_name(s.var.name)
        if isinstance(s.value, Call) and isinstance(t, TileType):
            valid = _valid_shape(s.value)
            self.put(tile_decl(s.var, s.span, self.regions, valid))
            for line in valid_flow(s.value, s.var):
                self.put(line)
            self.call(s.value, name, s.span)
        elif isinstance(s.value, Call):
            self.call(s.value, name, s.span)
        elif isinstance(t, ScalarType):
            self.put(f"const {cpp_scalar_type(t)} {name} = {cpp_expr(s.value)};")
        elif isinstance(s.value, Var):
            kind = "Tile" if isinstance(t, TileType) else "Tensor"
            self.put(f"{kind} {name} = {cpp_name(s.value.name)};")
        else:
            raise CodegenError(f"cannot assign {type(s.value).__name__} to {s.var.name!r}", s.span)

    def carried(self, var: Var, init: str) -> None:
        self.put(f"{_cpp_kind(var.type)} {cpp_name(var.name)} = {init};")

    def yield_into(self, targets: list[Var], body: tuple[Stmt, ...]) -> None:
        """Yielded values into the carried / merged variables. Tiles are rebound, never copied
        here: the planner gives a carried tile and the value yielded into it one buffer (a
        copy it needs is a ``tile.move`` in the IR, which InsertSync orders like any op)."""
        last = body[-1] if body else None
        if not isinstance(last, Yield) or not targets:
            return
        temps = [f"y{i}_{cpp_name(t.name)}" for i, t in enumerate(targets)]
        for tmp, t, v in zip(temps, targets, last.values):
            if isinstance(t.type, TileType):
                _check_same_storage(t, v, last.span)
            value = cpp_expr(v) if isinstance(t.type, ScalarType) else cpp_name(as_var(v).name)
            self.put(f"const auto {tmp} = {value};")
        for tmp, t in zip(temps, targets):
            self.put(f"{cpp_name(t.name)} = {tmp};")

    def for_(self, s: For) -> None:
        for it in s.iter_args:
            init = (
                cpp_expr(it.init) if isinstance(it.var.type, ScalarType) else cpp_name(as_var(it.init).name)
            )
            self.carried(it.var, init)
        i, stop, step = cpp_name(s.var.name), cpp_expr(s.stop), cpp_expr(s.step)
        if s.cond is not None:  # pl.while_: tested before each trip, over the carried values
            cond = f"({cpp_expr(s.cond)}) && {i} < {stop}"
        elif isinstance(s.step, Const):  # Python's range: a negative step counts down
            cond = f"{i} {'<' if s.step.value > 0 else '>'} {stop}"
        else:
            cond = f"({step} > 0 ? {i} < {stop} : {i} > {stop})"
        self.put(f"for (int64_t {i} = {cpp_expr(s.start)}; {cond}; {i} += {step}) {{")
        self.depth += 1
        self.block(s.body)
        self.yield_into([it.var for it in s.iter_args], s.body)
        self.depth -= 1
        self.put("}")
        for res, it in zip(s.results, s.iter_args):
            self.carried(res, cpp_name(it.var.name))

    def if_(self, s: If) -> None:
        for r in s.results:
            self.put(f"{_cpp_kind(r.type)} {cpp_name(r.name)}{{}};")
        self.put(f"if ({cpp_expr(s.cond)}) {{")
        for body, last in ((s.then_body, "} else {"), (s.else_body, "}")):
            self.depth += 1
            self.block(body)
            self.yield_into(list(s.results), body)
            self.depth -= 1
            self.put(last)


def _valid_shape(c: Call) -> Expr | None:
    """The valid shape a tile's declaration carries (ragged loads and pl.set_validshape)."""
    if c.op in ("tile.load", "tile.slice"):
        return c.arg("valid_shape")
    if c.op == "tile.set_validshape":
        return ListExpr((c.arg("valid_rows"), c.arg("valid_cols")))
    return None


def _cpp_kind(t: Type) -> str:
    if isinstance(t, TileType):
        return "Tile"
    if isinstance(t, TensorType):
        return "Tensor"
    return cpp_scalar_type(t)


def _check_same_storage(target: Var, value: Expr, span: SourceSpan | None) -> None:
    a = tile_type(target).memref
    if not isinstance(value, Var):
        return
    b = value.type.memref if isinstance(value.type, TileType) else None
    if (
        a is not None
        and b is not None
        and a.allocated
        and b.allocated
        and (a.offset != b.offset or None not in (a.index, b.index) and a.index != b.index)
    ):  # no index: either slot (a tile carried around a loop whose slots rotate, memory.rotate_carries)
        raise CodegenError(
            f"tile {value.name!r} flows into {target.name!r} but they were given different buffers "
            f"(offsets {b.offset} and {a.offset}); AllocateMemoryAddr must give them one",
            span,
        )


def _prologue(fn: Function) -> list[str]:
    lines, n_tensors = [], sum(isinstance(p.var.type, TensorType) for p in fn.params)
    ti = si = 0
    for p in fn.params:
        name = cpp_name(p.var.name)
        if isinstance(p.var.type, TensorType):
            lines.append(f"  Tensor {name} = arg_tensor(args, {ti});")
            ti += 1
        elif isinstance(p.var.type, ScalarType):
            getter = "arg_f64" if p.var.type.dtype.is_float else "arg_i64"
            lines.append(f"  const {cpp_scalar_type(p.var.type)} {name} = {getter}(args, {n_tensors + si});")
            si += 1
        else:
            raise CodegenError(f"parameter {p.var.name!r} of a kernel must be a tensor or a scalar", p.span)
    return lines


def generate_kernel(fn: Function) -> str:
    """The C++ source of InCore function ``fn`` (addresses and syncs already in the IR)."""
    regions = regions_of(fn)
    if regions:
        check_slot_rules(fn)
    em = _Emitter({r.name: i for i, r in enumerate(regions)})
    em.block(fn.body)
    head = [
        f"// Generated by pypto from {fn.name}{' at ' + str(fn.span) if fn.span else ''}. Do not edit.",
        "#include <pypto/kernel.hpp>",
        "",
        "using namespace pypto;",
        "",
        'extern "C" void kernel_entry(__gm__ int64_t* args) {',
    ]
    return "\n".join(head + _prologue(fn) + region_prologue(regions) + em.lines + ["}", ""])


def kernel_sources(program: Program) -> list[tuple[str, str]]:
    """(name, C++ source) of every kernel to build: each InCore function, and each Group
    function as one cluster kernel made of the AIC and AIV kernels it calls (not built alone)."""
    from pypto.codegen.cluster import generate_cluster_kernel
    from pypto.passes.split_cluster_kernels import aiv_count, cluster_members

    groups = [f for f in program.functions if f.kind is FunctionType.Group]
    members = {m.name: m for g in groups for m in cluster_members(program, g)}
    out = [
        (f.name, generate_kernel(f))
        for f in program.functions
        if f.kind.is_incore and f.external_source is None and f.name not in members
    ]
    for g in groups:
        aic, aiv = cluster_members(program, g)
        out.append(
            (g.name, generate_cluster_kernel(g, generate_kernel(aic), generate_kernel(aiv), aiv_count(aiv)))
        )
    return out
