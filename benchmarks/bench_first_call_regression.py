"""The first call of a kernel in a new process, this checkout against an earlier commit, in one run.

Each round runs, for either version, a fresh interpreter whose first call compiles the tutorial
kernel into an empty cache (parse, passes, codegen, C++ build) and another whose first call is
served by the program cache that left; the rounds alternate, so load on the machine falls on
both versions alike. CPU time (the interpreter's and the compiler's) is the figure to compare:
a busy machine stretches wall time far more.

The earlier commit's Python package is exported with ``git archive`` into a cache folder keyed
by its commit. When its native side matches this one (no change under csrc/ or cmake/, in
CMakeLists.txt, nor in the op families' generated headers) it borrows the installed package's
native files; else it is built (``bench_warm_regression.build_of``, minutes the first time).

Run: python benchmarks/bench_first_call_regression.py [--against REF] [--rounds N]
Prints the best and the median of each version and their ratios (this / earlier).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench_warm_regression import ROOT, build_of, commit_of, run_version, version_args

import pypto._native

NATIVE = Path(pypto._native.__file__).parent  # the installed package's native files
NATIVE_FILES = ("include", "pch", "build_info.json", "*.so")
NATIVE_SOURCES = ("csrc", "cmake", "CMakeLists.txt")

# A fresh interpreter of either version: the tutorial kernel's first call, timed in CPU
# seconds (this process and the compilers it ran) and wall seconds.
CHILD = """
import sys

if len(sys.argv) > 2:  # the earlier version: its folder first, an editable install's finder off
    sys.path.insert(0, sys.argv[2])
    sys.meta_path[:] = [f for f in sys.meta_path if not type(f).__module__.startswith("_editable")]

import pypto

sys.path.insert(0, sys.argv[1])
from _common import first_seed_call

wall, cpu = first_seed_call()
print("RESULT", cpu, wall, pypto.__file__)
"""


def site_of(ref: str, cache: Path) -> Path:
    """A folder holding ``ref``'s package: its Python files with this install's native files
    when the native side is the same, else a full build of ``ref``."""
    sha = commit_of(ref)
    target = cache / f"{sha}-py"
    if (target / "pypto").is_dir():
        return target
    partial = cache / f"{sha}-py.partial"
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", sha, "pypto"], capture_output=True, check=True
    )
    subprocess.run(["tar", "-x", "-C", str(partial)], input=archive.stdout, check=True)
    if not _same_native(sha, partial):
        shutil.rmtree(partial)
        return build_of(ref, cache)
    for pattern in NATIVE_FILES:
        for path in NATIVE.glob(pattern):
            copy = shutil.copytree if path.is_dir() else shutil.copy2
            copy(path, partial / "pypto" / path.name)
    partial.rename(target)  # only a finished folder counts as one
    return target


def _same_native(sha: str, tree: Path) -> bool:
    """Whether ``sha`` builds the same native files as this install: no change to the C++ and
    CMake sources, and the same generated op-family headers."""
    changed = subprocess.run(["git", "-C", str(ROOT), "diff", "--quiet", sha, "--", *NATIVE_SOURCES])
    if changed.returncode != 0:
        return False
    with tempfile.TemporaryDirectory(prefix="pypto-headers-") as out:
        env = dict(os.environ, PYTHONPATH=str(tree))
        subprocess.run([sys.executable, "-S", "-m", "pypto.ops.header", out], env=env, check=True, cwd=out)
        made = sorted(p.relative_to(out) for p in Path(out).rglob("*") if p.is_file())
        return bool(made) and all(
            (Path(out) / p).read_bytes() == (NATIVE / "include" / p).read_bytes() for p in made
        )


def first_call(site: Path | None, cache: Path, folder: Path) -> tuple[float, float]:
    """(CPU, wall) seconds of a first call in a new interpreter with the program cache ``cache``;
    ``site``: the earlier version's folder, None for the current environment's pypto."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}  # as installed
    env["PYPTO_CACHE_DIR"] = str(cache)
    cpu, wall = run_version(CHILD, [str(Path(__file__).parent)], site, env, folder)
    return float(cpu), float(wall)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    version_args(ap)
    ap.add_argument("--rounds", type=int, default=10, help="alternating rounds")
    a = ap.parse_args(argv)
    sides = {"this checkout": None, a.against: site_of(a.against, a.build_cache)}
    with tempfile.TemporaryDirectory(prefix="pypto-first-call-") as tmp:
        folder = Path(tmp)
        times: dict[tuple[str, str], list[tuple[float, float]]] = {}
        for name, site in sides.items():  # writes each version's .pyc files, as an install has them
            first_call(site, folder / f"warmup-{len(times)}", folder)
            times[name, "cold"], times[name, "cached"] = [], []
        for i in range(a.rounds):
            for j, (name, site) in enumerate(sides.items()):
                cache = folder / f"cache-{i}-{j}"
                times[name, "cold"].append(first_call(site, cache, folder))
                times[name, "cached"].append(first_call(site, cache, folder))
    for kind, label in (("cold", "empty cache"), ("cached", "program cache hit")):
        this, old = (times[name, kind] for name in sides)
        print(f"new process, first call, {label}:")
        for name in sides:
            cpu = [c for c, _ in times[name, kind]]
            wall = [w for _, w in times[name, kind]]
            print(
                f"  {name:>14}: cpu best {min(cpu) * 1e3:6.1f} ms, median {statistics.median(cpu) * 1e3:6.1f}"
                f" | wall best {min(wall) * 1e3:6.1f} ms, median {statistics.median(wall) * 1e3:6.1f}"
            )
        ratio = min(c for c, _ in this) / min(c for c, _ in old)
        median = statistics.median(c for c, _ in this) / statistics.median(c for c, _ in old)
        print(f"  cpu ratio (this / {a.against}): best {ratio:.2f}, median {median:.2f}")


if __name__ == "__main__":
    main()
