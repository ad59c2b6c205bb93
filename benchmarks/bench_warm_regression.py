"""The warm call of a tiny @pl.jit kernel, this checkout against an earlier commit, in one run.

Wall-clock figures move with the machine's load, so this prints a ratio: both versions are timed
in the same run, alternating rounds, each round the best of many calls in a fresh interpreter.
The earlier commit (default ``HEAD~1``) is exported with ``git archive`` and built once into a
cache folder keyed by its commit (``pip install --target``; a few minutes the first time), so
the checkout's own git state is never touched. This checkout runs as installed in the current
environment (``pip install -e .``).

Run: python benchmarks/bench_warm_regression.py [--against REF] [--rounds N] [--fail-above R]
Prints the best warm call of each version and their ratio (this / earlier); exits 1 when the
ratio is above ``--fail-above`` (default 1.25), a regression check rather than a time limit.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Runs in a fresh interpreter of either version: only the public API both versions share.
CHILD = """
import sys
import time

if len(sys.argv) > 2:  # the earlier version: its folder first, an editable install's finder off
    sys.path.insert(0, sys.argv[2])
    sys.meta_path[:] = [f for f in sys.meta_path if not type(f).__module__.startswith("_editable")]

import numpy as np

import pypto
import pypto.language as pl
from pypto.runtime import RunConfig


@pl.jit
def tiny(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        x = pl.load(a, [0, 0], [8, 64])
        pl.store(pl.adds(x, 1.0), [0, 0], out)
    return out


a = np.ones((8, 64), np.float32)
out = np.zeros_like(a)
config = RunConfig(platform="a2a3sim")
tiny(a, out, config=config)
assert (out == 2.0).all()
best = float("inf")
for _ in range(int(sys.argv[1])):
    t0 = time.perf_counter()
    tiny(a, out, config=config)
    best = min(best, time.perf_counter() - t0)
print("RESULT", best, pypto.__file__)
"""


def commit_of(ref: str) -> str:
    """The full commit id ``ref`` names in this checkout."""
    return subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--verify", f"{ref}^{{commit}}"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip


def version_args(ap: argparse.ArgumentParser) -> None:
    """The options of a benchmark that times this checkout against an earlier commit."""
    ap.add_argument("--against", default="HEAD~1", help="the earlier commit (default HEAD~1)")
    ap.add_argument(
        "--build-cache",
        type=Path,
        default=Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "pypto-bench-builds",
        help="where earlier versions are kept",
    )


def run_version(
    code: str, args: list[str], site: Path | None, env: dict[str, str], folder: Path
) -> list[str]:
    """Runs ``code`` (from a file in ``folder``: a kernel's source is read from it) in a fresh
    interpreter with ``args``, then ``site`` when it is the earlier version's folder (None: the
    current environment's pypto). Returns the fields of its ``RESULT`` line before the last, the
    file pypto was loaded from, which must be that version's."""
    script = folder / "version_child.py"
    script.write_text(code)
    proc = subprocess.run(
        [sys.executable, str(script), *args] + ([str(site)] if site else []),
        capture_output=True, text=True, env=env, cwd=folder,
    )  # fmt: skip
    version = "earlier" if site else "current"
    if proc.returncode != 0:
        raise RuntimeError(f"the {version} version failed:\n{proc.stderr}")
    *fields, where = next(ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT")).split()[1:]
    if (site is not None) != Path(where).is_relative_to(site or folder):
        raise RuntimeError(f"the {version} version ran pypto from {where}")
    return fields


def build_of(ref: str, cache: Path) -> Path:
    """The folder holding ``ref``'s built package (built on first use)."""
    sha = commit_of(ref)
    target = cache / sha
    if (target / "pypto").is_dir():
        return target
    with tempfile.TemporaryDirectory(prefix="pypto-warm-src-") as src:
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", sha], capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", src], input=archive.stdout, check=True)
        print(f"building {ref} ({sha[:10]}) into {target} ...", flush=True)
        partial = cache / f"{sha}.partial"
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
             "--target", str(partial), src],
            check=True,
        )  # fmt: skip
        partial.rename(target)  # only a finished build counts as one
    return target


def warm_call(site: Path | None, calls: int, folder: Path) -> float:
    """Best seconds of a warm call in a new interpreter; ``site``: the earlier version's package
    folder, None for the current environment's pypto."""
    env = dict(os.environ, PYPTO_CACHE_DIR=str(folder / ("old" if site else "new")))
    (best,) = run_version(CHILD, [str(calls)], site, env, folder)
    return float(best)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    version_args(ap)
    ap.add_argument("--rounds", type=int, default=5, help="alternating rounds; the best of each side")
    ap.add_argument("--calls", type=int, default=3000, help="warm calls per round")
    ap.add_argument("--fail-above", type=float, default=1.25, help="exit 1 above this ratio")
    a = ap.parse_args(argv)
    site = build_of(a.against, a.build_cache)
    with tempfile.TemporaryDirectory(prefix="pypto-warm-") as tmp:
        folder = Path(tmp)
        old = new = float("inf")
        for _ in range(a.rounds):
            old = min(old, warm_call(site, a.calls, folder))
            new = min(new, warm_call(None, a.calls, folder))
    ratio = new / old
    print(
        f"warm call, tiny kernel: this checkout {new * 1e6:.2f} us, {a.against} {old * 1e6:.2f} us, "
        f"ratio {ratio:.2f}   (fails above {a.fail_above})"
    )
    return 1 if ratio > a.fail_above else 0


if __name__ == "__main__":
    sys.exit(main())
