"""Upstream PyPTO's user-guide pages run unchanged here: every code block a page marks for its
own doctest run (setup and run blocks, in order) executes on ``a2a3sim``.

The pages are not part of this repository: set ``PYPTO_UPSTREAM_CHECKOUT`` to an upstream PyPTO
checkout (a work tree, or a bare git folder read at ``HEAD``) to run this test; without it the
test is skipped. The same calls, in this repository's own words, are tested by
test_worker.py, test_execute_compiled.py, test_upstream_runtime.py and test_torch_codegen.py.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import types
from pathlib import Path

import pytest

PAGES = (
    "00-getting_started.md",
    "02-quickstart.md",
    "execution/00-compile.md",
    "execution/01-run.md",
    "tools/00-debugging.md",
    "precision/00-workflow.md",
)
MARKED = re.compile(r"<!-- doctest: (setup|run) -->\s*\n```python\n(.*?)^```", re.S | re.M)


def _page(name: str) -> str:
    given = os.environ.get("PYPTO_UPSTREAM_CHECKOUT", "")
    root = Path(given)
    if not given or not root.exists():
        pytest.skip("set PYPTO_UPSTREAM_CHECKOUT to an upstream PyPTO checkout to run its pages")
    rel = f"docs/en/user/{name}"
    if (root / rel).is_file():
        return (root / rel).read_text()
    shown = subprocess.run(
        ["git", "--git-dir", str(root), "show", f"HEAD:{rel}"], capture_output=True, text=True
    )
    if shown.returncode:
        pytest.fail(f"{root} holds no {rel}: {shown.stderr.strip()}")
    return shown.stdout


@pytest.mark.parametrize("name", PAGES)
def test_upstream_page_runs_unchanged(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    blocks = MARKED.findall(_page(name))
    assert blocks, f"{name} has no doctest blocks"
    monkeypatch.chdir(tmp_path)
    module = types.ModuleType(f"upstream_{Path(name).stem.replace('-', '_')}")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    for k, (_, body) in enumerate(blocks):
        code = body.replace("__PLATFORM__", "a2a3sim")  # the page's own placeholder
        path = tmp_path / f"block{k}.py"  # a real file: @pl.jit reads kernel source back from it
        path.write_text(code)
        module.__file__ = str(path)
        exec(compile(code, str(path), "exec"), module.__dict__)
