"""memory_map: boxes per planned buffer with aliases, views and conflicts, the self-contained
page, and the refusals (PTOAS dumps, missing files)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import seed_kernels as tk

from pypto.frontend import parse_text
from pypto.ir import PassDumpLevel
from pypto.passes import MemoryPlanner
from pypto.report.memory_model import map_program
from pypto.runtime import RunConfig
from pypto.tools import memory_map

A = np.ones((tk.ROWS, tk.TC), np.float32)


def dump_of(kernel, folder: Path, planner: MemoryPlanner | None = None) -> Path:
    cfg = RunConfig(dump_passes=PassDumpLevel.EXPLICIT, output_dir=folder, memory_planner=planner)
    kernel.compile(A, np.zeros_like(A), config=cfg)
    return folder / "passes_dump"


@pytest.fixture(scope="module")
def slots_dump(tmp_path_factory) -> Path:
    return dump_of(tk.explicit_slots, tmp_path_factory.mktemp("slots"))


def page_data(page: str) -> dict:
    (payload,) = re.findall(r'<script type="application/json" id="mm-data">(.*?)</script>', page, re.S)
    return json.loads(payload)


def boxes(data: dict) -> list[dict]:
    return [b for f in data["functions"] for b in f["boxes"]]


def test_one_box_per_planned_buffer_with_its_bytes_and_lines(slots_dump: Path, capsys):
    out = slots_dump.parent / "map.html"
    assert memory_map.main([str(slots_dump), "-o", str(out)]) == 0
    assert capsys.readouterr().out.strip().endswith(f"wrote {out}")
    data = page_data(out.read_text())
    dump = next(slots_dump.glob("*_after_AllocateMemoryAddr.py"))
    lines = dump.read_text().splitlines()
    tile_line = next(i for i, t in enumerate(lines, 1) if t.lstrip().startswith("tile:"))
    got = {(b["buffer"], b["space"], b["start"], b["end"], b["slots"]) for b in boxes(data)}
    assert got == {("ub", "Vec", 0, 65536, 2), ("mem_vec_1", "Vec", 65536, 98304, 1)}
    ub = next(b for b in boxes(data) if b["buffer"] == "ub")
    assert (ub["first"], ub["last"], [t["name"] for t in ub["tiles"]]) == (tile_line, tile_line + 1, ["tile"])
    assert all(not b["conflicts"] for b in boxes(data))
    assert data["spaces"] == [{"name": "Vec", "capacity": 184 * 1024, "high_water": 98304}]
    assert data["lines"] == lines and data["source"] == str(dump)


def test_in_place_tiles_share_one_box(tmp_path: Path):
    data = page_data(
        memory_map.build_page(next(dump_of(tk.single_buffer, tmp_path).glob("*AllocateMemoryAddr.py")))[0]
    )
    (box,) = boxes(data)
    assert [t["name"] for t in box["tiles"]] == ["tile", "exp"]  # y = exp(x) writes over x
    assert (box["start"], box["end"]) == (0, 64 * 128 * 4)


SLOTS_TEXT_CHANGES = {
    "conflict": ("pl.MemRef(mem_vec_1, 65536, 32768)", "pl.MemRef(mem_vec_1, 32768, 32768)"),
}


def test_overlapping_live_buffers_are_conflicts(slots_dump: Path):
    text = next(slots_dump.glob("*_after_AllocateMemoryAddr.py")).read_text()
    old, new = SLOTS_TEXT_CHANGES["conflict"]
    assert old in text
    (fn,) = map_program(parse_text(text.replace(old, new), "bad.py"))
    clash = {b.buffer: b.conflicts for b in fn.boxes}
    assert clash["ub"] and clash["mem_vec_1"]  # both live at the exp line, bytes [32768, 65536)
    assert not any(b.conflicts for b in map_program(parse_text(text, "ok.py"))[0].boxes)


def test_views_are_marked(slots_dump: Path, tmp_path: Path):
    text = (next(dump_of(tk.single_buffer, tmp_path).glob("*AllocateMemoryAddr.py"))).read_text()
    store = "            pl.tile.store(exp, [i * 64, 0], out)"
    view = ("            half: pl.Tile[[32, 128], pl.FP32, pl.MemRef(mem_vec_0, 16384, 16384), pl.Mem.Vec]"
            " = pl.tile.slice(exp, [32, 128], [32, 0])\n")  # fmt: skip
    (fn,) = map_program(parse_text(text.replace(store, view + store), "view.py"))
    (box,) = fn.boxes
    assert {t.name: t.view for t in box.tiles} == {"tile": False, "exp": False, "half": True}
    assert not box.conflicts  # a view of its own buffer is no conflict


def test_page_is_self_contained(slots_dump: Path):
    page, _ = memory_map.build_page(next(slots_dump.glob("*_after_AllocateMemoryAddr.py")))
    assert "<script src" not in page and "<link" not in page
    assert not re.search(r"(src|href)=[\"']?(https?:)?//", page) and "http://" not in page.replace(
        "http://www.w3", ""
    )


def test_ptoas_dump_is_refused(tmp_path: Path, capsys):
    folder = dump_of(tk.single_buffer, tmp_path, MemoryPlanner.PTOAS)
    assert not list(folder.glob("*AllocateMemoryAddr*"))
    last = sorted(folder.glob("*.py"))[-1]
    assert memory_map.main([str(last)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "has no assigned addresses" in err and "PTOAS" in err
    assert memory_map.main([str(folder)]) == 1
    assert "error: no *_after_AllocateMemoryAddr.py under" in capsys.readouterr().err


def test_missing_input_is_an_error(tmp_path: Path):
    done = subprocess.run([sys.executable, "-m", "pypto.tools.memory_map", str(tmp_path / "nope.py")],
                          capture_output=True, text=True, timeout=60, cwd=tmp_path)  # fmt: skip
    assert done.returncode == 1 and "error: no such file or directory" in done.stderr


@pytest.mark.parametrize("number", ["1" + "0" * 30, "9" * 4000])
def test_a_dump_holding_a_huge_integer_is_one_error_line(slots_dump: Path, tmp_path: Path, capsys, number):
    """Every integer of a real dump replaced in turn by a huge one: exit 0 or one error line."""
    text = next(slots_dump.glob("*_after_AllocateMemoryAddr.py")).read_text()
    dump = tmp_path / "03_after_AllocateMemoryAddr.py"
    for m in list(re.finditer(r"\b\d+\b", text)):
        dump.write_text(text[: m.start()] + number + text[m.end() :])
        status = memory_map.main([str(dump), "-o", str(tmp_path / "m.html")])
        err = capsys.readouterr().err
        assert status in (0, 1) and len(err.strip().splitlines()) == status, err
        assert not status or err.startswith("error: ")
