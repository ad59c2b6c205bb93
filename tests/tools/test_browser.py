"""The tools' pages in a real headless Chromium (Debian's, started here; local files only):
the memory map renders one box per planned buffer without errors, and a cleaned trace
loads into a viewer page with its lanes, slices and arrows intact."""

from __future__ import annotations

import html
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import seed_kernels as tk
from trace_views import check_page, clean_hand_written

from pypto.ir import PassDumpLevel
from pypto.runtime import RunConfig
from pypto.tools import memory_map

PNG = b"\x89PNG\r\n\x1a\n"


class _Boxes(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.boxes: list[dict[str, str]] = []
        self.body: dict[str, str] = {}
        self.errors: dict[str, str] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if "box" in a.get("class", "").split():
            self.boxes.append(a)
        if tag == "body":
            self.body = a
        if a.get("id") == "mm-errors":
            self.errors = a


def test_memory_map_renders_in_chromium(chromium, tmp_path: Path):
    a = np.ones((tk.ROWS, tk.TC), np.float32)
    cfg = RunConfig(dump_passes=PassDumpLevel.EXPLICIT, output_dir=tmp_path / "c")
    tk.explicit_slots.compile(a, np.zeros_like(a), config=cfg)
    page = memory_map.write_map(tmp_path / "c" / "passes_dump", tmp_path / "map.html")
    shown = chromium(page, screenshot=tmp_path / "map.png")
    assert shown.screenshot.read_bytes().startswith(PNG) and shown.screenshot.stat().st_size > 10_000
    assert shown.console == []  # no script error, no console output at all
    dom = _Boxes()
    dom.feed(shown.dom)
    assert dom.body.get("data-rendered") == "true" and dom.errors.get("data-count") == "0"
    got = sorted(
        (b["data-buffer"], b["data-space"], int(b["data-start"]), int(b["data-end"])) for b in dom.boxes
    )
    assert got == [("mem_vec_1", "Vec", 65536, 98304), ("ub", "Vec", 0, 65536)]
    assert {b["data-conflict"] for b in dom.boxes} == {"false"}
    assert 'class="ln"' in shown.dom and "pl.MemRef(ub, 0, 32768, slots=2)" in html.unescape(shown.dom)


def _result(dom: str) -> dict:
    (text,) = re.findall(r'<pre id="result">(.*?)</pre>', dom, re.S)
    return json.loads(html.unescape(text))


def test_clean_trace_loads_in_a_viewer_page(chromium, fixture_kernel, tmp_path: Path):
    results = {}
    for name in ("exp_single_buffer", "exp_double_buffer"):
        trace = clean_hand_written(fixture_kernel, name, tmp_path / name)
        page = check_page(trace, tmp_path / f"{name}.html")
        shown = chromium(
            page, screenshot=tmp_path / f"{name}.png" if name.endswith("double_buffer") else None
        )
        assert shown.console == [] and 'data-checked="true"' in shown.dom
        assert 'id="errors" data-count="0"' in shown.dom
        results[name] = _result(shown.dom)
    for r in results.values():
        assert r["processes"] == ["core0.veccore0"] and r["lanes"] == ["MTE2", "VECTOR", "MTE3"]
        assert r["problems"] == [] and r["overlapping"] == 0 and r["unbound"] == 0
        assert r["slices"] == 24 and r["flows"] >= 16
    # single buffer: the exp starts on the cycle the load ends (flags take no pipe time), so the
    # lanes abut; in microseconds the difference of the two is float residue, not overlap
    assert results["exp_single_buffer"]["mte2_vector_overlap_us"] < 1e-9
    assert results["exp_double_buffer"]["mte2_vector_overlap_us"] > 0
    assert (tmp_path / "exp_double_buffer.png").read_bytes().startswith(PNG)
