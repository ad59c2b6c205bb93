"""OutlineIncoreScopes: each ``pl.at(level=CORE_GROUP)`` scope becomes an InCore function.

The scope's free variables become the kernel's parameters (tensors In/Out/InOut by how the
body uses them, scalars In), and the scope is replaced by a call — one task. The kernel is
AIC when it touches the cube side (Mat/Left/Right/Acc or a cube op), AIV otherwise; a scope
for a whole cluster (see ``_clustered``) becomes a Group function holding the scope, which
SplitClusterKernels turns into an AIC and an AIV kernel. A kernel written as an InCore function
gets its core kind the same way (one doing both kinds of work is refused at its first vector op).
Test: tests/passes/test_outline_incore_scopes.py
"""

from __future__ import annotations

import dataclasses

from pypto.errors import CompileError
from pypto.ir.enums import Direction, FunctionType
from pypto.ir.expr import Call, FuncCall, Var
from pypto.ir.names import NameSupply
from pypto.ir.ops import get_op
from pypto.ir.stmt import Assign, Eval, For, Function, If, Param, Program, Scope, Stmt, TaskRegion, Yield
from pypto.ir.types import TensorType, VoidType
from pypto.ir.visit import nodes_of, walk
from pypto.passes._cluster_pipes import crossing
from pypto.passes._cluster_sides import TENSOR_WRITES
from pypto.passes._scan import defined_names, with_functions
from pypto.passes._split_mixed import cube_work, out_of_order, split_mixed, vector_work
from pypto.passes._tensor_matmul import fixpipe_casts

# write part of the tensor (one element, a counter): the rest is kept (InOut)
_PARTIAL = {"tensor.write", "system.syncall"}


def tensor_aliases(body: tuple[Stmt, ...]) -> dict[str, str]:
    """Tensor names that denote one tensor: ``t2 = pl.store(..., t)``, ``t2 = t``, and
    loop-carried / if-merged tensors (``out = pl.store(..., out)`` in a loop)."""
    parent: dict[str, str] = {}

    def find(n: str) -> str:
        while n in parent:
            n = parent[n]
        return n

    def join(a: object, b: object) -> None:
        if isinstance(a, Var) and isinstance(b, Var) and find(a.name) != find(b.name):
            parent[find(b.name)] = find(a.name)

    for node in walk(body):
        if isinstance(node, Assign) and isinstance(node.var.type, TensorType):
            v = node.value
            join(v.arg(TENSOR_WRITES[v.op]) if isinstance(v, Call) and v.op in TENSOR_WRITES else v, node.var)
        elif isinstance(node, For):
            last = node.body[-1] if node.body else None
            yields = last.values if isinstance(last, Yield) else ()
            for it, r, y in zip(node.iter_args, node.results, yields):
                if isinstance(it.var.type, TensorType):
                    for other in (it.init, r, y):
                        join(it.var, other)
        elif isinstance(node, If):
            for branch in (node.then_body, node.else_body):
                last = branch[-1] if branch else None
                for r, y in zip(node.results, last.values if isinstance(last, Yield) else ()):
                    if isinstance(r.type, TensorType):
                        join(r, y)
    return {n: find(n) for n in parent}


def _directions(body: tuple[Stmt, ...]) -> dict[str, Direction]:
    """Per tensor name: written by the body, read, or both (through any alias)."""
    alias = tensor_aliases(body)
    written: set[str] = set()
    read: set[str] = set()
    for call in nodes_of(body, Call):
        params = get_op(call.op).params
        for p, a in zip(params, call.args):
            if isinstance(a, Var) and isinstance(a.type, TensorType):
                root = alias.get(a.name, a.name)
                (written if TENSOR_WRITES.get(call.op) == p.name else read).add(root)
                if call.op in _PARTIAL:
                    read.add(root)
    names = set(alias) | written | read
    out = {}
    for n in names:
        root = alias.get(n, n)
        w, r = root in written, root in read
        out[n] = Direction.InOut if w and r else Direction.Out if w else Direction.In
    return out


def _kind(body: tuple[Stmt, ...]) -> FunctionType:
    """AIC for cube work, AIV otherwise (a scope needing both was split or refused before)."""
    return FunctionType.AIC if cube_work(body, fixpipe_casts(body)) else FunctionType.AIV


def _typed(fn: Function) -> Function:
    """A kernel written as an InCore function: AIC or AIV by its work, as an outlined scope
    (a hand-written one keeps its kind: its body is not known here)."""
    if fn.external_source is not None:
        return fn
    folded = fixpipe_casts(fn.body)
    vector = vector_work(fn.body, folded)
    if vector is not None and cube_work(fn.body, folded):
        raise CompileError(
            f"kernel `{fn.name}` does cube work and vector work, which run on different cores: "
            "split it into two kernels, or write it as a pl.at scope (the compiler splits those)",
            vector.span,
        )
    return dataclasses.replace(fn, kind=_kind(fn.body))


def _clustered(scope: Scope) -> bool:
    """A scope for a whole cluster: ``pl.cluster``, a ``pl.split`` request, tiles moving
    between the cube and vector sides, or tile-level cube work after vector work
    (SplitClusterKernels turns it into two kernels of one task)."""
    return (
        scope.cluster
        or scope.split is not None
        or any(crossing(s) for s in walk(scope.body) if isinstance(s, Assign))
        or out_of_order(scope)
    )


def _free_vars(body: tuple[Stmt, ...]) -> list[Var]:
    inner, seen, free = defined_names(body), set(), []
    for node in walk(body):
        if isinstance(node, Var) and node.name not in inner and node.name not in seen:
            seen.add(node.name)
            free.append(node)
    return free


class _Outliner:
    def __init__(self, entry: Function, reserved: set[str]) -> None:
        self.entry = entry
        self.reserved = reserved  # every function name of the program, and each kernel's as made
        self.names = NameSupply(defined_names(entry.body) | {p.var.name for p in entry.params})
        self.kernels: list[Function] = []

    def kernel(self, scope: Scope) -> tuple[Function, list[Var]]:
        free = _free_vars(scope.body)
        directions = _directions(scope.body)
        params = tuple(Param(v, directions.get(v.name, Direction.In), span=v.span) for v in free)
        name = scope.name_hint or f"{self.entry.name}_incore_{len(self.kernels)}"
        if name in self.reserved:  # a hint may repeat, or name the enclosing function itself
            base, k = name, len(self.kernels)
            while f"{base}_{k}" in self.reserved:
                k += 1
            name = f"{base}_{k}"
        self.reserved.add(name)
        if _clustered(scope):  # the Group keeps the scope: its split mode and explicit form
            inner = dataclasses.replace(scope, name_hint=None, deps=(), handle=None)
            fn = Function(name, params, FunctionType.Group, (inner,), span=scope.span)
        else:
            fn = Function(name, params, _kind(scope.body), scope.body, span=scope.span)
        self.kernels.append(fn)
        return fn, free

    def block(self, body: tuple[Stmt, ...], after: tuple[Stmt, ...]) -> tuple[Stmt, ...]:
        out: list[Stmt] = []
        for i, s in enumerate(body):
            rest = body[i + 1 :] + after
            if isinstance(s, Scope):
                prelude, parts = ([], [s]) if _clustered(s) else split_mixed(s, self.names)
                out.extend(prelude)
                for j, p in enumerate(parts):
                    out.extend(self.call(p, tuple(parts[j + 1 :]) + rest))
            elif isinstance(s, (For, TaskRegion)):
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

    def call(self, scope: Scope, rest: tuple[Stmt, ...]) -> list[Stmt]:
        fn, free = self.kernel(scope)
        later = {v.name for v in nodes_of(rest, Var)}
        escaping = [n for n in sorted(defined_names(scope.body)) if n in later]
        call = FuncCall(
            fn.name,
            tuple(free),
            VoidType(),
            scope.handle,
            scope.deps,
            scope.blocks,
            scope.early_resolve,
            scope.no_dep,
            scope.dep_values,
            scope.sync_start,
            span=scope.span,
        )
        if not escaping:
            return [Eval(call, span=scope.span)]
        var = next(v for v in nodes_of(scope.body, Var) if v.name == escaping[0])
        writes = [p for p in fn.params if p.direction in (Direction.Out, Direction.InOut)]
        if len(escaping) == 1 and isinstance(var.type, TensorType) and len(writes) <= 1:
            return [Assign(var, dataclasses.replace(call, type=var.type), span=scope.span)]
        # several tensors written by the scope: after the task, each name used later stands for
        # the tensor it wrote (`r = call` would leave which one to guess)
        alias = tensor_aliases(scope.body)
        outer = {alias.get(v.name, v.name): v for v in free if isinstance(v.type, TensorType)}
        written = [alias.get(n, n) for n in escaping]
        if not all(w in outer for w in written):
            raise CompileError(
                f"value(s) {', '.join(escaping)} computed inside a pl.at scope are used after "
                "it; only tensors written by the scope may flow out",
                scope.span,
            )
        defs = {v.name: v for v in nodes_of(scope.body, Var) if v.name in escaping}
        renamed = [Assign(defs[n], outer[w], span=scope.span) for n, w in zip(escaping, written)]
        return [Eval(call, span=scope.span), *renamed]


def outline_incore_scopes(program: Program) -> Program:
    """Outline every CORE_GROUP scope of orchestration functions into an InCore function."""
    functions: list[Function] = []
    reserved = {fn.name for fn in program.functions}
    for fn in program.functions:
        if fn.kind is FunctionType.InCore:
            functions.append(_typed(fn))
            continue
        if fn.kind is not FunctionType.Orchestration:
            functions.append(fn)
            continue
        outliner = _Outliner(fn, reserved)
        functions.append(dataclasses.replace(fn, body=outliner.block(fn.body, ())))
        functions.extend(outliner.kernels)
    return with_functions(program, tuple(functions))
