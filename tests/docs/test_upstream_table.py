"""docs/upstream.md's table of upstream run-time names stays true: each name listed as present
imports from where the table says, and each listed as not provided is really absent."""

from __future__ import annotations

import importlib
import re
from pathlib import Path
from typing import Any

PAGE = Path(__file__).resolve().parents[2] / "docs" / "upstream.md"
ROW = re.compile(r"^\| `([\w.]+)` \| ([^|]+) \|", re.M)


def _rows() -> list[tuple[str, str]]:
    text = PAGE.read_text()
    table = text[text.index("## The run-time names") :]
    table = table[: table.index("\n## ")]
    return ROW.findall(table)


def _resolve(dotted: str) -> Any:
    """The object a dotted name denotes: the longest importable module, then attributes."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for attr in parts[cut:]:
            obj = getattr(obj, attr)
        return obj
    raise ModuleNotFoundError(dotted)


def test_every_listed_name_is_where_the_table_says() -> None:
    rows = _rows()
    assert len(rows) >= 20
    for name, here in rows:
        if here.strip() == "not provided":
            try:
                _resolve(name)
            except (AttributeError, ModuleNotFoundError, ImportError):
                continue
            raise AssertionError(f"{name} is listed as not provided but exists")
        assert _resolve(name) is not None, name
