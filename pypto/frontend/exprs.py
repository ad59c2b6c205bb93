"""Lowering kernel expressions to IR.

Compile-time values fold first (:mod:`pypto.frontend.consteval`). What remains involves
kernel variables and becomes IR: scalar arithmetic nests; op calls are kept flat — a call
used as an argument is bound to a fresh temporary first, so every tile has a name.
"""

from __future__ import annotations

import ast
import builtins
import dataclasses
import enum
from typing import TYPE_CHECKING, Any

from pypto.errors import TypeCheckError, UnknownNameError, UnsupportedSyntaxError
from pypto.frontend import semantic
from pypto.frontend.bounds import difference
from pypto.frontend.consteval import MISSING, NOT_CONST
from pypto.frontend.control import TASK_HINTS, TaskHandle, task_deps, task_hints
from pypto.frontend.spmd import spmd_blocks
from pypto.ir.dtypes import DataType, range_error
from pypto.ir.enums import MemorySpace
from pypto.ir.expr import (
    Call,
    Const,
    Expr,
    FuncCall,
    ListExpr,
    Var,
    as_expr,
    make_unary,
    shaped_type,
    type_of,
)
from pypto.ir.ops import DSL_OPS, OPS, resolve_candidates
from pypto.ir.stmt import Assign
from pypto.ir.types import ArrayType, DynDim, ScalarType, TensorType, TileType, Type, VoidType, format_type
from pypto.language.decorators import InlineFunction, JitFunction, KernelFunction
from pypto.language.markers import ConstMarker, LoopMarker, Marker, NoDepMarker, OpMarker, ScalarFnMarker

if TYPE_CHECKING:
    from pypto.frontend.state import ParserState

_M = MemorySpace
# Where a tile in one space goes to reach another an op reads, move by move: Left/Right are
# filled from Mat only (a Vec tile reaches Mat across the cluster's pipe), and vector work reads
# a product once it is moved out of Acc (FIXPIPE, or the cluster's pipe to an AIV).
ROUTES: dict[tuple[MemorySpace, MemorySpace], tuple[MemorySpace, ...]] = {
    (_M.Vec, _M.Left): (_M.Mat, _M.Left),
    (_M.Vec, _M.Right): (_M.Mat, _M.Right),
    (_M.Mat, _M.Left): (_M.Left,),
    (_M.Mat, _M.Right): (_M.Right,),
    (_M.Acc, _M.Vec): (_M.Vec,),
}

# The transpose flag of each matmul operand, toggled when the operand is a transposed view.
TRANSPOSE_FLAGS = {"lhs": "a_trans", "rhs": "b_trans"}


def _order(space: MemorySpace) -> str:
    return space.value


_SCALAR_OPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%"}
_ARRAY_OPS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div"}
_CMP_OPS = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}
_UNSUPPORTED = {
    ast.Lambda: "`lambda`",
    ast.SetComp: "a set comprehension",
    ast.DictComp: "a dict comprehension",
    ast.GeneratorExp: "a generator expression",
    ast.NamedExpr: "an assignment expression (:=)",
    ast.Await: "`await`",
    ast.Yield: "`yield`",
    ast.YieldFrom: "`yield from`",
    ast.JoinedStr: "an f-string",
    ast.Starred: "`*` unpacking",
    ast.Dict: "a dict",
    ast.Set: "a set",
}


def _is_array(t: Type | None) -> bool:
    return isinstance(t, (TileType, TensorType))


class ExprLowerer:
    """Lowers the expressions of one function; emits temporaries through its parser."""

    def __init__(self, fp: ParserState) -> None:
        self.fp = fp

    def span(self, node: ast.AST):
        return self.fp.src.span(node)

    # --- entry points -------------------------------------------------------------------------
    def rhs(self, node: ast.expr) -> tuple[Expr, Type | None]:
        """The right-hand side of an assignment: a top-level call stays unflattened."""
        if isinstance(node, ast.Call) and self.fp.folder.fold(node) is NOT_CONST:
            return self.valued_call(node)
        e = self.value(node)
        block = self.fp.blocks[-1]
        last = block[-1] if block else None
        if isinstance(last, Assign) and isinstance(e, Var) and last.var is e:
            # Operator sugar (t + u, x[0:32, :]) made a temporary for the value itself: hand the
            # call back so the assignment binds it under the user's name.
            block.pop()
            return last.value, e.type
        return e, type_of(e)

    def value(self, node: ast.expr) -> Expr:
        """Any expression as an IR operand (calls bound to temporaries)."""
        if isinstance(node, ast.Name) and isinstance(self.fp.lookup_local(node.id), TaskHandle):
            return self._Name(node)  # `as tid` of an earlier scope, as a TaskId value
        folded = self.fp.folder.fold(node)
        if isinstance(folded, DynDim):
            return self.dynamic_dim(folded, node)
        if folded is not NOT_CONST:
            return self.const(folded, node)
        kind = type(node)
        if kind in _UNSUPPORTED:
            raise UnsupportedSyntaxError(
                f"{_UNSUPPORTED[kind]} is not supported inside a pypto kernel", self.span(node)
            )
        method = getattr(self, f"_{kind.__name__}", None)
        if method is None:
            raise UnsupportedSyntaxError(
                f"`{ast.unparse(node)}` is not supported inside a pypto kernel", self.span(node)
            )
        return method(node)

    def index(self, node: ast.expr) -> Expr:
        """An integer scalar expression (offsets, loop bounds, slot indices)."""
        e = self.value(node)
        t = type_of(e)
        if not (isinstance(t, ScalarType) and t.dtype.is_integer):
            got = format_type(t) if t is not None else ast.unparse(node)
            raise TypeCheckError(f"expected an integer index expression, got {got}", self.span(node))
        return e

    def const(self, value: Any, node: ast.AST) -> Expr:
        """A folded compile-time value as an IR literal."""
        if isinstance(value, (bool, int, float, str, DataType, enum.Enum)) or value is None:
            return as_expr(value, self.span(node))
        if isinstance(value, (list, tuple)):
            return ListExpr(tuple(self.const(v, node) for v in value), span=self.span(node))
        if isinstance(value, Marker):
            raise TypeCheckError(f"pl.{value.dsl_name} is not a value; call it", self.span(node))
        if isinstance(value, TaskHandle):  # `as tid` of an earlier scope inside a list: its TaskId
            return self.flat_op("a TaskId", "system.task_of", [value.name], {}, node, exact=True)
        raise TypeCheckError(
            f"`{ast.unparse(node)}` ({type(value).__name__}) cannot be used in a kernel", self.span(node)
        )

    # --- names and operators -------------------------------------------------------------------
    def _Name(self, node: ast.Name) -> Expr:
        value = self.fp.lookup_local(node.id)
        if isinstance(value, TaskHandle):  # `as tid` of an earlier scope, used as a value
            return self.flat_op("a TaskId", "system.task_of", [value.name], {}, node, exact=True)
        if isinstance(value, Expr):
            return value if not isinstance(value, Var) else Var(value.name, value.type, span=self.span(node))
        where = self.fp.inner_defs.get(node.id)
        if where is not None:
            raise UnknownNameError(
                f"`{node.id}` is only defined inside {where}; assign it before that block to use it after",
                self.span(node),
            )
        assert value is MISSING
        raise UnknownNameError(
            f"name `{node.id}` is not defined (not a kernel variable, parameter, or module/closure value)",
            self.span(node),
        )

    def _Attribute(self, node: ast.Attribute) -> Expr:
        raise UnsupportedSyntaxError(
            f"attribute `{ast.unparse(node)}` is not supported on a kernel value "
            "(only .shape and .dtype are)",
            self.span(node),
        )

    def _List(self, node: ast.List | ast.Tuple) -> Expr:
        return ListExpr(tuple(self.value(e) for e in node.elts), span=self.span(node))

    _Tuple = _List

    def _ListComp(self, node: ast.ListComp) -> Expr:
        """``[f(i) for i in <compile-time iterable>]``: the list of its run-time values (deps of
        a task over an array, operands of a join)."""
        gen = node.generators[0] if len(node.generators) == 1 else None
        items = self.fp.folder.fold(gen.iter) if gen is not None and not gen.ifs else NOT_CONST
        if gen is None or not isinstance(gen.target, ast.Name) or items is NOT_CONST:
            raise UnsupportedSyntaxError(
                "a list comprehension in a kernel needs one `for name in <compile-time iterable>` "
                "and no `if`",
                self.span(node),
            )
        saved = dict(self.fp.env)
        try:
            out = []
            for v in items:
                self.fp.env[gen.target.id] = v
                out.append(self.value(node.elt))
        finally:
            self.fp.env = saved
        return ListExpr(tuple(out), span=self.span(node))

    def _BinOp(self, node: ast.BinOp) -> Expr:
        lhs, rhs = self.value(node.left), self.value(node.right)
        if _is_array(type_of(lhs)) or _is_array(type_of(rhs)):
            name = _ARRAY_OPS.get(type(node.op))
            if name is None:
                raise UnsupportedSyntaxError(
                    f"operator in `{ast.unparse(node)}` is not defined on tiles", self.span(node)
                )
            if not _is_array(type_of(lhs)) and name in ("add", "mul"):
                lhs, rhs = rhs, lhs  # 2 * t means t * 2: the scalar forms take the scalar second
            return self.flat_op(f"pl.{name}", name, [lhs, rhs], {}, node)
        op = _SCALAR_OPS.get(type(node.op))
        if op is None:
            hint = " (use // for integer division)" if isinstance(node.op, ast.Div) else ""
            raise UnsupportedSyntaxError(
                f"operator in `{ast.unparse(node)}` is not supported on scalars{hint}", self.span(node)
            )
        return semantic.scalar_binop(op, lhs, rhs, self.span(node))

    def _UnaryOp(self, node: ast.UnaryOp) -> Expr:
        operand = self.value(node.operand)
        if isinstance(node.op, ast.UAdd):
            return operand
        if _is_array(type_of(operand)) and isinstance(node.op, ast.USub):
            return self.flat_op("pl.neg", "neg", [operand], {}, node)
        if isinstance(node.op, ast.Invert) or not isinstance(type_of(operand), ScalarType):
            raise UnsupportedSyntaxError(
                f"`{ast.unparse(node)}` is not supported in a kernel", self.span(node)
            )
        return make_unary("-" if isinstance(node.op, ast.USub) else "not", operand, self.span(node))

    def _Compare(self, node: ast.Compare) -> Expr:
        result: Expr | None = None
        left = self.value(node.left)
        for op, comp in zip(node.ops, node.comparators):
            if type(op) not in _CMP_OPS:
                raise UnsupportedSyntaxError(
                    f"comparison in `{ast.unparse(node)}` is not supported", self.span(node)
                )
            right = self.value(comp)
            term = semantic.scalar_binop(_CMP_OPS[type(op)], left, right, self.span(node))
            result = term if result is None else semantic.scalar_binop("and", result, term, self.span(node))
            left = right
        assert result is not None
        return result

    def _BoolOp(self, node: ast.BoolOp) -> Expr:
        op = "and" if isinstance(node.op, ast.And) else "or"
        values = [self.value(v) for v in node.values]
        out = values[0]
        for v in values[1:]:
            out = semantic.scalar_binop(op, out, v, self.span(node))
        return out

    def _Call(self, node: ast.Call) -> Expr:
        e, t = self.valued_call(node)
        return self.bind_temp(e, t, node)

    def valued_call(self, node: ast.Call) -> tuple[Expr, Type | None]:
        """A call whose value is used: a helper that returns nothing is an error here."""
        e, t = self.call(node)
        if e is None:
            raise TypeCheckError(f"`{ast.unparse(node.func)}` returns no value", self.span(node))
        return e, t

    def _Subscript(self, node: ast.Subscript) -> Expr:
        base = self.value(node.value)
        if isinstance(base, Var) and isinstance(base.type, ArrayType):  # a[i] of a pl.array
            return self.flat_op(
                "pl.array.get", "array.get", [base, self.index(node.slice)], {}, node, exact=True
            )
        if not (isinstance(base, Var) and _is_array(base.type)):
            raise UnsupportedSyntaxError(
                f"`{ast.unparse(node)}`: only tiles and tensors can be sliced", self.span(node)
            )
        offsets, shape = self.window(base, node.slice)
        level = "tile" if isinstance(base.type, TileType) else "tensor"
        return self.flat_op("slicing", f"{level}.slice", [base, list(shape), offsets], {}, node, exact=True)

    # --- calls ----------------------------------------------------------------------------------------
    def flat_op(
        self, display: str, name: str, args: list, kwargs: dict, node: ast.AST, exact: bool = False
    ) -> Expr:
        call, t = self.op(display, (name,) if exact else _candidates(name), args, kwargs, node)
        return self.bind_temp(call, t, node)

    def op(self, display: str, candidates: tuple[str, ...], args: list, kwargs: dict, node: ast.AST):
        exprs = [as_expr(a, self.span(node)) for a in args]
        kw = {k: as_expr(v, self.span(node)) for k, v in kwargs.items()}
        window = None
        if candidates == ("tile.store",):
            exprs, window = self.store_window(exprs, kw, node)
            window = window or self.valid_extent(exprs[0])
        exprs, kw = self.placed_operands(candidates, exprs, kw, node)
        return semantic.op_call(candidates, display, exprs, kw, self.fp.ctx, self.span(node), window)

    def placed_operands(
        self, candidates: tuple[str, ...], args: list[Expr], kw: dict[str, Expr], node: ast.AST
    ) -> tuple[list[Expr], dict[str, Expr]]:
        """A tile operand in a memory space its op does not read is moved to one it does, where
        the hardware has a way (ROUTES): a Vec or Mat matmul operand to Left/Right through Mat,
        an Acc product to Vec for vector work; between the cluster's cores each move is a pipe
        (SplitClusterKernels). Upstream infers these moves the same way; they show in the pass
        dumps as ``pl.tile.move`` statements. Without a way the op's typing rule refuses."""
        op = OPS[resolve_candidates(candidates, args, tuple(kw))]
        if not op.name.startswith("tile.") or op.name == "tile.move":
            return args, kw
        names = [p.name for p in op.params]
        args, kw = list(args), dict(kw)
        for name, spaces in op.spaces.items():
            i = names.index(name)
            value = args[i] if i < len(args) else kw.get(name)
            if value is None:
                continue
            if TRANSPOSE_FLAGS.get(name) in names:
                value = self.untransposed(value, (names, TRANSPOSE_FLAGS[name]), args, kw, node)
                if i < len(args):
                    args[i] = value
                else:
                    kw[name] = value
            t = type_of(value)
            if not isinstance(t, TileType) or t.memory is None or t.memory in spaces:
                continue
            ways = [ROUTES[t.memory, s] for s in sorted(spaces, key=_order) if (t.memory, s) in ROUTES]
            for space in ways[0] if ways else ():
                call, mt = semantic.op_call(
                    ("tile.move",), "pl.move", [value, as_expr(space)], {}, self.fp.ctx, self.span(node)
                )
                value = self.bind_temp(call, mt, node)
            if i < len(args):
                args[i] = value
            else:
                kw[name] = value
        return args, kw

    def cast_scalar(self, value: Expr, dtype: DataType, node: ast.AST) -> tuple[Expr, Type | None]:
        """``value`` converted to ``dtype`` (a ``pl.cast``), bound to a fresh name."""
        call, t = self.op("pl.cast", ("scalar.cast",), [value, dtype], {}, node)
        return self.bind_temp(call, t, node), t

    def untransposed(
        self, value: Expr, param: tuple[list[str], str], args: list, kw: dict, node: ast.AST
    ) -> Expr:
        """``pl.tile.transpose_view(m)`` as a matmul operand: ``m`` itself, with the operand's
        transpose flag (``a_trans`` / ``b_trans``) toggled, in ``args`` / ``kw`` in place; the
        view moved to Left / Right: ``m`` moved there instead. The view has no bytes of its own
        (:func:`pypto.frontend.transpose_views.drop_transpose_views` removes it, and a move of it,
        once nothing else reads them)."""
        source = self.defining_call(value, "tile.transpose_view")
        moved = self.defining_call(value, "tile.move") if source is None else None
        view = self.defining_call(moved.arg("tile"), "tile.transpose_view") if moved is not None else None
        if source is None and view is None:
            return value
        names, flag = param
        i = names.index(flag)
        given = args[i] if i < len(args) else kw.get(flag, as_expr(False))
        if not isinstance(given, Const):
            return value  # a run-time flag cannot be toggled here: the view stays, and is refused
        toggled = as_expr(not given.value, given.span)
        if i < len(args):
            args[i] = toggled
        else:
            kw[flag] = toggled
        if view is not None and moved is not None:  # the view moved to L0: move the tile itself
            call, t = semantic.op_call(
                ("tile.move",), "pl.move", [view.arg("tile"), moved.arg("target_memory")], {},
                self.fp.ctx, self.span(node),
            )  # fmt: skip
            var = Var(self.fp.names.fresh(getattr(value, "name", "moved")), t, span=self.span(node))
            self.fp.emit(Assign(var, call, span=self.span(node)))
            return var
        assert source is not None
        return source.arg("tile")

    def defining_call(self, value: Expr, op: str) -> Call | None:
        """The ``op`` call that defined ``value`` in an open block, if that is what defined it."""
        if not isinstance(value, Var):
            return None
        for block in reversed(self.fp.blocks):
            for s in reversed(block):
                if isinstance(s, Assign) and s.var.name == value.name:  # names are unique
                    return s.value if isinstance(s.value, Call) and s.value.op == op else None
        return None

    def store_window(
        self, args: list[Expr], kw: dict[str, Expr], node: ast.AST
    ) -> tuple[list[Expr], list[int | None] | None]:
        """``pl.store(t, offsets, out, shapes=[r, c])`` writes the [r, c] window of ``t``:
        its valid region made [r, c] (``pl.set_validshape``), then stored as usual."""
        shapes = args[3] if len(args) > 3 else kw.pop("shapes", None)
        if shapes is None:
            return args, None
        span, tile = self.span(node), args[0]
        tt = type_of(tile)
        items = getattr(shapes, "items", None)
        if not isinstance(tt, TileType) or items is None or len(items) != len(tt.shape):
            raise TypeCheckError(
                f"shapes= is the window the store writes, one size per axis of the tile; got "
                f"{ast.unparse(node)}",
                span,
            )
        if len(items) != 2:
            if any(not (isinstance(i, Const) and i.value == n) for i, n in zip(items, tt.shape)):
                raise TypeCheckError(
                    f"shapes= of a rank-{len(items)} tile must be its shape {list(tt.shape)}", span
                )
            return args[:3], None
        call, t = semantic.op_call(
            ("tile.set_validshape",), "pl.store(shapes=)", [tile, *items], {}, self.fp.ctx, span
        )
        window = [int(i.value) if isinstance(i, Const) else None for i in items]
        return [self.bind_temp(call, t, node), *args[1:3]], window

    def valid_extent(self, tile: Expr) -> list[int | None] | None:
        """The valid shape ``pl.set_validshape(t, r, c)`` or ``pl.load(..., valid_shape=)`` gave
        ``tile`` in an open block, where compile-time: the part a store writes (the run time
        checks it again)."""
        if not isinstance(tile, Var):
            return None
        for block in reversed(self.fp.blocks):
            for s in reversed(block):
                if not (isinstance(s, Assign) and s.var.name == tile.name):  # names are unique
                    continue
                c = s.value
                if isinstance(c, Call) and c.op == "tile.set_validshape":
                    rows, cols = c.arg("valid_rows"), c.arg("valid_cols")
                    if isinstance(rows, Const) and isinstance(cols, Const):
                        return [int(rows.value), int(cols.value)]
                valid = c.arg("valid_shape") if isinstance(c, Call) and c.op == "tile.load" else None
                if isinstance(valid, ListExpr):
                    # pl.load(..., valid_shape=[r, 4]): a run-time extent (r) is checked at run time
                    return [int(i.value) if isinstance(i, Const) else None for i in valid.items]
                return None
        return None

    def bind_temp(self, e: Expr, t: Type | None, node: ast.AST) -> Expr:
        """Bind a call's result to a fresh name so that operands stay flat."""
        if not isinstance(e, (Call, FuncCall)):
            return e
        if t is None or isinstance(t, VoidType):
            raise TypeCheckError(f"`{ast.unparse(node)}` produces no value", self.span(node))
        base = e.op.split(".")[-1] if isinstance(e, Call) else e.callee
        var = Var(self.fp.names.fresh(base), t, span=self.span(node))
        self.fp.emit(Assign(var, e, span=self.span(node)))
        return var

    def call(self, node: ast.Call) -> tuple[Expr | None, Type | None]:
        """An unflattened call: an op ``Call`` or a kernel ``FuncCall``, with its type."""
        if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
            raise UnsupportedSyntaxError(
                "`*args` / `**kwargs` in a kernel call are not supported", self.span(node)
            )
        func = node.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self":
            args, no_dep = self.kernel_args(node)
            call, t = self.fp.program.call_method(self.fp, func.attr, args, node)
            call = self.task_keywords(call, node)
            return dataclasses.replace(call, no_dep=(*call.no_dep, *no_dep)), t
        fn = self.fp.folder.fold(func)
        if isinstance(fn, InlineFunction):
            return self.fp.inline_call(fn, node)
        if (fn in (builtins.min, builtins.max) or isinstance(fn, ScalarFnMarker)) and len(node.args) >= 2:
            if node.keywords:
                raise UnsupportedSyntaxError(
                    f"{ast.unparse(node.func)}(...) takes values only", self.span(node)
                )
            out = self.value(node.args[0])  # min/max of run-time scalars (tail sizes)
            for a in node.args[1:]:
                out = semantic.scalar_binop(fn.__name__, out, self.value(a), self.span(node))
            return out, type_of(out)
        if isinstance(fn, ConstMarker):
            c = self.typed_const(node)
            return c, c.type
        if isinstance(fn, OpMarker):
            args = [self.value(a) for a in node.args]
            kwargs = {k.arg: self.value(k.value) for k in node.keywords}
            return self.op(f"pl.{fn.dsl_name}", fn.candidates, args, kwargs, node)
        if isinstance(fn, (JitFunction, KernelFunction)):
            if node.keywords:
                raise UnsupportedSyntaxError("call kernels with positional arguments", self.span(node))
            args, no_dep = self.kernel_args(node)
            kcall, kt = self.fp.program.call_kernel(self.fp, fn, args, node)
            return dataclasses.replace(kcall, no_dep=no_dep), kt
        raise self.bad_call(node, fn)

    def dynamic_dim(self, dim: DynDim, node: ast.AST) -> Expr:
        """``M`` of ``pl.dynamic("M")`` in a body: the size of a parameter declared with it."""
        where = [
            (p.var, a)
            for p in self.fp.params
            for a, d in enumerate(getattr(p.var.type, "shape", ()))
            if d == dim
        ]
        if not where:
            raise TypeCheckError(
                f"dynamic dim {dim.name} sizes no tensor parameter of this kernel", self.span(node)
            )
        var, axis = where[0]
        return self.flat_op("pl.tensor.dim", "tensor.dim", [var, axis], {}, node, exact=True)

    def typed_const(self, node: ast.Call) -> Const:
        """``pl.const(value, dtype)``: the value converted exactly to ``dtype`` (else an error)."""
        args = dict(zip(("value", "dtype"), node.args)) | {k.arg: k.value for k in node.keywords}
        if set(args) != {"value", "dtype"} or len(node.args) > 2:
            raise TypeCheckError("write pl.const(value, dtype)", self.span(node))
        value, dtype = (self.fp.folder.fold(args[k]) for k in ("value", "dtype"))
        if not isinstance(dtype, DataType) or dtype.kind == "bool" and not isinstance(value, bool):
            raise TypeCheckError(f"pl.const dtype must be a numeric pl dtype, got {dtype!r}", self.span(node))
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeCheckError(
                f"pl.const needs a compile-time number, got `{ast.unparse(args['value'])}`", self.span(node)
            )
        problem = range_error(value, dtype)
        if problem is not None:
            raise TypeCheckError(f"pl.const: {problem}", self.span(node))
        if dtype.is_float:
            return Const(float(value), dtype, span=self.span(node))
        return Const(int(value), dtype, span=self.span(node))

    def kernel_args(self, node: ast.Call) -> tuple[list[Expr], tuple[Var, ...]]:
        """A kernel call's arguments, and the tensors among them wrapped in ``pl.no_dep(t)``
        (upstream's call-site form of ``no_dep_args=[t]``)."""
        args, no_dep = [], []
        for a in node.args:
            marked = isinstance(a, ast.Call) and isinstance(self.fp.folder.fold(a.func), NoDepMarker)
            if not marked:
                args.append(self.value(a))
                continue
            assert isinstance(a, ast.Call)
            v = self.value(a.args[0]) if len(a.args) == 1 and not a.keywords else None
            if not (isinstance(v, Var) and isinstance(v.type, TensorType)):
                raise TypeCheckError(f"pl.no_dep takes one tensor, got `{ast.unparse(a)}`", self.span(a))
            args.append(v)
            no_dep.append(v)
        return args, tuple(no_dep)

    def task_keywords(self, call: FuncCall, node: ast.Call) -> FuncCall:
        """``self.k(..., handle="h", deps=[g], blocks=n)``: an outlined scope's name, deps and
        pl.spmd block count (pass dumps)."""
        kw = {k.arg: k.value for k in node.keywords if k.arg is not None}
        if set(kw) - {"handle", "deps", "blocks", "sync_start", *TASK_HINTS}:
            raise UnsupportedSyntaxError(
                "call kernels with positional arguments (and handle=, deps=, blocks=, allow_early_resolve=, "
                "no_dep_args=, sync_start= only)",
                self.span(node),
            )
        if "blocks" in kw:
            call = dataclasses.replace(call, blocks=spmd_blocks(self.fp, kw["blocks"]))
        handle = self.fp.folder.fold(kw["handle"]) if "handle" in kw else None
        if handle is not None and not (isinstance(handle, str) and handle.isidentifier()):
            raise TypeCheckError("handle= must name the task with an identifier string", self.span(node))
        deps, values = task_deps(self.fp, kw.get("deps"))
        if handle is not None:
            self.fp.handles.add(handle)
        hints = task_hints(self.fp, kw)._replace(dep_values=values)
        return dataclasses.replace(call, handle=handle, deps=tuple(deps), **hints._asdict())

    def bad_call(self, node: ast.Call, fn: Any) -> UnsupportedSyntaxError:
        text = ast.unparse(node.func)
        if isinstance(fn, LoopMarker):
            msg = f"pl.{fn.dsl_name}(...) can only be the iterable of a `for` loop"
        elif isinstance(fn, Marker):
            where = "a `with` statement" if fn.dsl_name == "at" else "`x = pl.yield_(...)` ending a loop body"
            msg = f"pl.{fn.dsl_name}(...) can only be used in {where}"
        elif fn is builtins.range:
            msg = "`range` is not a kernel loop: use pl.range(...) (or pl.unroll for a compile-time loop)"
        elif fn is NOT_CONST:
            msg = f"cannot call `{text}`: it is not a pl op or a kernel function"
        else:
            msg = (
                f"calling `{text}` inside a kernel is not supported; only pl ops and "
                "@pl.jit.incore / @pl.function kernels can be called"
            )
        return UnsupportedSyntaxError(msg, self.span(node))

    # --- slicing ------------------------------------------------------------------------------------
    def window(self, base: Var, index: ast.expr) -> tuple[ListExpr, tuple[int | DynDim, ...]]:
        """Offsets and static extents of ``base[r0:r1, c0:c1]``."""
        shape = shaped_type(base).shape
        dims = index.elts if isinstance(index, ast.Tuple) else [index]
        if len(dims) > len(shape):
            raise TypeCheckError(f"{len(dims)} indices for a rank-{len(shape)} value", self.span(index))
        offsets: list[Expr] = []
        sizes: list[int | DynDim] = []  # a pl.dynamic dim taken whole stays one
        for d, size in enumerate(shape):
            lo, n = self._dim(dims[d], size) if d < len(dims) else (Const(0), size)
            offsets.append(lo)
            sizes.append(n)
        return ListExpr(tuple(offsets), span=self.span(index)), tuple(sizes)

    def _dim(self, node: ast.expr, size: int | DynDim) -> tuple[Expr, int]:
        if not isinstance(node, ast.Slice):
            raise UnsupportedSyntaxError(
                "index tiles and tensors with slices, e.g. x[r0:r1, :] (integer indexing is not supported)",
                self.span(node),
            )
        if node.step is not None and self.fp.folder.fold(node.step) != 1:
            raise UnsupportedSyntaxError("strided slices are not supported", self.span(node))
        lo = self.index(node.lower) if node.lower is not None else Const(0)
        if node.upper is not None:
            hi = self.index(node.upper)
        elif isinstance(size, int):
            hi = Const(size)
        else:
            raise TypeCheckError(
                f"slice `{ast.unparse(node)}` of a pl.dynamic dim ({size}) needs an explicit end of "
                "compile-time distance from its start (e.g. x[r : r + 64])",
                self.span(node),
            )
        n = difference(hi, lo, self.fp.scalar_defs)
        if n is None:
            raise TypeCheckError(
                f"slice `{ast.unparse(node)}` must have a compile-time length", self.span(node)
            )
        if n <= 0 or (isinstance(size, int) and n > size):  # a pl.dynamic dim: checked at run time
            raise TypeCheckError(
                f"slice `{ast.unparse(node)}` has length {n}, outside 1..{size}", self.span(node)
            )
        return lo, n


def _candidates(name: str) -> tuple[str, ...]:
    return DSL_OPS[name]
