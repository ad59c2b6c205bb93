"""The PTOAS planner end to end: regions placed when the kernel starts, the two slot rules it
enforces at codegen (with the kernel that breaks one running fine under PYPTO, and the
hazard checker showing the race the rule prevents), and slot selects checked at run time."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from seed_kernels import NT, ROWS, TC, TR, explicit_slots

import pypto.language as pl
from pypto.errors import BoundsCheckError, CodegenError, HazardError, MemorySpaceError
from pypto.passes import MemoryPlanner
from pypto.runtime import RunConfig, run_kernel_file

PYPTO = RunConfig(memory_planner=MemoryPlanner.PYPTO)
PTOAS = RunConfig(memory_planner=MemoryPlanner.PTOAS)


@pl.jit
def neighbour_sum(a: pl.Tensor, out: pl.Out[pl.Tensor]):  # out[i] = a[i] + a[i + 1], per tile
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(NT - 1):
            cur: pl.Tile[[TR, TC], pl.FP32, pl.MemRef("ub", slots=2)[i % 2], pl.Mem.Vec] = pl.load(
                a, [i * TR, 0], [TR, TC], target_memory=pl.Mem.Vec
            )
            nxt: pl.Tile[[TR, TC], pl.FP32, pl.MemRef("ub", slots=2)[(i + 1) % 2], pl.Mem.Vec] = pl.load(
                a, [(i + 1) * TR, 0], [TR, TC], target_memory=pl.Mem.Vec
            )
            pl.store(pl.add(cur, nxt), [i * TR, 0], out)
    return out


@pl.jit
def one_slot(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t: pl.Tile[[TR, TC], pl.FP32, pl.MemRef("keep"), pl.Mem.Vec] = pl.load(a, [0, 0], [TR, TC])
        pl.store(pl.exp(t), [0, 0], out)
    return out


@pl.jit
def slot_by_trip(a: pl.Tensor, out: pl.Out[pl.Tensor]):  # slot i of 2: out of range from i = 2
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(NT):
            t: pl.Tile[[TR, TC], pl.FP32, pl.MemRef("ub", slots=2)[i], pl.Mem.Vec] = pl.load(
                a, [i * TR, 0], [TR, TC]
            )
            pl.store(pl.exp(t), [i * TR, 0], out)
    return out


def _input() -> np.ndarray:
    return np.random.default_rng(0).uniform(-2, 2, (ROWS, TC)).astype(np.float32)


def test_generated_kernel_places_its_regions_when_it_starts():
    a = _input()
    prog = explicit_slots.compile(a, np.zeros_like(a), config=PTOAS)
    (cpp,) = (prog.output_dir / "kernels").glob("*.cpp")
    text = cpp.read_text()
    assert "place_regions(kRegions, region_base);" in text
    assert '{PYPTO_VEC, 2, 32768, "ub"}' in text  # the declaration: one region of two slots
    assert 'slot_address(region_base[0], pypto::floormod(v_i, int64_t{2}), 2, int64_t{32768}, "ub")' in text


def test_co_live_slots_are_refused_naming_the_declaration():
    a = _input()
    out = np.full_like(a, 7.0)
    with pytest.raises(CodegenError) as err:
        neighbour_sum(a, out, config=PTOAS)
    msg = str(err.value)
    assert "pl.MemRef(\"ub\", slots=2): slots [i % 2] (tile 'cur') and [(i + 1) % 2] (tile 'nxt')" in msg
    assert "the second is read while the next iteration overwrites it" in msg
    assert "take one slot per iteration, or use the PYPTO planner" in msg
    lines = Path(__file__).read_text().splitlines()
    line = next(n for n, text in enumerate(lines, 1) if "nxt: pl.Tile" in text)
    assert f"{__file__}:{line}:" in msg and "nxt: pl.Tile" in msg  # the second slot's line, shown
    assert (out == 7.0).all()  # refused before anything ran


def test_the_same_kernel_runs_under_pypto():
    a = _input()
    out = np.zeros_like(a)
    neighbour_sum(a, out, config=PYPTO)
    want = np.zeros_like(a)
    want[:-TR] = a[:-TR] + a[TR:]
    np.testing.assert_allclose(out, want, rtol=1e-6)
    assert neighbour_sum.last_report.hazards == []


def test_the_refusal_prevents_a_real_race(fixture_kernel):
    """neighbour_sum lowered by hand the way PTOAS lowers a slotted region, as if codegen had
    let it through: the hazard checker reports the next iteration's load over a slot the
    current one still reads."""
    a = _input()
    with pytest.raises(HazardError) as err:
        run_kernel_file(fixture_kernel("ptoas_co_live_slots"), [a, np.zeros_like(a)], outputs={1})
    msg = str(err.value)
    assert "WAR race: TLOAD" in msg and "overlaps TADD" in msg and "neighbour_sum.py:18" in msg


def test_single_slot_declarations_are_refused_under_ptoas_only():
    a = _input()
    with pytest.raises(CodegenError, match=r'pl.MemRef\("keep"\) declares a single slot.*may coalesce'):
        one_slot(a, np.zeros_like(a), config=PTOAS)
    out = np.zeros_like(a)
    one_slot(a, out, config=PYPTO)
    np.testing.assert_allclose(out[:TR], np.exp(a[:TR]), rtol=1e-6)


@pytest.mark.parametrize("config", [PYPTO, PTOAS], ids=["PYPTO", "PTOAS"])
def test_a_slot_select_out_of_range_is_refused_before_the_run(config):
    """The loop bounds the index, so it is checked at compile time: nothing is written. (The
    simulator's SLOT_SELECT check stays the backstop for indices only known at run time.)"""
    a, out = _input(), np.zeros_like(_input())
    with pytest.raises(BoundsCheckError, match=rf"pl.MemRef\('ub', slots=2\) ranges over \[0, {NT - 1}\]"):
        slot_by_trip(a, out, config=config)
    assert (out == 0).all()


def test_regions_that_do_not_fit_fail_when_the_kernel_starts(fixture_kernel):
    """The backstop for hand-written kernels (generated ones are checked by BindRegions)."""
    a = _input()
    with pytest.raises(MemorySpaceError) as err:
        run_kernel_file(fixture_kernel("regions_too_big"), [a], outputs=set())
    msg = str(err.value)
    assert "PLACE_REGIONS: the kernel's Vec regions need 196608 B but 188416 B are available" in msg
    assert "big (3 x 65536 B)" in msg and "m (" not in msg
