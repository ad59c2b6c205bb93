"""FoldTileSlices: a slice of a Mat or Acc tile becomes the windowed move that consumes it.

``pl.move(pl.slice(a_l1, [128, 64], [0, k0]), target_memory=pl.Mem.Left)`` is one
instruction on the hardware — the L1 → L0 extract on MTE1 (``TEXTRACT``) — not a copy into
a new L1 tile and then a move. The frontend binds the slice to a temporary, so this pass
finds each ``tile.slice`` of a tile outside Vec and rewrites every ``tile.move`` of it into a
``tile.extract`` of the source window. A slice with other uses (a store of an Acc window, a
matmul on a row band of L0A) stays as a *view* of its source's storage (``TWINDOW``), when
the window is one: whole-width 16-row bands of Left/Right, any aligned window of Mat/Acc;
otherwise it is refused at its line with what to write instead. A slice with no other use
disappears. A Vec slice is a real VECTOR copy and stays. Runs right after ConvertTensorToTileOps,
before pipelining clones bodies.
Test: tests/passes/test_fold_tile_slices.py
"""

from __future__ import annotations

import dataclasses

from pypto.errors import TypeCheckError
from pypto.ir.bind import bind_call
from pypto.ir.enums import MemorySpace
from pypto.ir.expr import Call, Const, Literal, Var, tile_type, type_of
from pypto.ir.stmt import Assign, Eval, For, Function, If, Program, Stmt, Yield
from pypto.ir.types import TileType
from pypto.ir.visit import nodes_of, walk
from pypto.passes._scan import with_functions

_USE_HINT = {
    MemorySpace.Mat: "move it to Left/Right with pl.move (the L1 → L0 extract)",
    MemorySpace.Acc: "move it to Mat with pl.move, or store the whole Acc tile into a window of the tensor",
    MemorySpace.Left: "slice the Mat tile before moving it to Left",
    MemorySpace.Right: "slice the Mat tile before moving it to Right",
}


def _window_slice(s: Stmt) -> tuple[str, Call] | None:
    """The name and the ``tile.slice`` call of ``s`` when it slices a placed tile outside Vec."""
    if not (isinstance(s, Assign) and isinstance(s.value, Call) and s.value.op == "tile.slice"):
        return None
    t = type_of(s.value.arg("x"))
    placed = isinstance(t, TileType) and t.memory not in (None, MemorySpace.Vec)
    return (s.var.name, s.value) if placed else None


class _Folder:
    def __init__(self, fn: Function) -> None:
        self.slices: dict[str, Call] = {}
        self.viewed: set[str] = set()  # slices with uses other than moves: kept as views
        for node in walk(fn.body):
            if isinstance(node, (Assign, Eval, Yield)):
                self.scan(node)

    def scan(self, s: Stmt) -> None:
        window = _window_slice(s)
        if window is not None:
            self.slices[window[0]] = window[1]
            return
        moved = _move_source(s)
        for v in nodes_of(s, Var):
            if v.name in self.slices and v is not moved:
                why = _not_a_view(self.slices[v.name])
                if why:
                    src = self.slices[v.name].var_arg("x")
                    space = tile_type(src).memory
                    assert space is not None  # _window_slice keeps placed tiles only
                    raise TypeCheckError(
                        f"`{v.name}` is a window of the {space.dsl_name} tile `{src.name}` that {why}; "
                        f"such a slice can feed a windowed move: {_USE_HINT[space]}",
                        s.span,
                    )
                self.viewed.add(v.name)

    def block(self, body: tuple[Stmt, ...]) -> tuple[Stmt, ...]:
        out: list[Stmt] = []
        for s in body:
            window = _window_slice(s)
            if window is not None and window[0] not in self.viewed:
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
        src = _move_source(s)
        if isinstance(s, Assign) and src is not None and src.name in self.slices:
            return dataclasses.replace(s, value=self.extract(self.slices[src.name], s))
        return s

    def extract(self, sl: Call, move: Assign) -> Call:
        valid = sl.arg("valid_shape")
        if not (isinstance(valid, Literal) and valid.value is None):
            raise TypeCheckError(
                "valid_shape on a slice of a cube-side tile is not supported: the L0 tile it feeds "
                "is whole; load the ragged tail with pl.load(..., valid_shape=...) instead",
                move.span,
            )
        offset = sl.list_arg("offset").items
        row, col = offset if len(offset) == 2 else (0, offset[0])
        assert isinstance(move.value, Call)  # a tile.move: _move_source found it
        target = move.value.arg("target_memory")
        call, _ = bind_call(
            "tile.extract",
            (sl.arg("x"), row, col, sl.arg("shape")),
            {"target_memory": target},
            span=move.span,
            display="pl.move(pl.slice(...))",
        )
        return call


def _move_source(s: Stmt) -> Var | None:
    """The tile a ``tile.move`` statement moves out of a Mat or Acc tile (an extract)."""
    if isinstance(s, Assign) and isinstance(s.value, Call) and s.value.op == "tile.move":
        src = s.value.arg("tile")
        return src if isinstance(src, Var) else None
    return None


def _not_a_view(sl: Call) -> str:
    """Why this slice cannot be a view of its source's storage ('' when it can)."""
    t = tile_type(sl.arg("x"))
    sizes = [int(i.value) for i in sl.list_arg("shape").items if isinstance(i, Const)]  # a SHAPE: all Const
    offs = [o.value if isinstance(o, Const) else None for o in sl.list_arg("offset").items]
    if len(sizes) != 2 or not (isinstance(sl.arg("valid_shape"), Literal)):
        return "is not a 2-D window"
    if t.memory in (MemorySpace.Left, MemorySpace.Right):
        aligned = offs[0] is None or offs[0] % 16 == 0
        if sizes[1] != t.shape[1] or sizes[0] % 16 or not aligned:
            return "is not a whole-width band of 16-row fractals"
    elif offs[1] is not None and (offs[1] * t.dtype.itemsize) % 32:
        return f"starts at column {offs[1]}, off the 32-byte alignment"
    return ""


def _fold(fn: Function) -> Function:
    return dataclasses.replace(fn, body=_Folder(fn).block(fn.body))


def fold_tile_slices(program: Program) -> Program:
    """Every ``tile.move`` of a Mat/Acc slice becomes a ``tile.extract``; slices used
    otherwise stay as views, the others go."""
    return with_functions(program, tuple(_fold(fn) for fn in program.functions))
