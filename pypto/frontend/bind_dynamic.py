"""``x.bind_dynamic(axis, M)``: a statement saying that axis ``axis`` of tensor parameter ``x``
is the ``pl.dynamic`` dim ``M``.

Model code states it once per parameter at the top of an entry function, next to annotations
that already say ``pl.Tensor[[M, 4096], ...]``. Here the annotation is what makes the dim
dynamic (the kernel is compiled once for every size of ``M``, and one symbol must mean one size
across the parameters of a call), so the statement is a check that the two agree; it emits
nothing. In a ``@pl.jit.inline`` helper the parameter is the caller's tensor, whose size is the
caller's (a ``[128, D]`` window, or a ``[T, D]`` tensor, passed for ``[M, D]``): there it is
accepted.
"""

from __future__ import annotations

import ast

from pypto.errors import TypeCheckError, UnsupportedSyntaxError
from pypto.frontend.state import ParserState
from pypto.ir.dims import DynDim
from pypto.ir.expr import Var
from pypto.ir.types import TensorType


def is_bind_dynamic(node: ast.expr) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "bind_dynamic"
    )


def bind_dynamic(p: ParserState, call: ast.Call) -> None:
    """Check ``x.bind_dynamic(axis, M)`` against ``x``'s declared type."""
    assert isinstance(call.func, ast.Attribute)
    target = call.func.value
    base = p.lookup_local(target.id) if isinstance(target, ast.Name) else None
    if (
        not (isinstance(base, Var) and isinstance(base.type, TensorType))
        or call.keywords
        or len(call.args) != 2
    ):
        raise UnsupportedSyntaxError(
            "write `x.bind_dynamic(axis, M)` with x a tensor parameter and M = pl.dynamic(...)", p.span(call)
        )
    axis, dim = (p.folder.fold(a) for a in call.args)
    shape = base.type.shape
    if not isinstance(axis, int) or not -len(shape) <= axis < len(shape) or not isinstance(dim, DynDim):
        raise TypeCheckError(
            f"{ast.unparse(call)}: needs an axis of `{base.name}` (rank {len(shape)}) and a pl.dynamic dim",
            p.span(call),
        )
    if shape[axis] != dim and not _own_param(p, base):
        return  # an inline helper's parameter: the caller's tensor, with the caller's size
    if shape[axis] != dim:
        raise TypeCheckError(
            f"{ast.unparse(call)}: axis {axis} of `{base.name}` is declared {shape[axis]}, not {dim.name}; "
            f"declare it in the annotation (pl.Tensor[[{dim.name}, ...], ...]) so the kernel is compiled "
            "for every size of it",
            p.span(call),
        )


def _own_param(p: ParserState, v: Var) -> bool:
    """Whether ``v`` is a parameter of the function being compiled (not a value an inline
    helper's parameter was bound to: its annotation, which may name ``M``, was checked against
    the caller's tensor at the call)."""
    return any(param.var is v for param in p.params)
