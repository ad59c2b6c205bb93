"""OutlineIncoreScopes: each ``pl.at(level=CORE_GROUP)`` scope becomes an InCore function.

The scope's free variables become the kernel's parameters (tensors In/Out/InOut by how the
body uses them, scalars In), and the scope is replaced by a call — one task. The kernel is
AIC when it touches the cube side (Mat/Left/Right/Acc or a cube op), AIV otherwise.
Test: tests/passes/test_outline_incore_scopes.py
"""

from __future__ import annotations

import dataclasses

from pypto.errors import CompileError
from pypto.ir.enums import Direction, FunctionType, MemorySpace
from pypto.ir.expr import Call, FuncCall, Var
from pypto.ir.stmt import Assign, Eval, For, Function, If, Param, Program, Scope, Stmt
from pypto.ir.types import TensorType, TileType, VoidType
from pypto.ir.visit import nodes_of, walk
from pypto.passes._scan import defined_names

_CUBE_SPACES = {MemorySpace.Mat, MemorySpace.Left, MemorySpace.Right, MemorySpace.Acc, MemorySpace.Bias}
_WRITES = {"tile.store": "output_tensor", "tensor.assemble": "target"}


def _direction(name: str, body: tuple[Stmt, ...]) -> Direction:
    written = read = False
    for call in nodes_of(body, Call):
        target = _WRITES.get(call.op)
        for arg in call.args:
            if isinstance(arg, Var) and arg.name == name:
                is_target = target is not None and call.arg(target) is arg
                written |= is_target
                read |= not is_target
    return Direction.InOut if written and read else Direction.Out if written else Direction.In


def _kind(body: tuple[Stmt, ...]) -> FunctionType:
    for v in nodes_of(body, Var):
        if isinstance(v.type, TileType) and v.type.memory in _CUBE_SPACES:
            return FunctionType.AIC
    if any(c.op.startswith(("tile.matmul", "tensor.matmul")) for c in nodes_of(body, Call)):
        return FunctionType.AIC
    return FunctionType.AIV


def _free_vars(body: tuple[Stmt, ...]) -> list[Var]:
    inner, seen, free = defined_names(body), set(), []
    for node in walk(body):
        if isinstance(node, Var) and node.name not in inner and node.name not in seen:
            seen.add(node.name)
            free.append(node)
    return free


class _Outliner:
    def __init__(self, entry: Function) -> None:
        self.entry = entry
        self.kernels: list[Function] = []

    def kernel(self, scope: Scope) -> tuple[Function, list[Var]]:
        free = _free_vars(scope.body)
        params = tuple(
            Param(
                v,
                _direction(v.name, scope.body) if isinstance(v.type, TensorType) else Direction.In,
                span=v.span,
            )
            for v in free
        )
        name = scope.name_hint or f"{self.entry.name}_incore_{len(self.kernels)}"
        if any(k.name == name for k in self.kernels):
            name = f"{name}_{len(self.kernels)}"
        fn = Function(name, params, _kind(scope.body), scope.body, span=scope.span)
        self.kernels.append(fn)
        return fn, free

    def block(self, body: tuple[Stmt, ...], after: tuple[Stmt, ...]) -> tuple[Stmt, ...]:
        out: list[Stmt] = []
        for i, s in enumerate(body):
            rest = body[i + 1 :] + after
            if isinstance(s, Scope):
                out.append(self.call(s, rest))
            elif isinstance(s, For):
                out.append(dataclasses.replace(s, body=self.block(s.body, rest)))
            elif isinstance(s, If):
                out.append(
                    dataclasses.replace(
                        s, then_body=self.block(s.then_body, rest), else_body=self.block(s.else_body, rest)
                    )
                )
            else:
                out.append(s)
        return tuple(out)

    def call(self, scope: Scope, rest: tuple[Stmt, ...]) -> Stmt:
        fn, free = self.kernel(scope)
        later = {v.name for v in nodes_of(rest, Var)}
        escaping = [n for n in sorted(defined_names(scope.body)) if n in later]
        call = FuncCall(fn.name, tuple(free), VoidType(), span=scope.span)
        if not escaping:
            return Eval(call, span=scope.span)
        var = next(v for v in nodes_of(scope.body, Var) if v.name == escaping[0])
        if len(escaping) > 1 or not isinstance(var.type, TensorType):
            raise CompileError(
                f"value(s) {', '.join(escaping)} computed inside a pl.at scope are used after "
                "it; only a tensor written by the scope may flow out",
                scope.span,
            )
        return Assign(var, dataclasses.replace(call, type=var.type), span=scope.span)


def outline_incore_scopes(program: Program) -> Program:
    """Outline every CORE_GROUP scope of orchestration functions into an InCore function."""
    functions: list[Function] = []
    for fn in program.functions:
        if fn.kind is not FunctionType.Orchestration:
            functions.append(fn)
            continue
        outliner = _Outliner(fn)
        functions.append(dataclasses.replace(fn, body=outliner.block(fn.body, ())))
        functions.extend(outliner.kernels)
    return dataclasses.replace(program, functions=tuple(functions))
