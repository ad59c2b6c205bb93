"""Which names of a function stand for one tensor (private helper of the plan and the frontend).

A kernel writes a tensor parameter through values that name it afterwards: the result of a
store into it (``tile.store``, or ``tensor.assemble`` before lowering), a loop-carried value
that starts from it and the loop's result, and an if's result that names it in both branches.
Knowing them tells which parameter a returned value is, and whether every write of a
parameter is an atomic add.
"""

from __future__ import annotations

from collections.abc import Sequence

from pypto.ir.enums import Direction
from pypto.ir.expr import Call, Expr, Var
from pypto.ir.stmt import Assign, For, Function, If, Param, Yield
from pypto.ir.visit import nodes_of

# op -> the argument naming the tensor the result stands for
_WRITES = {"tile.store": "output_tensor", "tensor.assemble": "target"}


def tensor_aliases(fn: Function, name: str) -> set[str]:
    """``name`` and every variable of ``fn`` that names the same tensor."""
    names, grew = {name}, True
    while grew:
        size = len(names)
        for s in nodes_of(fn, For):
            for it, result in zip(s.iter_args, s.results):
                if isinstance(it.init, Var) and it.init.name in names:
                    names |= {it.var.name, result.name}
        for branch in nodes_of(fn, If):
            yields = [
                b[-1].values for b in (branch.then_body, branch.else_body) if b and isinstance(b[-1], Yield)
            ]
            for i, result in enumerate(branch.results):
                values = [y[i] for y in yields]
                if len(values) == 2 and all(isinstance(v, Var) and v.name in names for v in values):
                    names.add(result.name)
        for a in nodes_of(fn, Assign):
            v = a.value
            source = v.arg(_WRITES[v.op]) if isinstance(v, Call) and v.op in _WRITES else v
            if isinstance(source, Var) and source.name in names:
                names.add(a.var.name)
        grew = len(names) > size
    return names


def written_arguments(params: Sequence[Param], args: Sequence[Expr]) -> list[Var]:
    """The tensors a call writes, in order: its arguments for pl.Out / pl.InOut parameters. A
    kernel call's value names the first (``c = kernel(a, c)``)."""
    written = (Direction.Out, Direction.InOut)
    return [a for p, a in zip(params, args) if p.direction in written and isinstance(a, Var)]
