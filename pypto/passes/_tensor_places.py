"""Where a kernel's tensor-level values live on chip (private to ConvertTensorToTileOps).

A tensor-level value computed in a kernel becomes a tile, and a tile has one memory space.
Most values say where by the op that makes them (a matmul result is in Acc, a vector result
in Vec), but a kernel-local ``pl.create_tensor`` does not: it takes the space of the values
it is merged with, around a loop (``acc`` carried by ``pl.range``) or across the branches of
an ``if`` (``acc = pl.matmul(...)`` / ``acc = pl.matmul_acc(acc, ...)``). Values merged that
way are one storage, so they are grouped (union-find) and each group gets one space.
"""

from __future__ import annotations

from collections.abc import Iterable

from pypto.errors import CompileError, SourceSpan
from pypto.ir.enums import MemorySpace
from pypto.ir.expr import Call, Var
from pypto.ir.stmt import Assign, For, If, Stmt, Yield
from pypto.ir.types import TensorType
from pypto.ir.visit import walk

_CUBE = ("tensor.matmul", "tensor.matmul_acc")
# Ops whose tensor result is a window of GM (a view), or a new GM tensor: no tile space here.
_NOT_ON_CHIP = ("tensor.slice", "tensor.assemble")


class _Groups:
    def __init__(self) -> None:
        self.parent: dict[str, str] = {}
        # root -> (its space, where that was decided); None: on chip, not decided yet (a create)
        self.space: dict[str, tuple[MemorySpace | None, SourceSpan | None]] = {}

    def find(self, a: str) -> str:
        while self.parent.get(a, a) != a:
            a = self.parent[a]
        return a

    def union(self, a: str, b: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[ra] = rb
            if ra in self.space:
                self.mark(rb, *self.space.pop(ra))

    def mark(self, name: str, space: MemorySpace | None, span: SourceSpan | None) -> None:
        root = self.find(name)
        known = self.space.get(root)
        if known is None or known[0] is None:
            self.space[root] = (space, span) if space is not None or known is None else known
            return
        if space is not None and known[0] is not space:
            raise CompileError(
                f"a kernel-local tensor is merged (around a loop or across an if) from a value in "
                f"{known[0].dsl_name} (at {known[1]}) and one in {space.dsl_name}: one storage cannot "
                "be in both; make the paths agree (e.g. both matmul results, or both vector results)",
                span,
            )


def _merge(groups: _Groups, targets: Iterable[Var], body: tuple[Stmt, ...]) -> None:
    """The names ``targets`` stand for the values ``body``'s trailing Yield gives."""
    if body and isinstance(body[-1], Yield):
        for t, v in zip(targets, body[-1].values):
            if isinstance(v, Var) and isinstance(t.type, TensorType):
                groups.union(v.name, t.name)


def _visit(groups: _Groups, node: object) -> None:
    if isinstance(node, Assign) and isinstance(node.value, Call) and node.value.op.startswith("tensor."):
        op = node.value.op
        if op == "tensor.create":
            groups.mark(node.var.name, None, node.span)
        elif op == "tensor.create_l1":
            groups.mark(node.var.name, MemorySpace.Mat, node.span)
        elif op == "tensor.gather_row" and isinstance(acc := node.value.arg("acc"), Var):
            groups.union(acc.name, node.var.name)  # rows written into the L1 accumulator
        elif op in _CUBE:
            groups.mark(node.var.name, MemorySpace.Acc, node.span)
            if op == "tensor.matmul_acc":
                acc = node.value.arg("acc")
                if isinstance(acc, Var):
                    groups.union(acc.name, node.var.name)
        elif op == "tensor.assemble" and isinstance(target := node.value.arg("target"), Var):
            groups.union(target.name, node.var.name)  # the target, written
        elif op not in _NOT_ON_CHIP:
            groups.mark(node.var.name, MemorySpace.Vec, node.span)
    elif isinstance(node, Assign) and isinstance(node.value, Var) and isinstance(node.var.type, TensorType):
        groups.union(node.value.name, node.var.name)
    elif isinstance(node, For):
        for it in node.iter_args:
            if isinstance(it.var.type, TensorType) and isinstance(it.init, Var):
                groups.union(it.init.name, it.var.name)
        _merge(groups, [it.var for it in node.iter_args], node.body)
        for r, it in zip(node.results, node.iter_args):
            if isinstance(r.type, TensorType):
                groups.union(it.var.name, r.name)
    elif isinstance(node, If):
        _merge(groups, node.results, node.then_body)
        _merge(groups, node.results, node.else_body)


def local_places(body: tuple[Stmt, ...]) -> dict[str, MemorySpace]:
    """The memory space of every tensor-level value of ``body`` that lives on chip: its
    group's, Vec for a group no op decides (a ``pl.create_tensor`` only vector ops read).
    Names of GM tensors (parameters, their windows, what is stored into them) are absent."""
    groups = _Groups()
    for node in walk(body):
        _visit(groups, node)
    places = {}
    for name in {*groups.parent, *groups.parent.values(), *groups.space}:
        known = groups.space.get(groups.find(name))
        if known is not None:
            places[name] = known[0] or MemorySpace.Vec
    return places
