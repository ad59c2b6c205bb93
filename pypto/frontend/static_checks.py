"""``pl.static_assert``: a condition over compile-time
values (shapes, dtypes, constants, ``pl.dim``) checked for each specialisation."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from pypto.errors import StaticAssertError, TypeCheckError
from pypto.frontend.consteval import NOT_CONST

if TYPE_CHECKING:
    from pypto.frontend.state import ParserState


def static_assert(p: ParserState, call: ast.Call) -> None:
    """``pl.static_assert(cond, msg="")``: holds for this specialisation, or a compile error."""
    args = dict(zip(("cond", "msg"), call.args)) | {k.arg: k.value for k in call.keywords}
    if "cond" not in args or set(args) - {"cond", "msg"} or len(call.args) > 2:
        raise TypeCheckError('write pl.static_assert(cond, msg="...")', p.span(call))
    cond = p.folder.fold(args["cond"])
    msg = p.folder.fold(args["msg"]) if "msg" in args else ""
    if cond is NOT_CONST or not isinstance(msg, str):
        raise TypeCheckError(
            f"pl.static_assert needs a compile-time condition and message, got `{ast.unparse(call)}`",
            p.span(call),
        )
    if not cond:
        detail = f": {msg}" if msg else ""
        raise StaticAssertError(
            f"static assertion `{ast.unparse(args['cond'])}` failed{detail}", p.span(call)
        )
