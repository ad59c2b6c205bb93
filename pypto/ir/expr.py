"""IR expressions.

Every node is a frozen dataclass with a ``span`` that ``==`` ignores, so ``a == b`` is
structural equality with names; :func:`pypto.ir.structural_equal` also ignores names.

Expressions in op calls are kept flat by the frontend (A-normal form): tile and tensor
operands are always ``Var``; only scalar index arithmetic nests (``i * 64 + 16``).
"""

from __future__ import annotations

import enum
from dataclasses import field
from typing import Any, TypeVar

from pypto._dataclass import dataclass
from pypto.errors import SourceSpan
from pypto.ir.dtypes import BOOL, FP32, INDEX, DataType
from pypto.ir.types import ArrayType, ScalarType, TensorType, TileType, Type


@dataclass(frozen=True)
class Node:
    """Base of every IR node: carries the user source position (ignored by ``==``)."""

    span: SourceSpan | None = field(default=None, compare=False, repr=False, kw_only=True)


class Expr(Node):
    """Base of expressions; arithmetic operators build ``BinOp`` nodes (constants folded)."""

    def __add__(self, other: Any) -> Expr:
        return make_binop("+", self, as_expr(other))

    def __radd__(self, other: Any) -> Expr:
        return make_binop("+", as_expr(other), self)

    def __sub__(self, other: Any) -> Expr:
        return make_binop("-", self, as_expr(other))

    def __rsub__(self, other: Any) -> Expr:
        return make_binop("-", as_expr(other), self)

    def __mul__(self, other: Any) -> Expr:
        return make_binop("*", self, as_expr(other))

    def __rmul__(self, other: Any) -> Expr:
        return make_binop("*", as_expr(other), self)

    def __floordiv__(self, other: Any) -> Expr:
        return make_binop("//", self, as_expr(other))

    def __mod__(self, other: Any) -> Expr:
        return make_binop("%", self, as_expr(other))


@dataclass(frozen=True)
class Var(Expr):
    """A named value. Names are unique per function (SSA); every use repeats the def's type."""

    name: str
    type: Type


@dataclass(frozen=True)
class Const(Expr):
    """A numeric or boolean constant with its scalar dtype."""

    value: int | float | bool
    dtype: DataType = INDEX

    @property
    def type(self) -> ScalarType:
        return ScalarType(self.dtype)


@dataclass(frozen=True)
class Literal(Expr):
    """A compile-time attribute value: a dtype, an enum member, a string, or None."""

    value: DataType | enum.Enum | str | None


@dataclass(frozen=True)
class ListExpr(Expr):
    """A list of expressions: offsets ``[i * 64, 0]`` or a static shape ``[64, 128]``."""

    items: tuple[Expr, ...]


ARITH_OPS = ("+", "-", "*", "/", "//", "%", "min", "max")  # min/max: Python's builtins on scalars
COMPARE_OPS = ("==", "!=", "<", "<=", ">", ">=")
BOOL_OPS = ("and", "or")
BINARY_OPS = ARITH_OPS + COMPARE_OPS + BOOL_OPS


@dataclass(frozen=True)
class BinOp(Expr):
    """Scalar arithmetic or comparison; ``op`` is the Python spelling (``"//"``, ``"<="``)."""

    op: str
    lhs: Expr
    rhs: Expr


@dataclass(frozen=True)
class UnaryOp(Expr):
    """Scalar negation (``"-"``) or logical not (``"not"``)."""

    op: str
    operand: Expr


# Parameter names of every op, in order; filled by the op table (pypto.ir.ops) when it loads,
# so a Call can name its arguments without this module importing the table.
OP_PARAMS: dict[str, tuple[str, ...]] = {}


@dataclass(frozen=True)
class Call(Expr):
    """A call of an op from the op table; ``args`` follow the op's parameter order, defaults
    filled in, so two spellings of the same call are equal nodes. ``type`` is the result type,
    computed when the call is bound (:func:`pypto.ir.bind.bind_call`), recomputed when a
    rewrite changes the arguments, and re-checked by the verifier."""

    op: str
    args: tuple[Expr, ...]
    type: Type

    def arg(self, name: str) -> Expr:
        """The argument bound to parameter ``name`` of this call's op."""
        try:
            return self.args[OP_PARAMS[self.op].index(name)]
        except (KeyError, ValueError):
            raise KeyError(f"{self.op} has no parameter {name!r}") from None

    # Typed views of an argument, for code that knows the node kind the op's typing rule
    # guarantees: a mismatch is a compiler bug, reported as such (not an AttributeError later).
    def list_arg(self, name: str) -> ListExpr:
        """The list argument ``name`` (offsets, a static shape)."""
        return _expect(self, name, ListExpr)

    def const_arg(self, name: str) -> Const:
        """The constant argument ``name`` (a flag such as ``a_trans``, an axis)."""
        return _expect(self, name, Const)

    def literal_arg(self, name: str) -> Literal:
        """The compile-time attribute ``name`` (a dtype, an enum member, None)."""
        return _expect(self, name, Literal)

    def var_arg(self, name: str) -> Var:
        """The named operand ``name`` (a tile or tensor: operands are always Vars)."""
        return _expect(self, name, Var)


_Node = TypeVar("_Node", bound=Expr)


def _expect(call: Call, name: str, kind: type[_Node]) -> _Node:
    value = call.arg(name)
    if not isinstance(value, kind):
        raise TypeError(
            f"{call.op}: argument {name!r} is a {type(value).__name__}, expected a {kind.__name__}"
        )
    return value


@dataclass(frozen=True)
class FuncCall(Expr):
    """A call of another function of the program (an InCore kernel) by name. An outlined
    ``pl.at`` scope keeps its ``as`` name (``handle``) and its ``deps=[...]`` here: in
    orchestration each call is one task, ordered after the tasks of the handles it names."""

    callee: str
    args: tuple[Expr, ...]
    type: Type
    handle: str | None = None
    deps: tuple[str, ...] = ()
    blocks: int | Expr = 1  # pl.spmd: one task per block index (an Expr of pl.dynamic dims: per call)
    early_resolve: bool = False  # pl.at(allow_early_resolve=True): see ir.stmt.Scope
    no_dep: tuple[Var, ...] = ()  # pl.at(no_dep_args=[...]): tensors left out of dependency inference
    dep_values: tuple[Expr, ...] = ()  # deps= TaskId values (pl.TASK_ID scalars and arrays)
    sync_start: bool = False  # pl.spmd(sync_start=True): see ir.stmt.Scope


def as_expr(value: Any, span: SourceSpan | None = None) -> Expr:
    """Wrap a Python value as an IR expression (ints → INDEX, floats → FP32)."""
    if isinstance(value, Expr):
        return value
    if isinstance(value, bool):
        return Const(value, BOOL, span=span)
    if isinstance(value, int):
        return Const(value, INDEX, span=span)
    if isinstance(value, float):
        return Const(value, FP32, span=span)
    if isinstance(value, (list, tuple)):
        return ListExpr(tuple(as_expr(v, span) for v in value), span=span)
    if value is None or isinstance(value, (DataType, enum.Enum, str)):
        return Literal(value, span=span)
    raise TypeError(f"cannot use {value!r} ({type(value).__name__}) as an IR expression")


def _fold(op: str, a: Any, b: Any) -> Any:
    table = {
        "+": lambda: a + b,
        "-": lambda: a - b,
        "*": lambda: a * b,
        "/": lambda: a / b,
        "//": lambda: a // b,
        "%": lambda: a % b,
        "min": lambda: min(a, b),
        "max": lambda: max(a, b),
        "==": lambda: a == b,
        "!=": lambda: a != b,
        "<": lambda: a < b,
        "<=": lambda: a <= b,
        ">": lambda: a > b,
        ">=": lambda: a >= b,
        "and": lambda: bool(a and b),
        "or": lambda: bool(a or b),
    }
    return table[op]()


def _adopt(c: Expr, other: Expr) -> Expr:
    """A literal opposite a typed scalar takes its dtype (``x * 2`` with x FP32 → 2.0)."""
    if not isinstance(c, Const) or isinstance(other, Const):
        return c
    t = type_of(other)
    if not isinstance(t, ScalarType) or t.dtype == c.dtype or t.dtype == BOOL or c.dtype == BOOL:
        return c
    if t.dtype.is_float:
        return Const(float(c.value), t.dtype, span=c.span)
    if isinstance(c.value, float) and not c.value.is_integer():
        return c  # a fractional literal next to an integer: left for the type checker to reject
    return Const(int(c.value), t.dtype, span=c.span)


def make_binop(op: str, lhs: Expr, rhs: Expr, span: SourceSpan | None = None) -> Expr:
    """Build ``lhs op rhs``, folding when both sides are constants.

    Parser and builder both go through here, so printed text re-parses to the same tree.
    """
    lhs, rhs = _adopt(lhs, rhs), _adopt(rhs, lhs)
    if isinstance(lhs, Const) and isinstance(rhs, Const):
        if op in ("/", "//", "%") and rhs.value == 0:
            raise ZeroDivisionError(f"constant {op} by zero")
        value = _fold(op, lhs.value, rhs.value)
        if op in COMPARE_OPS or op in BOOL_OPS:
            return Const(bool(value), BOOL, span=span)
        dtype = lhs.dtype if lhs.dtype == rhs.dtype else (FP32 if isinstance(value, float) else INDEX)
        return Const(value, dtype, span=span)
    return BinOp(op, lhs, rhs, span=span)


def make_unary(op: str, operand: Expr, span: SourceSpan | None = None) -> Expr:
    """Build ``-x`` / ``not x``, folding constants."""
    if isinstance(operand, Const):
        if op == "-":
            return Const(-operand.value, operand.dtype, span=span)
        return Const(not operand.value, BOOL, span=span)
    return UnaryOp(op, operand, span=span)


def _mixed_integers(a: Type | None, b: Type | None) -> bool:
    return (
        isinstance(a, ScalarType)
        and isinstance(b, ScalarType)
        and a.dtype != b.dtype
        and a.dtype.is_integer
        and b.dtype.is_integer
    )


def type_of(expr: Expr) -> Type | None:
    """The type of an expression (``None`` for lists and compile-time literals)."""
    if isinstance(expr, (Var, FuncCall, Call)):
        return expr.type
    if isinstance(expr, Const):
        return expr.type
    if isinstance(expr, BinOp):
        if expr.op in COMPARE_OPS or expr.op in BOOL_OPS:
            return ScalarType(BOOL)
        # A literal adopts the other side's dtype (``x * 2`` keeps x's dtype); integers of two
        # dtypes (an INT32 read, an INDEX offset) meet in INDEX, the 64 bits they are computed in.
        side = expr.rhs if isinstance(expr.lhs, Const) else expr.lhs
        lt, rt = type_of(expr.lhs), type_of(expr.rhs)
        if _mixed_integers(lt, rt) and not isinstance(expr.lhs, Const) and not isinstance(expr.rhs, Const):
            return ScalarType(INDEX)
        return type_of(side)
    if isinstance(expr, UnaryOp):
        return ScalarType(BOOL) if expr.op == "not" else type_of(expr.operand)
    return None


def as_var(e: Expr) -> Var:
    """``e`` as the ``Var`` the caller knows it is (tile and tensor operands, yielded tiles are
    Vars in normal form); anything else is a compiler bug and raises ``TypeError``."""
    if not isinstance(e, Var):
        raise TypeError(f"expected a named value, got {type(e).__name__} ({e!r})")
    return e


def value_type(e: Expr) -> Type:
    """The type of ``e``, known to be a value (a tile, tensor or scalar; not a list or an
    attribute): a carried, yielded or returned value, checked where the user wrote it."""
    t = type_of(e)
    if t is None:
        raise TypeError(f"expected a value, got {type(e).__name__} ({e!r})")
    return t


def as_const(e: Expr) -> Const:
    """``e`` as the ``Const`` the caller knows it is (a constant loop bound, a flag)."""
    if not isinstance(e, Const):
        raise TypeError(f"expected a constant, got {type(e).__name__} ({e!r})")
    return e


_T = TypeVar("_T", bound=Type)


def _typed(x: Expr | Type | None, kind: type[_T]) -> _T:
    t = x if isinstance(x, Type) or x is None else type_of(x)
    if not isinstance(t, kind):
        raise TypeError(f"expected a value of {kind.__name__}, got {type(t).__name__} ({x!r})")
    return t


def tile_type(x: Expr | Type | None) -> TileType:
    """The :class:`TileType` of an expression (or a type itself) that the caller knows is a
    tile; anything else is a compiler bug and raises ``TypeError``."""
    return _typed(x, TileType)


def tensor_type(x: Expr | Type | None) -> TensorType:
    """The :class:`TensorType` of an expression (or a type) known to be a tensor."""
    return _typed(x, TensorType)


def scalar_type(x: Expr | Type | None) -> ScalarType:
    """The :class:`ScalarType` of an expression (or a type) known to be a scalar."""
    return _typed(x, ScalarType)


def array_type(x: Expr | Type | None) -> ArrayType:
    """The :class:`ArrayType` of an expression (or a type) known to be a ``pl.array``."""
    return _typed(x, ArrayType)


def shaped_type(x: Expr | Type | None) -> TileType | TensorType:
    """The type of a tile or a tensor (both have ``shape`` and ``dtype``)."""
    t = x if isinstance(x, Type) or x is None else type_of(x)
    if not isinstance(t, (TileType, TensorType)):
        raise TypeError(f"expected a tile or a tensor, got {type(t).__name__} ({x!r})")
    return t
