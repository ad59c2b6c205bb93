"""Every code block in docs/ runs: ``python`` blocks are executed in order per page, in a
temporary folder where ``c++ file=<name>`` blocks of the same page were written first."""

from __future__ import annotations

import os
import re
import sys
import types
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"
BLOCK = re.compile(r"^```(\S+)([^\n]*)\n(.*?)^```", re.S | re.M)


def pages() -> list[Path]:
    return sorted(DOCS.glob("*.md"))


@pytest.mark.parametrize("page", pages(), ids=lambda p: p.name)
def test_page_runs(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    module = types.ModuleType(f"docs_{page.stem}")  # a real module: inspect finds @pl.program classes
    monkeypatch.setitem(sys.modules, module.__name__, module)
    namespace = module.__dict__
    ran = 0
    for lang, info, body in BLOCK.findall(page.read_text()):
        file = re.search(r"file=(\S+)", info)
        if file:
            (tmp_path / file.group(1)).write_text(body)
        elif lang == "python":
            # A real file per block: @pl.jit reads kernel source back from it.
            block = tmp_path / f"{page.stem}_block{ran}.py"
            block.write_text(body)
            module.__file__ = str(block)
            exec(compile(body, str(block), "exec"), namespace)
            ran += 1
    assert ran > 0 or not any(lang == "python" for lang, _, _ in BLOCK.findall(page.read_text()))
    assert os.getcwd() == str(tmp_path)
