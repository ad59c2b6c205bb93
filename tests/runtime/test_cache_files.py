"""Caches and output folders: a read-only, fully populated cache serves hits without writing a
byte into it; a cache or output folder that cannot be used is a CacheDirError naming
``PYPTO_CACHE_DIR`` or ``output_dir``."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from pypto.errors import CacheDirError
from pypto.runtime import RunConfig

# Subprocesses run outside the checkout: its pypto/ (no native module) must not shadow the
# installed package.
HERE = Path(__file__).resolve().parent

KERNEL = """
import pypto.language as pl

@pl.jit
def twice(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [8, 64])
        pl.store(pl.muls(t, 2.0), [0, 0], out)
    return out
"""

# Makes every write under the cache an error, as a read-only mount would (the tests run as
# root, for whom file modes do not stop writes).
READ_ONLY_GUARD = """
import os, sys
ROOT = os.path.realpath(os.environ["PYPTO_CACHE_DIR"])
WRITE = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
def guard(event, args):
    if event == "open" and args[0] is not None and not isinstance(args[0], int):
        flags = args[2] if isinstance(args[2], int) else 0
        if flags & WRITE and os.path.realpath(args[0]).startswith(ROOT):
            raise PermissionError(f"read-only cache: open {args[0]} for writing")
    elif event in ("os.mkdir", "os.rename", "os.remove", "os.rmdir", "os.chmod", "os.utime",
                   "os.truncate", "os.link", "os.symlink"):
        for path in args[:2]:
            if isinstance(path, (str, bytes, os.PathLike)) and os.path.realpath(path).startswith(ROOT):
                raise PermissionError(f"read-only cache: {event} {path}")
sys.addaudithook(guard)
"""

RUN = """
import sys
import numpy as np
sys.path.insert(0, {folder!r})
import kern

a = np.arange(8 * 64, dtype=np.float32).reshape(8, 64)
out = np.zeros_like(a)
kern.twice(a, out)
assert (out == 2 * a).all()
print("ok", kern.twice.last_report.cycles)
"""


def snapshot(root: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*")}


def run_child(tmp_path: Path, cache: Path, guard: bool) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYPTO_CACHE_DIR": str(cache)}
    code = (READ_ONLY_GUARD if guard else "") + RUN.format(folder=str(tmp_path))
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env, cwd=HERE
    )


def test_read_only_populated_cache_serves_hits_and_is_not_written(tmp_path: Path):
    (tmp_path / "kern.py").write_text(KERNEL)
    cache = tmp_path / "cache"
    first = run_child(tmp_path, cache, guard=False)
    assert first.returncode == 0, first.stderr
    before = snapshot(cache)
    second = run_child(tmp_path, cache, guard=True)
    assert second.returncode == 0, second.stderr
    assert second.stdout.split()[-2:] == first.stdout.split()[-2:]  # same cycles
    assert snapshot(cache) == before


def test_read_only_empty_cache_is_a_typed_error(tmp_path: Path):
    (tmp_path / "kern.py").write_text(KERNEL)
    cache = tmp_path / "cache"
    cache.mkdir()
    child = run_child(tmp_path, cache, guard=True)
    assert child.returncode != 0
    assert "CacheDirError" in child.stderr and f"PYPTO_CACHE_DIR={cache}" in child.stderr


def load_kernel(tmp_path: Path):
    import importlib.util

    (tmp_path / "kern_files.py").write_text(KERNEL)
    spec = importlib.util.spec_from_file_location(f"kern_files_{tmp_path.name}", tmp_path / "kern_files.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.twice


def test_cache_dir_that_is_a_file_names_the_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x")
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(blocker))
    a = np.ones((8, 64), np.float32)
    with pytest.raises(CacheDirError, match=r"PYPTO_CACHE_DIR=.*not-a-folder is not usable"):
        load_kernel(tmp_path)(a, np.zeros_like(a))


def test_output_dir_that_is_a_file_names_the_field(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "cache"))
    blocker = tmp_path / "out-file"
    blocker.write_text("x")
    a = np.ones((8, 64), np.float32)
    with pytest.raises(CacheDirError, match=r"^output_dir is not usable: .*out-file"):
        load_kernel(tmp_path)(a, np.zeros_like(a), config=RunConfig(output_dir=blocker))


def test_traced_run_into_an_unusable_output_dir_names_the_field(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "cache"))
    kernel = load_kernel(tmp_path)
    a = np.ones((8, 64), np.float32)
    compiled = kernel.compile(a, np.zeros_like(a), config=RunConfig(output_dir=tmp_path / "out"))
    (tmp_path / "out" / "trace").write_text("a file where the trace folder goes")
    with pytest.raises(CacheDirError, match=r"^output_dir is not usable: .*trace"):
        compiled.run(a, np.zeros_like(a), trace=True)
