"""Parsing one kernel function: its signature and its body statements.

Python names map to SSA IR variables: the first binding of ``x`` is ``x``; rebinding makes
``x_1``, ``x_2`` ... (never colliding with any identifier of the function). Unannotated
bindings of compile-time values stay Python constants and fold into their uses.
Control flow (loops, branches, ``pl.at``) lives in :mod:`pypto.frontend.control`.
"""

from __future__ import annotations

import ast
import dataclasses
from typing import TYPE_CHECKING, Any

from pypto.errors import TypeCheckError, UnsupportedSyntaxError
from pypto.frontend import semantic
from pypto.frontend.annotations import AnnotationReader
from pypto.frontend.bind_dynamic import bind_dynamic, is_bind_dynamic
from pypto.frontend.bounds import polynomial
from pypto.frontend.consteval import MISSING, NOT_CONST, Folder
from pypto.frontend.control import ControlFlow
from pypto.frontend.dead_carries import drop_dead_carries
from pypto.frontend.exprs import ExprLowerer
from pypto.frontend.inline import InlineCalls
from pypto.frontend.names import ParamBinding, identifiers
from pypto.frontend.source import KernelSource
from pypto.frontend.split_aiv import SplitAivRegions
from pypto.frontend.spmd import SpmdScopes
from pypto.frontend.static_checks import static_assert
from pypto.frontend.transpose_views import drop_transpose_views
from pypto.frontend.unpack import unpack, unpacked_for_effect
from pypto.frontend.while_loop import WhileLoop
from pypto.ir.enums import Direction, FunctionType
from pypto.ir.expr import Call, Const, Expr, FuncCall, ListExpr, Var, as_expr, type_of, value_type
from pypto.ir.names import NameSupply
from pypto.ir.stmt import Assign, Eval, Function, Param, Return, Stmt
from pypto.ir.types import (
    ArrayType,
    ScalarType,
    TensorType,
    TileType,
    Type,
    VoidType,
    format_type,
    same_shape_dtype,
)
from pypto.language.markers import OpMarker, ScopeMarker, StaticAssertMarker, WhileMarker

if TYPE_CHECKING:
    from pypto.frontend.parser import ProgramContext

_STATEMENT_NAMES = {
    ast.While: ("`while` loops", "; use a counted loop such as pl.range(n)"),
    ast.Try: ("`try`", ""),
    ast.Raise: ("`raise`", ""),
    ast.Assert: ("`assert`", ""),
    ast.Delete: ("`del`", ""),
    ast.Global: ("`global`", ""),
    ast.Nonlocal: ("`nonlocal`", ""),
    ast.Import: ("`import`", "; import at module level"),
    ast.ImportFrom: ("`import`", "; import at module level"),
    ast.FunctionDef: ("nested function definitions", ""),
    ast.AsyncFunctionDef: ("nested function definitions", ""),
    ast.ClassDef: ("class definitions", ""),
    ast.Break: ("`break`", " (loops run their full trip count)"),
    ast.Continue: ("`continue`", ""),
    ast.AsyncFor: ("`async for`", ""),
    ast.AsyncWith: ("`async with`", ""),
    ast.Match: ("`match`", ""),
}
if hasattr(ast, "TryStar"):
    _STATEMENT_NAMES[ast.TryStar] = ("`try`", "")


class FunctionParser:
    """Parses one ``ast.FunctionDef`` into an IR ``Function``.

    It owns the state the parts share (:class:`~pypto.frontend.state.ParserState`) and the
    statement dispatch; expressions, loops and branches, ``pl.while_``, ``pl.spmd`` and
    inline helpers are handled by parts holding a reference to it."""

    def __init__(
        self, src: KernelSource, node: ast.FunctionDef, kind: FunctionType, program: ProgramContext
    ) -> None:
        self.src, self.node, self.kind, self.program = src, node, kind, program
        self.env: dict[str, Any] = {}
        self.names = NameSupply(reserved=identifiers(node))
        self.blocks: list[list[Stmt]] = []
        self.ctx = semantic.Context(kind)
        self.folder = Folder(src, self.lookup_local)
        self.exprs = ExprLowerer(self)
        self.annotations = AnnotationReader(self.folder, self.exprs.index)
        self.inner_defs: dict[str, str] = {}
        # each tensor version a store or window assignment made -> the tensor it wrote into
        # (followed back to the first one): the same GM buffer
        self.written: dict[str, Var] = {}
        self.scalar_defs: dict[str, Expr] = {}
        self.handles: set[str] = set()
        self.params: list[Param] = []
        self.out_names: set[str] = set()
        self.declared_returns: tuple[Type, ...] | None = None
        self.flow = ControlFlow(self)
        self.whiles = WhileLoop(self)
        self.spmd = SpmdScopes(self)
        self.split_aiv = SplitAivRegions(self)
        self.inliner = InlineCalls(self)

    # --- environment -----------------------------------------------------------------------------
    def lookup_local(self, name: str) -> Any:
        return self.env.get(name, MISSING)

    def emit(self, s: Stmt) -> None:
        self.blocks[-1].append(s)

    def written_result(self, call: FuncCall, declared: TensorType) -> tuple[FuncCall, Type | None]:
        """``c_1: pl.Tensor[...] = self.kernel(..., c)`` (an outlined scope in a pass dump): the
        call names the tensor it writes, so it takes that tensor's type."""
        params, _ = self.program.signatures.get(call.callee, ([], ()))
        writes = [
            a
            for p, a in zip(params, call.args)
            if p.direction is not Direction.In and same_shape_dtype(type_of(a), declared)
        ]
        return (dataclasses.replace(call, type=declared), declared) if writes else (call, None)

    def span(self, node: ast.AST | None):
        return self.src.span(node)

    def fail_unsupported(self, node: ast.AST, what: str, hint: str = "") -> UnsupportedSyntaxError:
        return UnsupportedSyntaxError(f"{what} not supported inside a pypto kernel{hint}", self.span(node))

    # --- signature ----------------------------------------------------------------------------------
    def param_nodes(self) -> list[ast.arg]:
        a = self.node.args
        if a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs:
            raise self.fail_unsupported(self.node, "`*args`, `**kwargs` and keyword-only parameters are")
        if a.defaults:
            raise self.fail_unsupported(a.defaults[0], "parameter defaults are")
        args = list(a.args)
        if args and args[0].arg == "self":
            args = args[1:]
        return args

    def bind_params(self, bindings: list[ParamBinding]) -> None:
        """Define the parameters; a specialised scalar folds as its value."""
        for b in bindings:
            var = Var(self.names.claim(b.name), b.type, span=b.span)
            self.params.append(Param(var, b.direction, span=b.span))
            self.env[b.name] = var if b.value is MISSING else b.value
            if b.direction is not Direction.In:
                self.out_names.add(b.name)

    def declared_params(self) -> list[ParamBinding]:
        """Parameters from full annotations (``@pl.program`` functions, external kernels)."""
        out = []
        for arg in self.param_nodes():
            if arg.annotation is None:
                raise TypeCheckError(f"parameter `{arg.arg}` needs a type annotation", self.span(arg))
            t, direction = self.annotations.read(arg.annotation)
            if t is None:
                raise TypeCheckError(
                    f"parameter `{arg.arg}` needs a full type (shape and dtype) here", self.span(arg)
                )
            out.append(ParamBinding(arg.arg, t, direction, span=self.span(arg)))
        return out

    def read_returns(self) -> None:
        """The ``-> ...`` annotation, when present (``None`` means no results)."""
        node = self.node.returns
        if node is None:
            return
        if isinstance(node, ast.Constant) and node.value is None:
            self.declared_returns = ()
            return
        items = [node]
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == "tuple":
            items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        types = []
        for item in items:
            t, _ = self.annotations.read(item)
            if t is None:
                raise TypeCheckError("return annotations need a full type", self.span(item))
            types.append(t)
        self.declared_returns = tuple(types)

    # --- body ---------------------------------------------------------------------------------------------
    def function(
        self, name: str, external_source: str | None = None, include_dirs: tuple[str, ...] = ()
    ) -> Function:
        """Parse the body (parameters already bound) and build the ``Function``."""
        body = self.node.body
        if body and _is_docstring(body[0]):
            body = body[1:]
        if external_source is not None:
            if not (len(body) == 1 and _is_ellipsis(body[0])):
                raise UnsupportedSyntaxError(
                    "a function with external_source has only `...` as its body", self.span(self.node)
                )
            stmts: list[Stmt] = []
        else:
            stmts = self.block(body, top=True)
        returns = (
            tuple(value_type(v) for v in stmts[-1].values)  # return_ checked each has a type
            if stmts and isinstance(stmts[-1], Return)
            else ()
        )
        declared = self.declared_returns
        if declared is not None and external_source is None and returns != declared:
            raise TypeCheckError(
                f"`{name}` is annotated to return {[format_type(t) for t in declared]} but returns "
                f"{[format_type(t) for t in returns]}",
                self.span(self.node),
            )
        if external_source is not None:
            returns = self.declared_returns or ()
        fn = Function(
            name,
            tuple(self.params),
            self.kind,
            tuple(stmts),
            returns,
            external_source,
            include_dirs,
            span=self.span(self.node),
        )
        fn = drop_transpose_views(fn)
        return drop_dead_carries(fn) if self.kind is FunctionType.Orchestration else fn

    def block(self, body: list[ast.stmt], top: bool = False) -> list[Stmt]:
        """Parse statements into a new statement list (the environment is shared)."""
        out: list[Stmt] = []
        self.blocks.append(out)
        try:
            for i, node in enumerate(body):
                if isinstance(node, ast.Return):
                    if not (top and i == len(body) - 1):
                        raise UnsupportedSyntaxError(
                            "`return` must be the last statement of the kernel", self.span(node)
                        )
                    self.return_(node)
                else:
                    self.stmt(node)
        finally:
            self.blocks.pop()
        return out

    def stmt(self, node: ast.stmt) -> None:
        if isinstance(node, ast.Assign):
            self.assign(node)
        elif isinstance(node, ast.AnnAssign):
            self.ann_assign(node)
        elif isinstance(node, ast.AugAssign):
            self.aug_assign(node)
        elif isinstance(node, ast.Expr):
            self.expr_stmt(node)
        elif isinstance(node, ast.For):
            self.for_(node)
        elif isinstance(node, ast.If):
            self.flow.if_(node)
        elif isinstance(node, ast.With):
            self.with_(node)
        elif isinstance(node, ast.Pass):
            pass
        elif isinstance(node, ast.Return):
            raise UnsupportedSyntaxError("`return` must be the last statement of the kernel", self.span(node))
        else:
            what, hint = _STATEMENT_NAMES.get(type(node), (f"`{type(node).__name__}`", ""))
            raise self.fail_unsupported(node, f"{what} {'are' if what.endswith('s') else 'is'}", hint)

    def for_(self, node: ast.For) -> None:
        marker = self.folder.fold(node.iter.func) if isinstance(node.iter, ast.Call) else None
        if isinstance(marker, WhileMarker):
            self.whiles.while_(node)
        elif getattr(marker, "dsl_name", None) == "spmd":
            self.spmd.spmd_for(node)
        elif getattr(marker, "dsl_name", None) == "split_aiv":
            self.split_aiv.region(node)
        else:
            self.flow.for_(node)

    def with_(self, node: ast.With) -> None:
        call = node.items[0].context_expr
        marker = self.folder.fold(call.func) if isinstance(call, ast.Call) else None
        if len(node.items) == 1 and isinstance(marker, ScopeMarker) and marker.dsl_name == "spmd":
            self.spmd.spmd_with(node)
        else:
            self.flow.with_(node)

    def inline_call(self, helper: Any, node: ast.Call) -> tuple[Expr | None, Type | None]:
        return self.inliner.inline_call(helper, node)

    def expr_stmt(self, node: ast.Expr) -> None:
        if _is_docstring(node) or _is_ellipsis(node):
            return
        if self.flow.is_yield(node.value):
            raise UnsupportedSyntaxError(
                "write `name = pl.yield_(...)` as the last statement of the loop body", self.span(node)
            )
        if not isinstance(node.value, ast.Call):
            raise UnsupportedSyntaxError(f"expression `{ast.unparse(node)}` has no effect", self.span(node))
        if isinstance(self.folder.fold(node.value.func), StaticAssertMarker):
            static_assert(self, node.value)
            return
        if is_bind_dynamic(node.value):
            bind_dynamic(self, node.value)
            return
        if unpacked_for_effect(self, node.value):
            return
        e, _ = self.exprs.call(node.value)
        # An inline helper has emitted its statements already: its value, if any, is unused.
        if isinstance(e, (Call, FuncCall)):
            self.emit(Eval(e, span=self.span(node)))

    def return_(self, node: ast.Return) -> None:
        items = (
            []
            if node.value is None
            else (node.value.elts if isinstance(node.value, ast.Tuple) else [node.value])
        )
        values = tuple(self.exprs.value(v) for v in items)
        if len(values) == 1 and isinstance(values[0], ListExpr):  # `return helper(...)`: all it returns
            values = tuple(values[0].items)
            items = items * len(values)
        for v, item in zip(values, items):
            if type_of(v) is None:
                raise TypeCheckError(f"cannot return `{ast.unparse(item)}`", self.span(item))
        self.emit(Return(values, span=self.span(node)))

    # --- assignments -----------------------------------------------------------------------------------
    def assign(self, node: ast.Assign) -> None:
        if len(node.targets) != 1:
            raise UnsupportedSyntaxError("chained assignment (a = b = ...) is not supported", self.span(node))
        target = node.targets[0]
        if self.flow.is_yield(node.value):
            raise UnsupportedSyntaxError(
                "pl.yield_ must be the last statement of a loop (with init_values) or of an if branch",
                self.span(node),
            )
        if isinstance(target, ast.Name):
            self.bind(target, node.value, None, annotated=False, stmt=node)
        elif isinstance(target, (ast.Tuple, ast.List)):
            unpack(self, target, node.value)
        elif isinstance(target, ast.Subscript):
            self.store_window(target, node.value, node)
        else:
            raise UnsupportedSyntaxError(f"cannot assign to `{ast.unparse(target)}`", self.span(target))

    def ann_assign(self, node: ast.AnnAssign) -> None:
        if not isinstance(node.target, ast.Name) or node.value is None:
            raise UnsupportedSyntaxError("annotated assignments need a name and a value", self.span(node))
        declared, _ = self.annotations.read(node.annotation)
        self.bind(node.target, node.value, declared, annotated=True, stmt=node)

    def aug_assign(self, node: ast.AugAssign) -> None:
        if not isinstance(node.target, ast.Name):
            raise UnsupportedSyntaxError("augmented assignment needs a plain name", self.span(node))
        load = ast.copy_location(ast.Name(node.target.id, ast.Load()), node.target)
        value = ast.copy_location(ast.BinOp(load, node.op, node.value), node)
        self.bind(node.target, value, None, annotated=False, stmt=node)

    def bind(
        self, target: ast.Name, value: ast.expr, declared: Type | None, annotated: bool, stmt: ast.stmt
    ) -> None:
        """``name = value`` (maybe annotated): a constant, an alias, or an IR assignment."""
        name, span = target.id, self.span(target)
        folded = self.folder.fold(value)
        if folded is not NOT_CONST and not annotated:
            self.env[name] = folded
            return
        rhs, t = self.exprs.rhs(value)
        if isinstance(rhs, ListExpr) and not annotated:
            self.env[name] = rhs  # an offset list: substituted where used
            return
        if isinstance(rhs, Var) and not annotated:
            self.env[name] = rhs  # Python aliasing: both names denote one value
            return
        if isinstance(rhs, Const) and isinstance(declared, ScalarType):
            rhs = semantic.coerce_literal(rhs, declared.dtype, span)
            t = rhs.type
        if isinstance(rhs, FuncCall) and isinstance(t, VoidType) and isinstance(declared, TensorType):
            rhs, t = self.written_result(rhs, declared)
        if t is None:
            raise TypeCheckError(f"`{ast.unparse(value)}` cannot be assigned to a kernel variable", span)
        if (
            isinstance(declared, ScalarType)
            and isinstance(t, ScalarType)
            and semantic.widens(t.dtype, declared.dtype)
        ):
            rhs, t = self.exprs.cast_scalar(rhs, declared.dtype, value)  # `n: pl.Scalar[pl.INT64] = <INDEX>`
            assert t is not None
        final = semantic.merge_annotation(name, declared, t, span)
        semantic.check_slot_index(final, self.ctx.ranges, span)
        current = self.env.get(name)
        if name in self.out_names and isinstance(current, Var) and isinstance(rhs, (Call, FuncCall)):
            semantic.warn_out_rebind(name, current, rhs, span)
        var = Var(self.names.claim(name), final, span=span)
        self.emit(Assign(var, rhs, span=self.span(stmt)))
        self.env[name] = var
        wrote = semantic.written_tensor(rhs)
        if wrote is None and isinstance(rhs, FuncCall):
            wrote = self.program.written_arg(rhs)
        if wrote is not None:
            self.written[var.name] = self.written.get(wrote.name, wrote)
        if isinstance(final, ScalarType) and final.dtype.is_integer and polynomial(rhs) is not None:
            self.scalar_defs[var.name] = rhs  # one assignment per IR name: slice lengths may fold

    def store_window(self, target: ast.Subscript, value: ast.expr, stmt: ast.stmt) -> None:
        """``dst[r0:r1, :] = src`` → ``dst = assemble(dst, src, [r0, 0])`` (``out[:] = x`` too)."""
        if not isinstance(target.value, ast.Name):
            raise UnsupportedSyntaxError("assign into a slice of a named tile or tensor", self.span(target))
        base = self.exprs.value(target.value)
        if isinstance(base, Var) and isinstance(base.type, ArrayType):  # a[i] = v of a pl.array
            index, item = self.exprs.index(target.slice), self.exprs.value(value)
            call, t = self.exprs.op("pl.array.set", ("array.set",), [base, index, item], {}, stmt)
            var = Var(self.names.claim(target.value.id), t, span=self.span(target))
            self.emit(Assign(var, call, span=self.span(stmt)))
            self.env[target.value.id] = var
            return
        if not isinstance(base, Var) or not isinstance(base.type, (TensorType, TileType)):
            raise TypeCheckError(f"`{target.value.id}` is not a tile or tensor", self.span(target))
        offsets, shape = self.exprs.window(base, target.slice)
        src = self.exprs.value(_valid_part(self.folder.fold, value, shape))
        src_t = type_of(src)
        if getattr(src_t, "shape", None) != shape:
            got = format_type(src_t) if src_t is not None else ast.unparse(value)
            raise TypeCheckError(
                f"cannot store {got} into `{ast.unparse(target)}` of shape {list(shape)}", self.span(stmt)
            )
        level = "tensor" if isinstance(base.type, TensorType) else "tile"
        call, t = self.exprs.op(
            f"`{ast.unparse(target)} = ...`", (f"{level}.assemble",), [base, src, offsets], {}, stmt
        )
        var = Var(self.names.claim(target.value.id), t, span=self.span(target))
        self.emit(Assign(var, call, span=self.span(stmt)))
        self.env[target.value.id] = var

    def value_of(self, name: str, node: ast.AST, env: dict[str, Any] | None = None) -> Expr:
        """The value of a Python name (now, or in ``env``) as an IR expression."""
        v = (self.env if env is None else env).get(name, MISSING)
        if isinstance(v, Expr):
            return v
        if isinstance(v, (bool, int, float)):
            return as_expr(v, self.span(node))
        raise TypeCheckError(
            f"`{name}` holds a compile-time value ({v!r}) that cannot flow through a runtime loop or branch",
            self.span(node),
        )


def _valid_part(fold: Any, value: ast.expr, shape: Any) -> ast.expr:
    """``y[w] = pl.slice(x, s, o, valid_shape=v)`` with ``v`` the window's shape stores the
    slice's valid part, which is the window ``pl.slice(x, v, o)``: that call, else ``value``."""
    if not isinstance(value, ast.Call) or not isinstance(fold(value.func), OpMarker):
        return value
    if not {"tensor.slice", "tile.slice"} & set(fold(value.func).candidates):
        return value
    valid = next((k.value for k in value.keywords if k.arg == "valid_shape"), None)
    if valid is None:
        return value
    folded = fold(valid)
    if not isinstance(folded, (list, tuple)) or list(folded) != list(shape):
        return value
    args = list(value.args)
    keywords = [k for k in value.keywords if k.arg not in ("valid_shape", "shape")]
    if len(args) >= 2:
        args[1] = valid
    else:
        keywords.append(ast.keyword(arg="shape", value=valid))
    return ast.copy_location(ast.Call(func=value.func, args=args, keywords=keywords), value)


def _is_docstring(node: ast.stmt) -> bool:
    return (
        isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    )


def _is_ellipsis(node: ast.stmt) -> bool:
    return (
        isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and node.value.value is Ellipsis
    )
