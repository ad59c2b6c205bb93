"""FoldTileSlices: a slice of a Mat or Acc tile becomes the windowed move that consumes it.

``pl.move(pl.slice(a_l1, [128, 64], [0, k0]), target_memory=pl.Mem.Left)`` is one
instruction on the hardware — the L1 → L0 extract on MTE1 (``TEXTRACT``) — not a copy into
a new L1 tile and then a move. The frontend binds the slice to a temporary, so this pass
finds each ``tile.slice`` of a tile outside Vec and rewrites every ``tile.move`` of it into a
``tile.extract`` of the source window; the slice itself disappears. A slice of a Vec tile is
a real VECTOR copy and stays. Any other use of a Mat/Acc/Left/Right slice is refused with
what to write instead. Runs right after LowerTensorOps, before pipelining clones bodies.
Test: tests/passes/test_fold_tile_slices.py
"""

from __future__ import annotations

import dataclasses

from pypto.errors import TypeCheckError
from pypto.ir.bind import bind_call
from pypto.ir.enums import MemorySpace
from pypto.ir.expr import Call, ListExpr, Literal, Var
from pypto.ir.stmt import Assign, For, Function, If, Program, Stmt
from pypto.ir.types import TileType
from pypto.ir.visit import nodes_of

_USE_HINT = {
    MemorySpace.Mat: "move it to Left/Right with pl.move (the L1 → L0 extract)",
    MemorySpace.Acc: "move it to Mat with pl.move, or store the whole Acc tile into a window of the tensor",
    MemorySpace.Left: "slice the Mat tile before moving it to Left",
    MemorySpace.Right: "slice the Mat tile before moving it to Right",
}


def _window_slice(s: Stmt) -> Call | None:
    """The ``tile.slice`` call of ``s`` when it slices a tile outside Vec."""
    if not (isinstance(s, Assign) and isinstance(s.value, Call) and s.value.op == "tile.slice"):
        return None
    t = s.value.arg("x").type
    return s.value if isinstance(t, TileType) and t.memory not in (None, MemorySpace.Vec) else None


class _Folder:
    def __init__(self) -> None:
        self.slices: dict[str, Call] = {}

    def block(self, body: tuple[Stmt, ...]) -> tuple[Stmt, ...]:
        out: list[Stmt] = []
        for s in body:
            call = _window_slice(s)
            if call is not None:
                self.slices[s.var.name] = call  # type: ignore[union-attr]
                continue
            out.append(self.stmt(s))
        return tuple(out)

    def stmt(self, s: Stmt) -> Stmt:
        if isinstance(s, For):
            return dataclasses.replace(s, body=self.block(s.body))
        if isinstance(s, If):
            return dataclasses.replace(
                s, then_body=self.block(s.then_body), else_body=self.block(s.else_body)
            )
        if isinstance(s, Assign) and isinstance(s.value, Call) and s.value.op == "tile.move":
            src = s.value.arg("tile")
            if isinstance(src, Var) and src.name in self.slices:
                return dataclasses.replace(s, value=self.extract(self.slices[src.name], s))
        self.refuse_other_uses(s)
        return s

    def extract(self, sl: Call, move: Assign) -> Call:
        if not (isinstance(sl.arg("valid_shape"), Literal) and sl.arg("valid_shape").value is None):
            raise TypeCheckError(
                "valid_shape on a slice of a cube-side tile is not supported: the L0 tile it feeds "
                "is whole; load the ragged tail with pl.load(..., valid_shape=...) instead",
                move.span,
            )
        offset = sl.arg("offset")
        assert isinstance(offset, ListExpr)
        row, col = offset.items if len(offset.items) == 2 else (0, offset.items[0])
        target = move.value.arg("target_memory")  # type: ignore[union-attr]
        call, _ = bind_call(
            "tile.extract",
            (sl.arg("x"), row, col, sl.arg("shape")),
            {"target_memory": target},
            span=move.span,
            display="pl.move(pl.slice(...))",
        )
        return call

    def refuse_other_uses(self, s: Stmt) -> None:
        for v in nodes_of(s, Var):
            if v.name in self.slices:
                src = self.slices[v.name].arg("x")
                space = src.type.memory  # type: ignore[union-attr]
                raise TypeCheckError(
                    f"`{v.name}` is a window of the {space.dsl_name} tile `{src.name}`; such a slice "  # type: ignore
                    f"can only feed a windowed move: {_USE_HINT[space]}",
                    s.span,
                )


def _fold(fn: Function) -> Function:
    return dataclasses.replace(fn, body=_Folder().block(fn.body))


def fold_tile_slices(program: Program) -> Program:
    """Every ``tile.move`` of a Mat/Acc slice becomes a ``tile.extract``; the slices go."""
    return dataclasses.replace(program, functions=tuple(_fold(fn) for fn in program.functions))
