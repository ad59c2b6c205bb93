"""What the memory map draws, computed from a pass dump after address assignment.

Per InCore function: every tile with its planned storage (``pl.MemRef(name, offset, size[,
slots])``) and its lifetime in dump lines (definition to last use, stretched over a whole
loop when used inside a loop it was defined before — the planner's own rule). Tiles bound
to one buffer whose lifetimes touch or overlap merge into one *box* (their names become its
aliases); a tile covering only part of its buffer's bytes, or made by ``tile.reshape`` /
``tile.slice``, is a *view*. Two boxes of different buffers whose bytes and lifetimes both
overlap are a *conflict* — the planner must never produce one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pypto.ir.expr import Call, Var
from pypto.ir.stmt import Assign, For, Function, If, Program, Stmt
from pypto.ir.types import TileType
from pypto.ir.visit import nodes_of, walk
from pypto.passes.memory.storage_groups import CAPACITY_FIELD as CAPACITY_FIELDS

SPACE_ORDER = tuple(CAPACITY_FIELDS)
VIEW_OPS = frozenset({"tile.reshape", "tile.slice"})


class NotAllocated(ValueError):
    """The dump has no planned addresses (PTOAS, or dumped before AllocateMemoryAddr)."""


@dataclass
class Tile:
    name: str
    space: str
    buffer: str
    start: int  # first byte (slot 0)
    end: int  # one past the last byte of the last slot
    slots: int
    slot_bytes: int
    first: int  # dump lines
    last: int
    def_line: int
    view: bool = False
    op: str = ""


@dataclass
class Box:
    """Tiles sharing one buffer over touching lifetimes."""

    id: str
    function: str
    space: str
    buffer: str
    start: int
    end: int
    slots: int
    slot_bytes: int
    first: int
    last: int
    tiles: list[Tile] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)


@dataclass
class FunctionMap:
    name: str
    kind: str
    first: int
    last: int
    boxes: list[Box]
    high_water: dict[str, int]


def _line(node: Any) -> int:
    return node.span.line if getattr(node, "span", None) is not None else 0


def _last_line(stmt: Stmt) -> int:
    return max((_line(n) for n in walk(stmt)), default=_line(stmt))


class _Lives:
    """Definition and use lines of every tile of one function."""

    def __init__(self) -> None:
        self.first: dict[str, int] = {}
        self.last: dict[str, int] = {}
        self.defs: dict[str, tuple[int, TileType, str]] = {}
        self.loops: list[tuple[int, int]] = []

    def touch(self, v: Var, line: int, op: str = "") -> None:
        if not isinstance(v.type, TileType):
            return
        self.first.setdefault(v.name, line)
        self.last[v.name] = max(self.last.get(v.name, line), line)
        self.defs.setdefault(v.name, (line, v.type, op))

    def block(self, body: tuple[Stmt, ...]) -> None:
        for s in body:
            line = _line(s)
            if isinstance(s, For):
                end = _last_line(s)
                for it in s.iter_args:
                    for v in nodes_of(it, Var):
                        self.touch(v, line)
                    self.touch(it.var, end)  # written back by every trip's yield
                self.block(s.body)
                for r in s.results:
                    self.touch(r, end)
                self.loops.append((line, end))
            elif isinstance(s, If):
                self.block(s.then_body)
                self.block(s.else_body)
                for r in s.results:
                    self.touch(r, _last_line(s))
            else:
                if isinstance(s, Assign) and isinstance(s.value, Call):
                    self.touch(s.var, line, s.value.op)
                for v in nodes_of(s, Var):
                    self.touch(v, line)

    def stretch_over_loops(self) -> None:
        for start, end in self.loops:
            for name, first in self.first.items():
                if first < start <= self.last[name]:
                    self.last[name] = max(self.last[name], end)


def function_tiles(fn: Function) -> list[Tile]:
    """Every planned tile of ``fn`` with its lifetime; unplanned tiles are left out."""
    lives = _Lives()
    lives.block(fn.body)
    lives.stretch_over_loops()
    tiles = []
    for name, (line, t, op) in lives.defs.items():
        ref = t.memref
        if ref is None or not ref.allocated or t.memory is None:
            continue
        size = int(ref.size or t.nbytes)
        start = int(ref.offset or 0)
        tiles.append(
            Tile(name, t.memory.name, ref.name, start, start + size * ref.slots, ref.slots, size,
                 lives.first[name], lives.last[name], line, op=op)
        )  # fmt: skip
    return tiles


def _merge(fn: str, tiles: list[Tile], counter: list[int]) -> list[Box]:
    boxes: list[Box] = []
    for t in sorted(tiles, key=lambda t: (t.space, t.buffer, t.first, t.last)):
        cur = boxes[-1] if boxes else None
        if cur is not None and (cur.space, cur.buffer) == (t.space, t.buffer) and t.first <= cur.last:
            cur.tiles.append(t)
            cur.last = max(cur.last, t.last)
            cur.start, cur.end = min(cur.start, t.start), max(cur.end, t.end)
            cur.slot_bytes = max(cur.slot_bytes, t.slot_bytes)
            continue
        counter[0] += 1
        boxes.append(Box(f"box-{counter[0]}", fn, t.space, t.buffer, t.start, t.end, t.slots, t.slot_bytes,
                         t.first, t.last, [t]))  # fmt: skip
    for b in boxes:
        for t in b.tiles:
            t.view = t.op in VIEW_OPS or (t.start, t.end) != (b.start, b.end)
    return boxes


def _mark_conflicts(boxes: list[Box]) -> None:
    for i, a in enumerate(boxes):
        for b in boxes[i + 1 :]:
            same_space = a.space == b.space and a.buffer != b.buffer
            if same_space and a.start < b.end and b.start < a.end and a.first <= b.last and b.first <= a.last:
                a.conflicts.append(b.id)
                b.conflicts.append(a.id)


def map_program(program: Program) -> list[FunctionMap]:
    """The boxes of every InCore function; ``NotAllocated`` when no tile has an address."""
    out, counter = [], [0]
    for fn in program.functions:
        if not fn.kind.is_incore or fn.external_source is not None:
            continue
        boxes = _merge(fn.name, function_tiles(fn), counter)
        _mark_conflicts(boxes)
        high: dict[str, int] = {}
        for b in boxes:
            high[b.space] = max(high.get(b.space, 0), b.end)
        out.append(FunctionMap(fn.name, fn.kind.name, _line(fn), _last_line_fn(fn), boxes, high))
    if not any(f.boxes for f in out):
        raise NotAllocated("no tile has an assigned address")
    return out


def _last_line_fn(fn: Function) -> int:
    return max((_last_line(s) for s in fn.body), default=_line(fn))


def to_json(maps: list[FunctionMap], capacities: dict[str, int]) -> dict[str, Any]:
    """The page's embedded data."""
    spaces = [s for s in SPACE_ORDER if any(b.space == s for f in maps for b in f.boxes)]
    high = {s: max(f.high_water.get(s, 0) for f in maps) for s in spaces}
    return {
        "spaces": [{"name": s, "capacity": capacities.get(s, 0), "high_water": high[s]} for s in spaces],
        "functions": [
            {"name": f.name, "kind": f.kind, "first": f.first, "last": f.last, "high_water": f.high_water,
             "boxes": [_box_json(b) for b in f.boxes]}
            for f in maps
        ],
    }  # fmt: skip


def _box_json(b: Box) -> dict[str, Any]:
    return {
        "id": b.id,
        "space": b.space,
        "buffer": b.buffer,
        "start": b.start,
        "end": b.end,
        "slots": b.slots,
        "slot_bytes": b.slot_bytes,
        "first": b.first,
        "last": b.last,
        "conflicts": b.conflicts,
        "tiles": [
            {"name": t.name, "start": t.start, "end": t.end, "first": t.first, "last": t.last,
             "def_line": t.def_line, "view": t.view, "op": t.op}
            for t in b.tiles
        ],
    }  # fmt: skip


def latest_dump(folder: Path) -> Path | None:
    """The newest ``*_after_AllocateMemoryAddr.py`` under ``folder``."""
    found = list(folder.glob("**/*_after_AllocateMemoryAddr.py"))
    return max(found, key=lambda p: (p.stat().st_mtime, str(p))) if found else None
