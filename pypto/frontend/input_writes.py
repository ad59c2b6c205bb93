"""Inputs are read-only to kernels: a write into a tensor parameter that is not ``pl.Out`` /
``pl.InOut`` is a compile error at the writing line.

Writes are ``pl.store`` (``tile.store``), ``pl.assemble`` and ``x[...] = ...``
(``tensor.assemble``), ``pl.write`` (``tensor.write``), and passing the tensor to a kernel
parameter declared ``pl.Out`` / ``pl.InOut``. A write reaches a parameter through any name
bound to it: the result of an earlier write, a loop-carried value, an ``if`` result.
"""

from __future__ import annotations

from pypto.errors import InputWriteError
from pypto.ir.enums import Direction
from pypto.ir.expr import Call, FuncCall, Var
from pypto.ir.stmt import Assign, For, Function, If, Program, Yield
from pypto.ir.types import TensorType
from pypto.ir.visit import nodes_of

_WRITES = {
    "tile.store": ("output_tensor", "pl.store"),
    "tensor.assemble": ("target", "a window assignment"),
    "tensor.write": ("dst", "pl.write"),
    "system.syncall": ("gm_workspace", "pl.system.syncall (its arrival counter)"),
}
_WRITTEN = (Direction.Out, Direction.InOut)


def check_input_writes(program: Program) -> None:
    """Raises InputWriteError at the first write into an input tensor parameter."""
    for fn in program.functions:
        if fn.external_source is None:
            _check_function(program, fn)


def _check_function(program: Program, fn: Function) -> None:
    inputs = {
        p.var.name for p in fn.params if p.direction is Direction.In and isinstance(p.var.type, TensorType)
    }
    if not inputs:
        return
    root = _roots(program, fn, inputs)
    for op_call in nodes_of(fn, Call):
        if op_call.op in _WRITES:
            arg, spelling = _WRITES[op_call.op]
            target = op_call.arg(arg)
            if isinstance(target, Var) and target.name in root:
                raise InputWriteError(
                    _message(fn, root[target.name], f"{spelling} writes into it"), op_call.span
                )
    for call in nodes_of(fn, FuncCall):
        for p, a in _written_args(program, call):
            if isinstance(a, Var) and a.name in root:
                what = f"`{call.callee}` writes it (its parameter `{p.var.name}` is {p.direction.name})"
                raise InputWriteError(_message(fn, root[a.name], what), call.span)


def _message(fn: Function, param: str, what: str) -> str:
    return (
        f"`{param}` is an input of `{fn.name}` and {what}; inputs are read-only to kernels — declare "
        f"`{param}: pl.Out[...]` (written) or `pl.InOut[...]` (read and written)"
    )


def _written_args(program: Program, call: FuncCall) -> list:
    try:
        callee = program.get(call.callee)
    except KeyError:
        return []  # the verifier reports unknown callees
    return [(p, a) for p, a in zip(callee.params, call.args) if p.direction in _WRITTEN]


def _roots(program: Program, fn: Function, inputs: set[str]) -> dict[str, str]:
    """Every variable that names one of ``inputs`` -> that input (to a fixed point)."""
    root = {name: name for name in inputs}
    grew = True
    while grew:
        size = len(root)
        for s in nodes_of(fn, Assign):
            source = _aliased(program, s.value)
            if source is not None and source in root:
                root.setdefault(s.var.name, root[source])
        for loop in nodes_of(fn, For):
            for it, result in zip(loop.iter_args, loop.results):
                if isinstance(it.init, Var) and it.init.name in root:
                    root.setdefault(it.var.name, root[it.init.name])
                    root.setdefault(result.name, root[it.init.name])
        for branch in nodes_of(fn, If):
            for body in (branch.then_body, branch.else_body):
                if body and isinstance(body[-1], Yield):
                    for var, value in zip(branch.results, body[-1].values):
                        if isinstance(value, Var) and value.name in root:
                            root.setdefault(var.name, root[value.name])
        grew = len(root) > size
    return root


def _aliased(program: Program, value: object) -> str | None:
    """The variable an assigned value names the same tensor as, if any."""
    if isinstance(value, Var):
        return value.name
    if isinstance(value, Call) and value.op in _WRITES:
        target = value.arg(_WRITES[value.op][0])
        return target.name if isinstance(target, Var) else None
    if isinstance(value, FuncCall):
        for _, a in _written_args(program, value):
            if isinstance(a, Var):
                return a.name
    return None


__all__ = ["check_input_writes"]
