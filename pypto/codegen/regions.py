"""Storage regions under the PTOAS planner: the kernel-start placement and its refusals.

BindRegions gave every tile a region (a MemRef with a slot size and no offset). The kernel
places them when it starts (``place_regions``) and each tile takes ``base + slot * size``.
Two slot rules (docs/double_buffering.md) are enforced here, before anything is built:

* a single-slot ``pl.MemRef("name")`` is refused — the planner may coalesce what you
  separated, so the declaration would promise nothing;
* two slots of one declaration live in the same loop iteration are refused — PTOAS
  synchronises a slotted region as one slot per iteration, so the second slot would be
  read while the next iteration overwrites it.
"""

from __future__ import annotations

from pypto._dataclass import dataclass
from pypto.codegen.cpp_expr import c_string
from pypto.errors import CodegenError, SourceSpan
from pypto.ir.enums import MemorySpace
from pypto.ir.expr import Var
from pypto.ir.printer import print_expr
from pypto.ir.stmt import Assign, For, Function, If, Stmt
from pypto.ir.types import MemRef, TileType, is_tile_region
from pypto.ir.visit import walk

# abi.h's pypto_mem names each on-chip space PYPTO_<IR name, upper case>.
MEM_ABI = {m.name: f"PYPTO_{m.name.upper()}" for m in MemorySpace if m is not MemorySpace.DDR}
_PLANNER_HINT = "or use the PYPTO planner (RunConfig(memory_planner=pypto.passes.MemoryPlanner.PYPTO))"


@dataclass(frozen=True)
class Region:
    name: str
    space: str
    slots: int
    slot_bytes: int


def regions_of(fn: Function) -> list[Region]:
    """The regions of ``fn`` in order of first definition (empty under the PYPTO planner)."""
    seen: dict[str, Region] = {}
    for node in walk(fn.body):
        if isinstance(node, Var) and isinstance(node.type, TileType):
            ref = node.type.memref
            if ref is not None and not ref.allocated and ref.size is not None and ref.name not in seen:
                assert node.type.memory is not None  # a planned tile has its space
                seen[ref.name] = Region(ref.name, node.type.memory.name, ref.slots, ref.size)
    return list(seen.values())


def region_prologue(regions: list[Region]) -> list[str]:
    """C++ that places the regions when the kernel starts (``region_base[i]``)."""
    if not regions:
        return []
    items = ", ".join(
        f"{{{MEM_ABI[r.space]}, {r.slots}, {r.slot_bytes}, {c_string(r.name)}}}" for r in regions
    )
    return [
        "  // PTOAS: storage regions are placed now, first fit per space (pypto_place_regions).",
        f"  static const pypto_region kRegions[] = {{{items}}};",
        f"  int64_t region_base[{len(regions)}];",
        "  place_regions(kRegions, region_base);",
    ]


def check_slot_rules(fn: Function) -> None:
    """Raises CodegenError for a PTOAS slot declaration the planner cannot honour."""
    for node in walk(fn.body):
        ref = _declared(node.var) if isinstance(node, Assign) else None
        if ref is not None and ref.slots == 1:
            raise CodegenError(
                f'pl.MemRef("{ref.name}") declares a single slot; the PTOAS planner refuses '
                "single-slot declarations because it may coalesce what you separated — declare "
                f"slots=2 or more, drop the declaration, {_PLANNER_HINT}",
                node.span,
            )
        if isinstance(node, For):
            _check_loop(node)


def _declared(v: Var) -> MemRef | None:
    """The ``pl.MemRef`` the user bound tile ``v`` to (None for any other value)."""
    ref = v.type.memref if isinstance(v.type, TileType) else None
    return ref if ref is not None and not ref.allocated and not is_tile_region(ref) else None


@dataclass
class _Use:
    var: Var
    ref: MemRef
    first: int
    last: int
    span: SourceSpan | None


def _check_loop(loop: For) -> None:
    """Two tiles of one declaration with different slot selects, live together in one iteration."""
    uses = _lifetimes(loop)
    for a in uses.values():
        for b in uses.values():
            if a is b or a.ref.name != b.ref.name or a.first > b.first:
                continue
            if _slot(a.ref) != _slot(b.ref) and b.first <= a.last:
                _refuse_co_live(loop, a, b)


def _slot(ref: MemRef) -> str:
    return "?" if ref.index is None else print_expr(ref.index)


def _refuse_co_live(loop: For, a: _Use, b: _Use) -> None:
    raise CodegenError(
        f'pl.MemRef("{a.ref.name}", slots={a.ref.slots}): slots [{_slot(a.ref)}] (tile {a.var.name!r}) and '
        f"[{_slot(b.ref)}] (tile {b.var.name!r}) are live at once inside the loop over {loop.var.name!r}; "
        "under the PTOAS planner two slots live at once inside a loop means the second is read while "
        f"the next iteration overwrites it — take one slot per iteration, {_PLANNER_HINT}",
        b.span or loop.span,
    )


def _lifetimes(loop: For) -> dict[str, _Use]:
    """Declared tiles used in one iteration: [defining statement, last statement using them].
    Tiles from outside the loop are live for the whole iteration."""
    uses: dict[str, _Use] = {}
    end = len(loop.body)
    for pos, s in enumerate(loop.body):
        for name, (v, ref, span) in _defs(s).items():
            uses[name] = _Use(v, ref, pos, pos, span)
        for node in walk(s):
            if isinstance(node, Var) and (outer := _declared(node)) is not None:
                use = uses.setdefault(node.name, _Use(node, outer, -1, end, loop.span))
                use.last = max(use.last, pos)
    return uses


def _defs(s: Stmt) -> dict[str, tuple[Var, MemRef, SourceSpan | None]]:
    out: dict[str, tuple[Var, MemRef, SourceSpan | None]] = {}
    for node in walk(s):
        if isinstance(node, Assign) and (ref := _declared(node.var)) is not None:
            out[node.var.name] = (node.var, ref, node.span)
        elif isinstance(node, (For, If)):
            for r in node.results:
                if (ref := _declared(r)) is not None:
                    out[r.name] = (r, ref, node.span)
    return out
