"""Import cycles. The modules of ``pypto.ir`` import each other without cycles, counting
imports inside functions too (a deferred import still ties two modules together), and each
imports on its own in a fresh interpreter. Across the whole ``pypto`` package, what runs at
import time has no cycle but the known ones; ``pypto.language`` never imports the frontend at
import time, and calls into it only from its decorators (the entry points that hand a
kernel to the compiler when it is called)."""

from __future__ import annotations

import ast
import os
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

# Import-time cycles of the whole package, each with its reason (same rule as above).
KNOWN_IMPORT_TIME_CYCLES = {
    # emitters.py imports cluster.py at its end so the cluster emitters register in EMITTERS,
    # and cluster.py builds on emitters' helpers.
    frozenset({"pypto.codegen.cluster", "pypto.codegen.emitters"}),
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _import_nodes(tree: ast.Module, deferred: bool) -> list[ast.Import | ast.ImportFrom]:
    """The imports of a module but those under ``if TYPE_CHECKING``; with ``deferred`` also
    those inside functions, else only what runs when the module is imported."""
    found: list[ast.Import | ast.ImportFrom] = []

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                continue
            if not deferred and isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                continue
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                found.append(child)
            visit(child)

    visit(tree)
    return found


def imports_of(path: Path, modules: set[str], deferred: bool = True) -> set[str]:
    """Modules of ``modules`` that ``path`` imports (see ``_import_nodes``). ``from pkg import
    sub`` is an import of ``pkg.sub`` when that is a module, else of ``pkg``; the parent
    package every import loads first is not counted (it is always loaded before its modules)."""
    package = module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    found = set()
    for node in _import_nodes(ast.parse(path.read_text()), deferred):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + [base])
            base = base.rstrip(".")
            subs = [f"{base}.{a.name}" for a in node.names]
            names = [n for n in subs if n in modules]
            if len(names) < len(subs):  # some name is an attribute of ``base``, not a module
                names.append(base)
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


def package_modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def graph_of(modules: dict[str, Path], deferred: bool) -> dict[str, set[str]]:
    return {m: imports_of(p, set(modules), deferred) - {m} for m, p in modules.items()}


def test_the_package_has_no_import_time_cycle_but_the_known_ones() -> None:
    assert cycles(graph_of(package_modules(), deferred=False)) == KNOWN_IMPORT_TIME_CYCLES


def test_language_and_frontend_import_without_cycles() -> None:
    modules = {
        m: p for m, p in package_modules().items() if m.startswith(("pypto.language", "pypto.frontend"))
    }
    assert cycles(graph_of(modules, deferred=False)) == set()
    deferred = graph_of(modules, deferred=True)
    calls = {(m, d) for m, ds in deferred.items() if m.startswith("pypto.language") for d in ds}
    into_frontend = {m for m, d in calls if d.startswith("pypto.frontend")}
    assert into_frontend == {"pypto.language.decorators"}  # @pl.jit / @pl.program hand over kernels
    # so the only cycles counting deferred imports go through the decorators
    without = {m: ds for m, ds in deferred.items() if m != "pypto.language.decorators"}
    without = {m: ds - {"pypto.language.decorators"} for m, ds in without.items()}
    assert cycles(without) == set()


def test_importing_the_language_loads_no_compiler() -> None:
    code = "import sys, pypto.language; print(sorted(m for m in sys.modules if m.startswith('pypto.')))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    loaded = done.stdout
    assert "pypto.frontend" not in loaded and "pypto.passes" not in loaded and "pypto.runtime" not in loaded


def test_importing_the_language_does_not_load_typing() -> None:
    """Annotations are for the checker; ``typing`` is a tenth of the import's time. ``-S``:
    without the site hooks, which may load it themselves."""
    code = "import sys, pypto.language; print('typing' in sys.modules)"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    done = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


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


# The rooms of the package from the bottom up: a module imports (at import time or inside a
# function) only from its own room or the rooms below it. A module of no listed room is ground
# every room may use (errors, knobs, hardware, platforms, the native module, the cache folder).
ROOMS = (
    "pypto.ir",
    "pypto.ops",
    "pypto.language",
    "pypto.frontend",
    "pypto.diagnostics",
    "pypto.passes",
    "pypto.codegen",
    "pypto.debug",
    "pypto.kernel_build",
    "pypto.report",
    "pypto.compile",
    "pypto.runtime",
    "pypto.tune",
    "pypto.tools",
)

# The imports that go up, each with its reason (the test fails when one is gone or another appears).
KNOWN_UPWARD = {
    # upstream's `pypto.ir.compile(program)` hands a program to the compile driver
    ("pypto.ir", "pypto.runtime"),
    # the op table lists the rows of the op families, which build on the IR's record types
    ("pypto.ir.ops", "pypto.ops"),
    # `pl.autotune` is a decorator too: it hands a kernel to the sweep runner
    ("pypto.language", "pypto.tune"),
    # @pl.jit / @pl.program hand a kernel to the frontend and the run path when it is called
    ("pypto.language.decorators", "pypto.frontend"),
    ("pypto.language.decorators", "pypto.runtime"),
}


def room_of(module: str) -> int:
    """The index of a module's room in ROOMS; -1 for the ground below them all."""
    for i, room in enumerate(ROOMS):
        if module == room or module.startswith(room + "."):
            return i
    return -1


def test_no_import_runs_up_between_the_rooms() -> None:
    upward = set()
    for module, deps in graph_of(package_modules(), deferred=True).items():
        for dep in deps:
            if room_of(dep) > room_of(module):
                upward.add((module, ROOMS[room_of(dep)]))
    assert upward == KNOWN_UPWARD


def test_every_package_module_has_a_room_or_is_ground() -> None:
    packages = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()}
    assert packages - {r.split(".")[1] for r in ROOMS} == {"backend"}  # ground: the chip families
