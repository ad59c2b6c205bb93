"""Frontend entry points: ``@pl.jit`` kernels, ``@pl.program`` classes, and program text.

* :func:`parse_jit` — a ``@pl.jit`` function specialised on call arguments; callees
  (``@pl.jit.incore`` kernels, ``@pl.function`` kernels with ``external_source``) are
  parsed as they are called and added to the program after the entry function.
* :func:`parse_class`, :func:`parse_text`, :func:`parse_file` — the ``@pl.program`` form
  the printer writes. Signatures are read first so methods may call each other
  (``self.kernel(...)``) in any order.

Every result is checked by :func:`pypto.ir.verify` before it is returned.
"""

from __future__ import annotations

import ast
import dataclasses
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pypto.language as pl_module
from pypto.errors import (
    ArgumentMismatchError,
    CompileError,
    MisplacedOpError,
    TypeCheckError,
    UnknownNameError,
    UnsupportedSyntaxError,
)
from pypto.frontend.consteval import MISSING, NOT_CONST, Folder
from pypto.frontend.function import FunctionParser, ParamBinding
from pypto.frontend.input_writes import check_input_writes
from pypto.frontend.pipeline_attrs import NOT_IN_KERNELS, pipeline_groups
from pypto.frontend.semantic import widens
from pypto.frontend.source import KernelSource
from pypto.frontend.specialize import bind_arguments, is_array, scalar_arg, tensor_arg
from pypto.frontend.state import ParserState
from pypto.ir.aliases import tensor_aliases, written_arguments
from pypto.ir.dtypes import BOOL, DataType
from pypto.ir.enums import Direction, FunctionType
from pypto.ir.expr import Const, Expr, FuncCall, Var, type_of, value_type
from pypto.ir.names import NameSupply
from pypto.ir.stmt import Function, Param, PipelineGroup, Program, Return
from pypto.ir.types import (
    DynDim,
    ScalarType,
    TensorType,
    TileType,
    Type,
    VoidType,
    format_type,
    passes_as,
)
from pypto.ir.verify import verify
from pypto.language import annotations as ann
from pypto.language.decorators import JitFunction, KernelFunction


def _returned_values(callee: Function) -> tuple[Expr, ...]:
    ret = callee.body[-1] if callee.body else None
    return ret.values if isinstance(ret, Return) else ()


def _argument_of(callee: Function, args: list[Expr], value: Expr) -> Expr | None:
    """The argument a kernel's returned ``value`` is: the tensor parameter it names (a kernel
    returns the tensors it writes); None when it names none."""
    for p, a in zip(callee.params, args):
        if isinstance(value, Var) and value.name in tensor_aliases(callee, p.var.name):
            return a
    return None


def _converts(have: DataType, want: DataType) -> bool:
    """A kernel argument of dtype ``have`` is passed as a ``want`` parameter: an integer widened
    losslessly, or an integer flag as a BOOL (nonzero is true, as C++ converts it)."""
    return widens(have, want) or (want == BOOL and have.is_integer)


class ProgramContext:
    """The functions of the program being parsed, and calls between them."""

    def __init__(self, ir_form: bool = False) -> None:
        # The @pl.program form (printed IR) may carry pass records; @pl.jit kernels may not.
        self.ir_form = ir_form
        self.functions: list[Function] = []
        self.names = NameSupply()  # function names
        self.kernels: dict[tuple, Function] = {}
        self.signatures: dict[str, tuple[list[Param], tuple[Type, ...]]] = {}

    def written_arg(self, call: FuncCall) -> Var | None:
        """The tensor argument a kernel call's value names (``c = kernel(a, c)``)."""
        signature = self.signatures.get(call.callee)
        params: Sequence[Param] = (
            signature[0]
            if signature
            else next((f.params for f in self.functions if f.name == call.callee), ())
        )
        return next(iter(written_arguments(params, call.args)), None)

    def call_method(self, fp: ParserState, name: str, args: list[Expr], node: ast.Call):
        """``self.<name>(...)`` inside a ``@pl.program`` class."""
        if name not in self.signatures:
            raise UnknownNameError(f"`self.{name}` is not a function of this program", fp.span(node))
        params, returns = self.signatures[name]
        return self._call(fp, name, params, returns, args, node)

    def call_method_unpacked(
        self, fp: ParserState, name: str, args: list[Expr], node: ast.Call
    ) -> tuple[FuncCall, list[Expr]]:
        """``a, b = self.<name>(...)`` in a ``@pl.program``: the call, and for each value it
        returns the tensor argument it is — its ``pl.Out`` / ``pl.InOut`` tensor parameters in
        order, which must match the declared return types one for one (a kernel returns the
        tensors it writes)."""
        if name not in self.signatures:
            raise UnknownNameError(f"`self.{name}` is not a function of this program", fp.span(node))
        params, returns = self.signatures[name]
        call, _ = self._call(fp, name, params, returns[:1], args, node)
        written = [
            (p, a)
            for p, a in zip(params, call.args)
            if p.direction in (Direction.Out, Direction.InOut) and isinstance(p.var.type, TensorType)
        ]
        if [p.var.type for p, _ in written] != list(returns):
            raise UnsupportedSyntaxError(
                f"`{name}` returns {len(returns)} values; unpacking them needs its pl.Out / pl.InOut "
                f"tensor parameters ({', '.join(p.var.name for p, _ in written) or 'none'}) to be "
                "what it returns, in order",
                fp.span(node),
            )
        return dataclasses.replace(call, type=VoidType()), [a for _, a in written]

    def call_kernel(
        self, fp: ParserState, fn: JitFunction | KernelFunction, args: list[Expr], node: ast.Call
    ):
        """A call of a kernel object from a ``@pl.jit`` body."""
        if fp.kind is not FunctionType.Orchestration:
            raise MisplacedOpError(f"InCore kernels cannot call other kernels (`{fn.name}`)", fp.span(node))
        if isinstance(fn, JitFunction) and fn.kind is FunctionType.Orchestration:
            raise UnsupportedSyntaxError(
                f"`{fn.name}` is a @pl.jit entry point; make it @pl.jit.incore to call it from a kernel",
                fp.span(node),
            )
        callee = self._kernel_for(fp, fn, args, node)
        call, ret = self._call(fp, callee.name, list(callee.params), callee.return_types, args, node)
        values = _returned_values(callee)
        written = _argument_of(callee, args, values[0]) if len(values) == 1 else None
        if written is not None:  # `y = kernel(x, y)`: the call's value is the tensor it wrote
            ret = type_of(written)
            call = dataclasses.replace(call, type=ret)
        return call, ret

    def _call(
        self,
        fp: ParserState,
        name: str,
        params: list[Param],
        returns: tuple,
        args: list[Expr],
        node: ast.Call,
    ):
        span = fp.span(node)
        if len(args) != len(params):
            raise ArgumentMismatchError(
                f"`{name}` takes {len(params)} arguments ({', '.join(p.var.name for p in params)}) "
                f"but {len(args)} were given",
                span,
            )
        for k, (a, p) in enumerate(zip(args, params)):
            t, want = type_of(a), p.var.type
            if isinstance(want, ScalarType) and isinstance(t, ScalarType) and _converts(t.dtype, want.dtype):
                a, t = fp.exprs.cast_scalar(a, want.dtype, node)  # an INDEX as an INT64 or BOOL parameter
                args[k] = a
            if not passes_as(t, want):
                raise TypeCheckError(
                    f"argument `{p.var.name}` of `{name}` must be {format_type(want)}, got "
                    f"{format_type(t) if t else 'a non-value'}",
                    span,
                )
        if len(returns) > 1:
            raise UnsupportedSyntaxError(
                f"`{name}` returns {len(returns)} values; bind them all at the call: "
                f"`{', '.join(f'r{i}' for i in range(len(returns)))} = {name}(...)`",
                span,
            )
        ret: Type = returns[0] if returns else VoidType()
        return FuncCall(name, tuple(args), ret, span=span), ret

    def call_kernel_unpacked(
        self, fp: ParserState, fn: JitFunction | KernelFunction, args: list[Expr], node: ast.Call
    ) -> tuple[FuncCall, list[Expr]]:
        """``a, b = kernel(...)`` in orchestration: the call, and for each value the kernel
        returns the argument it is (a kernel returns the tensor parameters it wrote)."""
        callee = self._kernel_for(fp, fn, args, node)
        call, _ = self._call(fp, callee.name, list(callee.params), callee.return_types[:1], args, node)
        outs = []
        for v in _returned_values(callee):
            hit = _argument_of(callee, args, v)
            if hit is None:
                raise UnsupportedSyntaxError(
                    f"`{fn.name}` returns `{getattr(v, 'name', v)}`, which is not one of its tensor "
                    "parameters; a kernel returns the tensors it writes",
                    fp.span(node),
                )
            outs.append(hit)
        return dataclasses.replace(call, type=VoidType()), outs

    def _kernel_for(self, fp: ParserState, fn: Any, args: list[Expr], node: ast.Call) -> Function:
        key: tuple = (id(fn), tuple(_arg_key(fp, a, node) for a in args))
        if isinstance(fn, KernelFunction):
            key = (id(fn),)
        if key in self.kernels:
            return self.kernels[key]
        if isinstance(fn, KernelFunction) and fn.pipeline_groups:
            raise UnsupportedSyntaxError(
                NOT_IN_KERNELS.format(what=f"@pl.function(pipeline_groups=...) of `{fn.name}`"),
                fp.span(node),
            )
        src = KernelSource.from_function(fn.fn, getattr(fn, "outer", None))
        kind = fn.kind if isinstance(fn, JitFunction) else fn.type
        callee = FunctionParser(src, _function_def(src), kind, self)
        external, include_dirs = None, tuple[str, ...]()
        if isinstance(fn, KernelFunction):
            callee.bind_params(callee.declared_params())
            callee.read_returns()
            external = (
                _resolve_external(fn.name, fn.external_source, src, fp.span(node))
                if fn.external_source
                else None
            )
            include_dirs = tuple(_beside(src.file, d) for d in fn.include_dirs)
        else:
            nodes = callee.param_nodes()
            if len(nodes) != len(args):
                raise ArgumentMismatchError(
                    f"`{fn.name}` takes {len(nodes)} arguments but {len(args)} were given", fp.span(node)
                )
            callee.bind_params([_callee_param(callee, n, a, fp.span(node)) for n, a in zip(nodes, args)])
        function = callee.function(self.names.fresh(fn.name), external, include_dirs)
        self.functions.append(function)
        self.kernels[key] = function
        return function


def _arg_key(fp: ParserState, a: Expr, node: ast.AST) -> tuple:
    if isinstance(a, Const):
        return ("const", a.value, a.dtype)
    t = type_of(a)
    if t is None:
        raise TypeCheckError("kernel arguments must be tensors or scalars", fp.span(node))
    return ("value", t)


def _callee_param(callee: FunctionParser, node: ast.arg, arg: Expr, span) -> ParamBinding:
    direction, declared = Direction.In, None
    if node.annotation is not None:
        declared, direction = _param_spec(callee, node)[1:]
    t = type_of(arg)
    if isinstance(t, TileType):
        raise TypeCheckError(f"a tile cannot be passed to kernel parameter `{node.arg}`; pass tensors", span)
    if declared is not None and isinstance(t, TensorType) and declared != t:
        raise TypeCheckError(
            f"kernel parameter `{node.arg}` is declared {format_type(declared)}, got {format_type(t)}", span
        )
    if isinstance(arg, Const):
        return ParamBinding(node.arg, arg.type, direction, value=arg.value, span=callee.span(node))
    return ParamBinding(node.arg, value_type(arg), direction, span=callee.span(node))  # _arg_key checked it


def _param_spec(fp: FunctionParser, node: ast.arg) -> tuple[str, Type | None, Direction]:
    """(kind, declared type or None, direction) of a ``@pl.jit`` parameter annotation."""
    assert node.annotation is not None
    value = fp.folder.fold(node.annotation)
    if value is NOT_CONST:
        t, direction = fp.annotations.read(node.annotation)
        return ("tile" if isinstance(t, TileType) else "tensor"), t, direction
    direction = Direction.In
    if isinstance(value, ann.DirectionSpec):
        direction, value = value.direction, value.inner
    if isinstance(value, ann.TensorSpec):
        return "tensor", value.to_type(), direction
    if isinstance(value, ann.TileSpec):
        return "tile", value.to_type(), direction
    converted = ann.spec_to_type(value)
    if converted is None:
        raise TypeCheckError(
            f"`{ast.unparse(node.annotation)}` is not a pypto type annotation", fp.span(node.annotation)
        )
    return "scalar", converted[0], direction


def _jit_param(fp: FunctionParser, node: ast.arg, value: Any, fn_name: str) -> ParamBinding:
    kind, declared, direction = "auto", None, Direction.In
    if node.annotation is not None:
        kind, declared, direction = _param_spec(fp, node)
    span = fp.span(node)
    if kind == "tile":
        raise TypeCheckError(
            f"parameter `{node.arg}` of a @pl.jit kernel cannot be a tile; pass tensors", span
        )
    if kind == "tensor" or (kind == "auto" and is_array(value)):
        t = tensor_arg(value, node.arg, fn_name, declared if isinstance(declared, TensorType) else None, span)
        return ParamBinding(node.arg, t, direction, span=span)
    dtype = declared.dtype if isinstance(declared, ScalarType) else None
    st, v = scalar_arg(value, node.arg, fn_name, dtype, span)
    return ParamBinding(node.arg, st, direction, value=v, span=span)


def _function_def(src: KernelSource) -> ast.FunctionDef:
    node = src.tree.body[0] if src.tree.body else None
    if not isinstance(node, ast.FunctionDef):
        raise CompileError(f"expected a function definition in {src.file}", src.span(node))
    return node


def _beside(file: str, path: str) -> str:
    """``path`` resolved against the folder of ``file`` (absolute paths unchanged)."""
    p = Path(path)
    return str(p if p.is_absolute() else Path(os.path.dirname(os.path.abspath(file))) / p)


def _resolve_external(name: str, external_source: str, src: KernelSource, span) -> str:
    path = Path(_beside(src.file, external_source))
    if not path.is_file():
        raise CompileError(f"external_source of `{name}` not found: {path}", span)
    return str(path)


def parse_jit(jit: JitFunction, args: Sequence[Any], kwargs: Mapping[str, Any] | None = None) -> Program:
    """Parse a ``@pl.jit`` (or ``@pl.jit.incore``) function specialised on ``args``."""
    src = KernelSource.from_function(jit.fn)
    fdef = _function_def(src)
    ctx = ProgramContext()
    ctx.names.taken.add(jit.name)
    fp = FunctionParser(src, fdef, jit.kind, ctx)
    nodes = fp.param_nodes()
    values = bind_arguments(jit.name, [n.arg for n in nodes], args, kwargs or {}, src.span(fdef))
    fp.bind_params([_jit_param(fp, n, v, jit.name) for n, v in zip(nodes, values)])
    entry = fp.function(jit.name)
    program = Program(jit.name, (entry, *ctx.functions), span=src.span(fdef))
    check_input_writes(program)
    return verify(program)


def _decorator(folder: Folder, node: ast.FunctionDef, span, src: KernelSource) -> tuple:
    """``(kind, external_source, include_dirs, pipeline_groups)`` of ``@pl.function(...)``."""
    for d in node.decorator_list:
        target = d.func if isinstance(d, ast.Call) else d
        if folder.fold(target) is not pl_module.function:
            continue
        kind, external, dirs = FunctionType.Orchestration, None, tuple[str, ...]()
        groups: tuple[PipelineGroup, ...] = ()
        for kw in d.keywords if isinstance(d, ast.Call) else []:
            if kw.arg == "pipeline_groups":
                groups = pipeline_groups(kw.value, folder.fold, src.span)
                continue
            value = folder.fold(kw.value)
            if kw.arg == "type" and isinstance(value, FunctionType):
                kind = value
            elif kw.arg == "external_source" and isinstance(value, str):
                external = value
            elif kw.arg == "include_dirs" and isinstance(value, (list, tuple)):
                dirs = tuple(str(v) for v in value)
            elif kw.arg == "auto_scope" and isinstance(value, bool):
                pass  # upstream's runtime scopes: task order follows the tensors either way
            else:
                raise TypeCheckError(f"bad @pl.function argument `{ast.unparse(kw)}`", span)
        return kind, external, dirs, groups
    raise UnsupportedSyntaxError(f"method `{node.name}` of a @pl.program class needs @pl.function(...)", span)


def _parse_program_class(src: KernelSource, cdef: ast.ClassDef) -> Program:
    ctx = ProgramContext(ir_form=True)
    folder = Folder(src, lambda _name: MISSING)
    parsers = []
    for node in cdef.body:
        if isinstance(node, ast.FunctionDef):
            kind, external, dirs, groups = _decorator(folder, node, src.span(node), src)
            if external is not None:
                external = _beside(src.file, external)
            dirs = tuple(_beside(src.file, d) for d in dirs)
            ctx.names.claim(node.name)  # a module-level kernel it calls is named apart from it
            fp = FunctionParser(src, node, kind, ctx)
            fp.bind_params(fp.declared_params())
            fp.read_returns()
            ctx.signatures[node.name] = (fp.params, fp.declared_returns or ())
            parsers.append((fp, node.name, external, dirs, groups))
        elif not (
            isinstance(node, ast.Pass)
            or (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant))
        ):
            raise UnsupportedSyntaxError(
                "a @pl.program class holds only @pl.function methods", src.span(node)
            )
    functions = tuple(
        dataclasses.replace(fp.function(name, external, dirs), pipeline_groups=groups)
        for fp, name, external, dirs, groups in parsers
    )
    # module-level @pl.function kernels the methods call join the program
    program = Program(cdef.name, (*functions, *ctx.functions), span=src.span(cdef))
    check_input_writes(program)
    return verify(program)


def parse_class(cls: type, outer: dict[str, Any] | None = None) -> Program:
    """The ``Program`` of a ``@pl.program`` class (its source is read, never run); ``outer``:
    the variables of the function the class is defined in."""
    src = KernelSource.from_class(cls, outer or {})
    cdef = src.tree.body[0]
    assert isinstance(cdef, ast.ClassDef)
    return _parse_program_class(src, cdef)


def _dynamic_dim(node: ast.expr) -> DynDim | None:
    """``pl.dynamic("M")`` (printed programs declare their dynamic dims so)."""
    if (
        isinstance(node, ast.Call)
        and ast.unparse(node.func) == "pl.dynamic"
        and len(node.args) == 1
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, str)
    ):
        return DynDim(node.args[0].value)
    return None


def _module_scope(src: KernelSource) -> ast.ClassDef:
    """Bind the text's imports of pypto.language and its constants; find the program class."""
    src.globals = {"pl": pl_module}
    folder = Folder(src, lambda _name: MISSING)
    found = None
    for stmt in src.tree.body:
        if isinstance(stmt, ast.Import):
            for alias in stmt.names:
                if alias.name == "pypto.language" and alias.asname:
                    src.globals[alias.asname] = pl_module
        elif isinstance(stmt, ast.ImportFrom) and stmt.module == "pypto":
            for alias in stmt.names:
                if alias.name == "language":
                    src.globals[alias.asname or "language"] = pl_module
        elif (
            isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
        ):
            value = _dynamic_dim(stmt.value) or folder.fold(stmt.value)
            if value is not NOT_CONST:
                src.globals[stmt.targets[0].id] = value
        elif (
            isinstance(stmt, ast.ClassDef)
            and found is None
            and any(folder.fold(d) is pl_module.program for d in stmt.decorator_list)
        ):
            found = stmt
    if found is None:
        raise CompileError(f"no @pl.program class in {src.file}")
    return found


def parse_text(text: str, filename: str | None = None) -> Program:
    """Parse program text (as :func:`pypto.ir.print_program` writes it)."""
    src = KernelSource.from_text(text, filename)
    return _parse_program_class(src, _module_scope(src))


def parse_file(path: str | os.PathLike) -> Program:
    """Parse a program file (e.g. a pass dump)."""
    return parse_text(Path(path).read_text(), str(path))
