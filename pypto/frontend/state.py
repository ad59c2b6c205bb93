"""What the parts of the function parser share: :class:`ParserState`.

:class:`~pypto.frontend.function.FunctionParser` owns the state of one function being
parsed and the statement dispatch; the parts that handle one construct each (expressions,
loops and branches, ``pl.while_``, ``pl.spmd``, inline helpers) hold a reference to it typed
as this protocol, so each part uses only what is declared here.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from pypto.errors import SourceSpan
    from pypto.frontend.consteval import Folder
    from pypto.frontend.exprs import ExprLowerer
    from pypto.frontend.parser import ProgramContext
    from pypto.frontend.semantic import Context
    from pypto.frontend.source import KernelSource
    from pypto.frontend.spmd import SpmdScopes
    from pypto.ir.enums import FunctionType
    from pypto.ir.expr import Expr, Var
    from pypto.ir.names import NameSupply
    from pypto.ir.stmt import Param, Stmt
    from pypto.ir.types import Type


class ParserState(Protocol):
    """The function being parsed: its source, names, open statement blocks and scopes."""

    src: KernelSource  # the source being read (an inline helper's while it is expanded)
    kind: FunctionType
    program: ProgramContext
    env: dict[str, Any]  # Python name -> IR value or compile-time constant
    names: NameSupply  # IR names taken in this function
    blocks: list[list[Stmt]]  # open statement lists, innermost last
    ctx: Context  # placement state (inside pl.at, loop ranges)
    folder: Folder  # compile-time evaluation against `env`
    exprs: ExprLowerer
    spmd: SpmdScopes  # pl.spmd scopes and their call forms (pl.spmd_submit)
    params: list[Param]
    inner_defs: dict[str, str]  # names defined only inside a finished loop/branch -> where
    written: dict[str, Var]  # tensor versions stores made -> the tensor they wrote into
    scalar_defs: dict[str, Expr]  # IR name of an integer scalar -> the expression assigned to it
    handles: set[str]  # `with pl.at(...) as h` handles seen so far

    def span(self, node: ast.AST | None) -> SourceSpan | None: ...

    def emit(self, s: Stmt) -> None: ...

    def block(self, body: list[ast.stmt], top: bool = False) -> list[Stmt]: ...

    def stmt(self, node: ast.stmt) -> None: ...

    def assign(self, node: ast.Assign) -> None: ...

    def lookup_local(self, name: str) -> Any: ...

    def value_of(self, name: str, node: ast.AST, env: dict[str, Any] | None = None) -> Expr: ...

    def inline_call(self, helper: Any, node: ast.Call) -> tuple[Expr | None, Type | None]: ...
