"""The repository explains itself: sources and docs cite only documents inside it, and the
developer pages point at files that exist."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TEXT = {".py", ".pyi", ".cpp", ".hpp", ".h", ".md", ".toml", ".txt", ".cmake"}
SKIP = {".git", "build", "_skbuild", "dist", ".venv", "__pycache__"}
# Spelled in pieces so this file does not match itself.
FORBIDDEN = ("SPEC " + "§", "../" + "shared", "/work/" + "shared", "DESIGN" + ".md", "SPEC" + ".md")
DEV_PAGES = sorted((ROOT / "docs" / "dev").glob("*.md"))


def _files() -> list[Path]:
    out = []
    for path in ROOT.rglob("*"):
        rel = path.relative_to(ROOT)
        if any(part in SKIP or part.endswith(".egg-info") for part in rel.parts):
            continue
        if path.is_file() and (path.suffix in TEXT or path.name == "CMakeLists.txt"):
            out.append(path)
    return out


def test_no_file_cites_documents_outside_the_repository() -> None:
    hits = []
    for path in _files():
        for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            hits += [f"{path.relative_to(ROOT)}:{n}: {word}" for word in FORBIDDEN if word in line]
    assert not hits, "cite docs/hardware.md or docs/dev/architecture.md instead:\n" + "\n".join(hits)


def test_dev_pages_exist_and_run_nothing() -> None:
    # tests/docs/test_docs.py executes docs/*.md only; a python block here would never run.
    assert [p.name for p in DEV_PAGES] == ["architecture.md"]
    for page in DEV_PAGES:
        assert "```python" not in page.read_text(), page


def test_dev_pages_name_real_paths_and_links() -> None:
    missing = []
    for page in DEV_PAGES:
        text = page.read_text()
        for link in re.findall(r"\]\(([^)#]+)\)", text):
            if not (page.parent / link).exists():
                missing.append(f"{page.name}: link {link}")
        # Backticked paths (`pypto/ir/ops.py`, `simulator/op_desc.hpp`, `csrc/chip/isa/`),
        # written from the repository root or from pypto/, csrc/ or the include folder.
        for ref in re.findall(r"`([\w.]+/[\w./]*)(?=[`\s:])", text):
            ref = ref.rstrip("/")
            bases = (ROOT, ROOT / "pypto", ROOT / "csrc", ROOT / "csrc/include")
            if not any((base / ref).exists() for base in bases):
                missing.append(f"{page.name}: path {ref}")
    assert not missing, "\n".join(missing)
