"""pypto IR: nodes, types, the op table, builder, printer, verifier and structural equality.

The pieces, by module: ``dtypes``/``enums``/``types`` (values), ``expr``/``stmt`` (nodes),
``ops`` (the op table) with ``op_rules`` (typing) and ``bind`` (normalising calls),
``builder``, ``printer``, ``verify``, ``equality``, ``visit`` (walk / rewrite).
"""

from pypto.ir.bind import bind_call, check_call, infer_call_type
from pypto.ir.builder import Builder, IfFrame, LoopFrame
from pypto.ir.dtypes import (
    BF16,
    BOOL,
    FP16,
    FP32,
    INDEX,
    INT8,
    INT16,
    INT32,
    INT64,
    UINT8,
    DataType,
)
from pypto.ir.enums import AtomicType, Direction, ForKind, FunctionType, Level, MemorySpace, PadValue, Pipe
from pypto.ir.equality import assert_structural_equal, structural_diff, structural_equal
from pypto.ir.expr import (
    BinOp,
    Call,
    Const,
    Expr,
    FuncCall,
    ListExpr,
    Literal,
    Node,
    UnaryOp,
    Var,
    as_expr,
    make_binop,
    make_unary,
    type_of,
)
from pypto.ir.ops import DSL_OPS, OPS, Kind, OpDef, ParamSpec, get_op, resolve_dsl
from pypto.ir.printer import print_expr, print_function, print_program, print_type
from pypto.ir.stmt import (
    Assign,
    Eval,
    For,
    Function,
    If,
    IterArg,
    Param,
    Program,
    Return,
    Scope,
    Stmt,
    Yield,
)
from pypto.ir.types import (
    INDEX_TYPE,
    MemRef,
    ScalarType,
    TensorType,
    TileType,
    Type,
    VoidType,
    format_type,
    refines,
)
from pypto.ir.verify import verify
from pypto.ir.visit import nodes_of, retype, rewrite, walk


def compile(program, output_dir=None, **options):  # noqa: A001 - upstream's name
    """``pypto.ir.compile(program, output_dir=None, platform="a2a3sim", ...)``: the
    ``CompiledProgram`` of a ``@pl.program``, not run (``pypto.runtime.entry.compile``)."""
    from pypto.runtime.entry import compile as compile_program

    return compile_program(program, output_dir, **options)


def __getattr__(name: str):
    # SPEC spells it pypto.ir.PassDumpLevel; it lives with the pass options (which import the
    # IR), so it is re-exported lazily.
    if name == "PassDumpLevel":
        from pypto.passes.options import PassDumpLevel

        return PassDumpLevel
    raise AttributeError(f"module 'pypto.ir' has no attribute {name!r}")


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
    "ParamSpec",
    "Pipe",
    "Program",
    "Return",
    "ScalarType",
    "Scope",
    "Stmt",
    "TensorType",
    "TileType",
    "Type",
    "UINT8",
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
