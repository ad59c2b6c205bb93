"""BindRegions alone (the PTOAS planner): regions instead of addresses, declarations kept
with their slot selects, storage flows in one region, the capacity check before anything
runs — and InsertSync treating distinct regions as disjoint."""

from __future__ import annotations

import pytest
from pass_util import apply, flags, kernel, memrefs

from pypto import ir
from pypto.errors import MemoryCapacityError
from pypto.passes.allocate_memory_addr import allocate_memory_addr
from pypto.passes.bind_regions import bind_regions
from pypto.passes.insert_sync import insert_sync

A = "a: pl.Tensor[[512, 128], pl.FP32], b: pl.Tensor[[512, 128], pl.FP32]"
OUT = "out: pl.Out[pl.Tensor[[512, 128], pl.FP32]]"
SLOTS = 'pl.Tile[[16, 64], pl.FP32, pl.MemRef("ub", slots=2)[i % 2], pl.Mem.Vec]'


def bind(body: str, params: str = f"{A}, {OUT}") -> ir.Function:
    return apply(bind_regions, kernel(params, body)).get("k")


def test_every_tile_gets_a_region_and_no_address():
    fn = bind(
        """
        x = pl.load(a, [0, 0], [16, 64])
        y = pl.load(b, [0, 0], [16, 64])
        z = pl.add(x, y)
        pl.store(z, [0, 0], out)
        """
    )
    refs = memrefs(fn)
    assert all(not m.allocated and m.size == 4096 and m.slots == 1 for m in refs.values())
    # z takes over x, which dies there (the planner may coalesce); y keeps its own region
    assert refs["z"].name == refs["x"].name == "tile:x" and refs["y"].name == "tile:y"


def test_a_declaration_is_one_region_with_its_slot_selects():
    fn = bind(
        f"""
        for i in pl.range(4):
            t: {SLOTS} = pl.load(a, [i * 16, 0], [16, 64])
            pl.store(pl.exp(t), [i * 16, 0], out)
        """
    )
    t = memrefs(fn)["t"]
    assert (t.name, t.slots, t.size, t.offset) == ("ub", 2, 4096, None)
    assert ir.print_expr(t.index) == "i % 2"


def test_a_loop_carried_tile_keeps_one_region():
    fn = bind(
        """
        acc = pl.load(a, [0, 0], [16, 64])
        for i, (s,) in pl.range(1, 4, init_values=(acc,)):
            t = pl.load(a, [i * 16, 0], [16, 64])
            s2 = pl.add(s, t)
            s = pl.yield_(s2)
        pl.store(s, [0, 0], out)
        """
    )
    refs = memrefs(fn)
    assert len({refs[n].name for n in refs if n.startswith(("acc", "s"))}) == 1


TWO_PHASES = """
x = pl.load(a, [0, 0], [128, 128])
y = pl.load(b, [0, 0], [128, 128])
pl.store(pl.add(x, y), [0, 0], out)
u = pl.load(a, [128, 0], [128, 128])
v = pl.load(b, [128, 0], [128, 128])
pl.store(pl.add(u, v), [128, 0], out)
"""


def test_regions_never_overlap_so_what_pypto_reuses_may_not_fit():
    apply(allocate_memory_addr, kernel(f"{A}, {OUT}", TWO_PHASES))  # PYPTO: phase 2 reuses phase 1
    with pytest.raises(MemoryCapacityError) as err:
        bind(TWO_PHASES)
    msg = str(err.value)
    assert "'k' needs 262144 B of Vec for its regions but 188416 B are available" in msg
    assert "tile:x (1 x 65536 B)" in msg and "tile:v (1 x 65536 B)" in msg and "PYPTO planner" in msg


def test_insert_sync_treats_distinct_regions_as_disjoint():
    """The same flags as on PYPTO's disjoint addresses: a region is not "anywhere in Vec"."""
    body = f"""
        for i in pl.range(4):
            t: {SLOTS} = pl.load(a, [i * 16, 0], [16, 64])
            pl.store(pl.exp(t), [i * 16, 0], out)
        """
    pypto = apply(insert_sync, apply(allocate_memory_addr, kernel(f"{A}, {OUT}", body))).get("k")
    ptoas = apply(insert_sync, apply(bind_regions, kernel(f"{A}, {OUT}", body))).get("k")
    assert flags(ptoas) == flags(pypto)
