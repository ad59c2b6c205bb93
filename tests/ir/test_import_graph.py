"""The modules of ``pypto.ir`` import each other without cycles, counting imports inside
functions too (a deferred import still ties two modules together), and each imports on
its own in a fresh interpreter."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "pypto"

# Cycles still present, each with the reason it is left: the test fails when one of them is
# gone (shrink the list) or any other appears.
KNOWN_CYCLES = {
    # `Program.as_python()` (upstream's method) prints through the printer.
    frozenset({"pypto.ir.printer", "pypto.ir.stmt"}),
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, modules: set[str]) -> set[str]:
    """Modules of ``modules`` that ``path`` imports anywhere but under ``if TYPE_CHECKING``."""
    tree = ast.parse(path.read_text())
    typing_only = {
        id(n)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        for n in ast.walk(node)
    }
    package = module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    found = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + [base])
            names = [base.rstrip(".")] + [f"{base}.{a.name}" for a in node.names]
        else:
            continue
        for name in names:
            while name and name not in modules:
                name = name.rpartition(".")[0]
            if name:
                found.add(name)
    return found


def cycles(graph: dict[str, set[str]]) -> set[frozenset[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: set[frozenset[str]] = set()

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                found.add(frozenset(component))

    for v in graph:
        if v not in index:
            visit(v)
    return found


def ir_modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted((PACKAGE / "ir").glob("*.py")) if p.name != "__init__.py"}


def test_ir_modules_import_without_cycles() -> None:
    modules = ir_modules()
    graph = {m: imports_of(p, set(modules)) - {m} for m, p in modules.items()}
    assert cycles(graph) == KNOWN_CYCLES


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == {frozenset("abc")}


@pytest.mark.parametrize("module", sorted(ir_modules()))
def test_each_ir_module_imports_first(module: str) -> None:
    done = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
