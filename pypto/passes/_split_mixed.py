"""Which side of the core a scope's work needs, and the split of a scope that needs both
(private to OutlineIncoreScopes).

An AIC core has the cube and no Vec buffer, an AIV core the reverse, so one kernel cannot do
both. A scope that is a run of cube statements followed by a run of vector statements — a
matmul and its epilogue — becomes two scopes: values the vector run needs from the cube run
cross through GM (a ``pl.create_tensor`` intermediate the cube scope assembles into), scalars
are recomputed, tensors the cube run wrote are read back by name. Any other order (cube work
after vector work, or both in one loop) is no two-task split: OutlineIncoreScopes makes the
scope a cluster kernel (``out_of_order``), which SplitClusterKernels splits by core.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable

from pypto.errors import CompileError, SourceSpan
from pypto.ir.bind import bind_call
from pypto.ir.enums import MemorySpace, Pipe
from pypto.ir.expr import Call, Var, as_expr, make_binop, shaped_type
from pypto.ir.names import NameSupply
from pypto.ir.op_levels import tile_form
from pypto.ir.ops import get_op
from pypto.ir.stmt import Assign, For, If, Scope, Stmt
from pypto.ir.types import INDEX_TYPE, ScalarType, TensorType, TileType
from pypto.ir.visit import nodes_of, rewrite, walk
from pypto.passes._cluster_sides import CUBE_SPACES
from pypto.passes._scan import defined_names
from pypto.passes._tensor_matmul import fixpipe_casts

_VIEWS_AND_WRITES = ("tensor.slice", "tensor.assemble", "tile.store")  # values naming a tensor in GM


def cube_work(node: object, folded: frozenset[str] = frozenset()) -> bool:
    """A cube op, a tile in a cube-side space, or a cast FIXPIPE does (``folded``:
    ``fixpipe_casts`` of the scope)."""
    return (
        any(c.op.startswith(("tile.matmul", "tensor.matmul")) for c in nodes_of(node, Call))
        or any(isinstance(v.type, TileType) and v.type.memory in CUBE_SPACES for v in nodes_of(node, Var))
        or bool(_fixpipe_calls(node, folded))
    )


def _fixpipe_calls(node: object, folded: frozenset[str]) -> set[int]:
    """The ids of the casts in ``node`` that FIXPIPE does (``folded``: their names)."""
    if not folded:
        return set()
    return {id(s.value) for s in walk(node) if isinstance(s, Assign) and s.var.name in folded}


def vector_work(node: object, folded: frozenset[str] = frozenset()) -> Call | None:
    """The first vector op (tile op on the VECTOR pipe, or a tensor-level elementwise op other
    than a cast FIXPIPE does: ``folded``)."""
    fixpipe = _fixpipe_calls(node, folded)
    for c in nodes_of(node, Call):
        if id(c) in fixpipe:
            continue
        if c.op.startswith("tile.") and get_op(c.op).pipe(_arg_types(c)) is Pipe.VECTOR:
            return c
        form = tile_form(c.op)
        if form is not None and get_op(form).pipe({}) is Pipe.VECTOR:  # a tensor-level vector op
            return c
        if c.op == "tensor.full":  # becomes a Vec tile.full: only the vector core has a fill
            return c
    return None


def _arg_types(c: Call) -> dict:
    return {p.name: getattr(a, "type", None) for p, a in zip(get_op(c.op).params, c.args)}


def _vec_side(s: Stmt, folded: frozenset[str]) -> bool:
    """Vector work, or a tile in Vec (which an AIC core does not have)."""
    tiles = [v.type for v in nodes_of(s, Var) if isinstance(v.type, TileType)]
    return any(t.memory is MemorySpace.Vec for t in tiles) or vector_work(s, folded) is not None


def _sides(scope: Scope) -> list[tuple[bool, bool]]:
    """Per statement of the scope: (cube work, vector work)."""
    folded = fixpipe_casts(scope.body)
    return [(cube_work(s, folded), _vec_side(s, folded)) for s in scope.body]


def out_of_order(scope: Scope) -> bool:
    """Cube work after vector work (or both in one loop): not a two-task split, but a
    cluster kernel (both sides in one task, values crossing through pipes)."""
    sides = _sides(scope)
    if not any(c for c, _ in sides) or not any(v for _, v in sides):
        return False
    cut = next(i for i, (_, v) in enumerate(sides) if v)
    return any(c for c, _ in sides[cut:])


def split_mixed(scope: Scope, names: NameSupply) -> tuple[list[Stmt], list[Scope]]:
    """(orchestration statements to put first, the scopes) for one ``pl.at`` scope: itself
    alone unless it mixes cube and vector work. ``names``: the function's name supply."""
    sides = _sides(scope)
    if not any(c for c, _ in sides) or not any(v for _, v in sides):
        return [], [scope]
    cut = next(i for i, (_, v) in enumerate(sides) if v)  # in order: see out_of_order
    return _Splitter(scope, cut, names).run()


def _recomputable(s: Assign) -> bool:
    """Index math or a window of a tensor: cheap to redo on the other side, never a value."""
    if isinstance(s.var.type, ScalarType):
        return True
    return isinstance(s.value, Call) and s.value.op == "tensor.slice"


def _renamed(subst: dict[str, Var]) -> Callable[[object], Var | None]:
    """A rewrite that replaces the uses of the names in ``subst``."""
    return lambda x: subst.get(x.name) if isinstance(x, Var) else None


class _Splitter:
    def __init__(self, scope: Scope, cut: int, names: NameSupply) -> None:
        self.scope, self.names = scope, names
        self.cube, self.vector = list(scope.body[:cut]), list(scope.body[cut:])
        self.prelude: list[Stmt] = []
        self.vector_head: list[Stmt] = []  # the per-block views of the GM intermediates

    def fresh(self, base: str) -> str:
        return self.names.fresh(base)

    def run(self) -> tuple[list[Stmt], list[Scope]]:
        defs = {s.var.name: s for s in self.cube if isinstance(s, Assign)}
        needed = {v.name for v in nodes_of(tuple(self.vector), Var)} & defined_names(tuple(self.cube))
        recomputed, subst = [], {}
        for r in self._carried_tensors(needed):  # an accumulator a loop (or an if) leaves
            subst[r.name] = self.through_gm(r)
        for name in self._in_order(needed, defs):
            s = defs[name]
            if _recomputable(s):  # index math and windows: redone (renamed) on the vector side
                subst[name] = dataclasses.replace(s.var, name=self.fresh(name))
                recomputed.append(Assign(subst[name], s.value, span=s.span))
            elif isinstance(s.var.type, TensorType) and self._computed(s):
                subst[name] = self.through_gm(s.var)
            elif not isinstance(s.var.type, TensorType):
                raise CompileError(
                    f"the vector part of this pl.at scope uses `{name}`, a tile computed on the "
                    "cube side; store it to a tensor (pl.store) and load it in the vector part",
                    s.span,
                )

        vector = self.vector_head + [rewrite(s, _renamed(subst)) for s in recomputed + self.vector]
        return self.prelude, [self.part(self.cube, "cube"), self.part(vector, "vector")]

    def part(self, body: list[Stmt], side: str) -> Scope:
        """One side's scope: the same level, handle and deps; the name hint gets the side."""
        hint = self.scope.name_hint
        return dataclasses.replace(self.scope, body=tuple(body), name_hint=hint and f"{hint}_{side}")

    def _in_order(self, needed: set[str], defs: dict[str, Assign]) -> Iterable[str]:
        """The needed names defined at the top of the cube run (loop results pass by name), with
        the scalars the needed scalars depend on, in definition order."""
        grow = {n for n in needed if n in defs}
        while True:
            more = {
                v.name
                for n in grow
                if _recomputable(defs[n])
                for v in nodes_of(defs[n].value, Var)
                if v.name in defs
            }
            if more <= grow:
                return [n for n in defs if n in grow]
            grow |= more

    def _carried_tensors(self, needed: set[str]) -> list[Var]:
        """The tensor-level values the vector run needs that a cube-run loop or if results in."""
        return [
            r
            for s in self.cube
            if isinstance(s, (For, If))
            for r in s.results
            if r.name in needed and isinstance(r.type, TensorType)
        ]

    @staticmethod
    def _computed(s: Assign) -> bool:
        """A new tensor value (a tensor-level matmul ...), not a window of / write into a tensor."""
        return isinstance(s.value, Call) and s.value.op not in _VIEWS_AND_WRITES

    def through_gm(self, value: Var) -> Var:
        """A GM intermediate created before the scopes; the cube scope assembles `value` into it.
        The blocks of a ``pl.spmd`` scope run at once, so each gets its own rows of it: the
        intermediate stacks ``blocks`` copies on its first axis, block b's at b times the rows."""
        t = shaped_type(value)
        span = value.span
        blocks = self.scope.blocks
        shape = list(t.shape) if blocks == 1 else [_stacked_rows(blocks, t.shape[0], value), *t.shape[1:]]
        gm = Var(self.fresh(f"{value.name}_gm"), TensorType(tuple(shape), t.dtype), span=span)
        call, _ = bind_call("tensor.create", [shape, t.dtype], {}, span=span)
        self.prelude.append(Assign(gm, call, span=span))
        stored = Var(self.fresh(gm.name), gm.type, span=span)
        call, _ = bind_call(
            "tensor.assemble", [gm, value, self.block_rows(self.cube, t, span)], {}, span=span
        )
        self.cube.append(Assign(stored, call, span=span))
        if blocks == 1:
            return stored
        view = Var(self.fresh(value.name), TensorType(t.shape, t.dtype), span=span)
        call, _ = bind_call(
            "tensor.slice", [stored, list(t.shape), self.block_rows(self.vector_head, t, span)], {}, span=span
        )
        self.vector_head.append(Assign(view, call, span=span))
        return view

    def block_rows(self, side: list[Stmt], t: TensorType | TileType, span: SourceSpan | None) -> list:
        """The offset of this block's rows in an intermediate (zero for one block); the block
        index it needs is read on ``side``."""
        offset: list = [0] * len(t.shape)
        if self.scope.blocks != 1:
            idx = Var(self.fresh("block"), INDEX_TYPE, span=span)
            call, _ = bind_call("tile.get_block_idx", [], span=span)
            side.append(Assign(idx, call, span=span))
            offset[0] = make_binop("*", idx, as_expr(t.shape[0]), span=span)
        return offset


def _stacked_rows(blocks: object, rows: object, value: Var) -> int:
    """The rows of an intermediate holding every block's ``value``: a compile-time size."""
    if isinstance(blocks, int) and isinstance(rows, int):
        return blocks * rows
    raise CompileError(
        f"this pl.spmd body's vector part uses `{value.name}`, computed on the cube side, so each "
        f"block passes it through its own rows of a GM tensor; that needs a compile-time block count "
        f"and a compile-time first dim of `{value.name}`: write the count as an integer, or keep both "
        "sides in one cluster task with optimizations=[pl.split(...)]",
        value.span,
    )
