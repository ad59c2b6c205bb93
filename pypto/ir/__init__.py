"""pypto IR: nodes, types, the op table, builder, printer, verifier and structural equality.

The pieces, by module: ``dtypes``/``enums``/``types`` (values), ``expr``/``stmt`` (nodes),
``ops`` (the op table) with ``op_rules`` (typing) and ``bind`` (normalising calls),
``builder``, ``printer``, ``verify``, ``equality``, ``visit`` (walk / rewrite).

Names load on first use (``pypto.ir.print_program`` imports the printer then), so importing
one piece — as ``import pypto.language`` does — does not load them all.
"""

from __future__ import annotations

import importlib
import sys
import types

TYPE_CHECKING = False  # annotations only: not importing typing keeps `import pypto.language` light
if TYPE_CHECKING:
    from typing import Any

_MODULES = {
    "bind": ("bind_call", "check_call", "infer_call_type"),
    "builder": ("Builder", "IfFrame", "LoopFrame"),
    "dtypes": (
        "BF16", "BOOL", "FP16", "FP32", "INDEX", "INT8", "INT16", "INT32", "INT64", "UINT8", "UINT32",
        "DataType",
    ),
    "enums": (
        "AtomicType", "Direction", "ForKind", "FunctionType", "Level", "MemorySpace", "PadValue",
        "ParamDirection", "PassDumpLevel", "Pipe",
    ),
    "equality": ("assert_structural_equal", "structural_diff", "structural_equal"),
    "expr": (
        "BinOp", "Call", "Const", "Expr", "FuncCall", "ListExpr", "Literal", "Node", "UnaryOp", "Var",
        "as_expr", "make_binop", "make_unary", "type_of",
    ),
    "ops": ("DSL_OPS", "OPS", "Kind", "OpDef", "ParamSpec", "get_op", "resolve_dsl"),
    "pass_manager": ("OptimizationStrategy",),
    "printer": ("print_expr", "print_function", "print_program", "print_type"),
    "stmt": (
        "Assign", "Eval", "For", "Function", "If", "IterArg", "Param", "PipelineClone", "PipelineGroup",
        "Program", "Return", "Scope", "Stmt", "Yield",
    ),
    "types": (
        "INDEX_TYPE", "MemRef", "ScalarType", "TensorType", "TileType", "Type", "VoidType", "format_type",
        "refines",
    ),
    "verify": ("verify",),
    "visit": ("nodes_of", "retype", "rewrite", "walk"),
}  # fmt: skip
_HOME = {name: module for module, names in _MODULES.items() for name in names}


def compile(program, output_dir=None, **options):  # noqa: A001 - upstream's name
    """``pypto.ir.compile(program, output_dir=None, platform="a2a3sim", ...)``: the
    ``CompiledProgram`` of a ``@pl.program``, not run (``pypto.runtime.entry.compile``)."""
    from pypto.runtime.entry import compile as compile_program

    return compile_program(program, output_dir, **options)


def __getattr__(name: str) -> Any:
    if name in _HOME:
        return getattr(importlib.import_module(f"pypto.ir.{_HOME[name]}"), name)
    if name in _MODULES or name == "op_rules":  # a submodule, as `pypto.ir.<module>`
        return importlib.import_module(f"pypto.ir.{name}")
    raise AttributeError(f"module 'pypto.ir' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOME})


class _Package(types.ModuleType):
    """``pypto.ir.verify`` is the verifier function, as it was when this package imported its
    modules eagerly: importing the submodule of that name must not replace it."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "verify" and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


__all__ = [
    "compile",
    "Assign",
    "AtomicType",
    "BF16",
    "BOOL",
    "BinOp",
    "Builder",
    "Call",
    "Const",
    "DSL_OPS",
    "DataType",
    "Direction",
    "Eval",
    "Expr",
    "FP16",
    "FP32",
    "For",
    "ForKind",
    "FuncCall",
    "Function",
    "FunctionType",
    "INDEX",
    "INDEX_TYPE",
    "INT16",
    "INT32",
    "INT64",
    "INT8",
    "If",
    "IfFrame",
    "IterArg",
    "Kind",
    "Level",
    "ListExpr",
    "Literal",
    "LoopFrame",
    "MemRef",
    "MemorySpace",
    "Node",
    "OPS",
    "OpDef",
    "PadValue",
    "Param",
    "PassDumpLevel",
    "ParamSpec",
    "Pipe",
    "PipelineClone",
    "PipelineGroup",
    "Program",
    "Return",
    "ScalarType",
    "Scope",
    "Stmt",
    "TensorType",
    "TileType",
    "Type",
    "UINT8",
    "UINT32",
    "UnaryOp",
    "Var",
    "VoidType",
    "Yield",
    "as_expr",
    "assert_structural_equal",
    "bind_call",
    "check_call",
    "format_type",
    "get_op",
    "infer_call_type",
    "make_binop",
    "make_unary",
    "nodes_of",
    "print_expr",
    "print_function",
    "print_program",
    "print_type",
    "refines",
    "resolve_dsl",
    "retype",
    "rewrite",
    "structural_diff",
    "structural_equal",
    "type_of",
    "verify",
    "walk",
]
