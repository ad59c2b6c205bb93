"""The cache folder: where it lives, its size cap (least recently used first, never an entry in
use), the always-compile knob, and ``python -m pypto.cache {info,clean}``."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import pypto.language as pl
from pypto import cache, knobs
from pypto.kernel_build import KernelSource, build_kernel, kernel_cache_dir, lookup_entry, ninja

OLD = time.time() - 3 * cache.GRACE_S  # long unused


def _source(n: int) -> KernelSource:
    body = 'extern "C" void kernel_entry(__gm__ int64_t* args) { (void)args; }\n'
    code = f"#include <pypto/kernel.hpp>\n// variant {n}\n{body}"
    return KernelSource(name=f"noop{n}", code=code)


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("PYPTO_CACHE_MAX_BYTES", "0")  # builds trim nothing; the tests trim by hand
    return tmp_path / "cache"


def _age(so: Path, when: float) -> None:
    os.utime(so.parent / "meta.json", (when, when))


def _kept(so: Path) -> bool:
    """Whether the entry is still there (without a lookup, which would mark it used)."""
    return (so.parent / "meta.json").exists() and so.exists()


def test_the_folder_follows_xdg_unless_pypto_cache_dir_is_set(tmp_path, monkeypatch):
    monkeypatch.delenv("PYPTO_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert knobs.cache_dir() == tmp_path / "xdg" / "pypto"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/path")  # the XDG spec says: ignore it
    assert knobs.cache_dir() == Path.home() / ".cache" / "pypto"
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "mine"))
    assert knobs.cache_dir() == tmp_path / "mine"


def test_sizes_parse_with_binary_units(monkeypatch):
    for text, value in (("2G", 2 << 30), ("500M", 500 << 20), ("64KiB", 64 << 10), ("1000", 1000), ("0", 0)):
        monkeypatch.setenv("PYPTO_CACHE_MAX_BYTES", text)
        assert knobs.cache_max_bytes() == value
    monkeypatch.setenv("PYPTO_CACHE_MAX_BYTES", "lots")
    with pytest.raises(Exception, match="PYPTO_CACHE_MAX_BYTES='lots'"):
        knobs.cache_max_bytes()


def test_trim_evicts_least_recently_used_first_and_keeps_what_is_in_use(cache_dir):
    sos = [build_kernel(_source(n), platform="a2a3sim") for n in range(4)]
    for n, so in enumerate(sos[:3]):
        _age(so, OLD + n)  # 0 is the least recently used; 3 was just built (in use)
    sizes = {e.path: e.bytes for e in cache.entries() if e.area == "kernels"}
    assert len(sizes) == 4
    lookup_entry(sos[0].parent)  # a hit: entry 0 becomes the most recently used
    cap = sum(sizes.values()) - sizes[sos[1].parent]  # room for all but one
    assert cache.trim(cap=cap, force=True) == sizes[sos[1].parent]
    assert [_kept(so) for so in sos] == [True, False, True, True]
    # over a tiny cap, only the entries unused for the grace period go
    cache.trim(cap=1, force=True)
    assert [_kept(so) for so in sos] == [True, False, False, True]
    assert lookup_entry(sos[2].parent) is None and lookup_entry(sos[3].parent) == sos[3]


def test_an_entry_being_published_is_never_evicted(cache_dir):
    so = build_kernel(_source(10), platform="a2a3sim")
    _age(so, OLD)
    lock = so.parent.parent / f"{so.parent.name}.lock"
    fd = os.open(lock, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # as build.cache.publish holds it
        assert cache.trim(cap=1, force=True) == 0
    finally:
        os.close(fd)
    assert lookup_entry(so.parent) == so
    _age(so, OLD)
    assert cache.trim(cap=1, force=True) > 0 and lookup_entry(so.parent) is None


LOADER = """
import sys
from pathlib import Path
from pypto import _native
from pypto.kernel_build import KernelSource, build_kernel
src = KernelSource(name="noop20", code=sys.stdin.read())
for _ in range(40):
    _native.load_kernel(str(build_kernel(src, platform="a2a3sim")))
"""


def test_concurrent_trims_never_break_a_process_loading_the_entry(cache_dir, tmp_path):
    src = _source(20)
    so = build_kernel(src, platform="a2a3sim")
    _age(so, OLD)  # stale until the loader's first hit marks it used
    child = subprocess.Popen(
        [sys.executable, "-c", LOADER],
        cwd=tmp_path, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    child.stdin.write(src.code)
    child.stdin.close()
    while child.poll() is None:
        cache.trim(cap=1, force=True)
    assert child.returncode == 0, child.stderr.read()
    assert lookup_entry(so.parent) is not None  # in use the whole time after the first hit


@pl.jit
def double(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(a, a)
    return out


def test_always_compile_skips_both_disk_caches(cache_dir, monkeypatch):
    calls = []
    real = ninja.build_and_publish

    def counted(jobs, *args, **kwargs):
        calls.append(len(jobs))
        return real(jobs, *args, **kwargs)

    monkeypatch.setattr(ninja, "build_and_publish", counted)
    a = np.arange(16 * 32, dtype=np.float32).reshape(16, 32)
    for always in (False, False, True):
        monkeypatch.setattr(knobs, "always_compile", always)
        double.__dict__.pop("_pypto_compiled", None)  # a fresh process, as far as caches go
        out = np.zeros_like(a)
        double(a, out)
        np.testing.assert_array_equal(out, a + a)
    assert calls == [1, 1]  # compiled, then a program-cache hit, then compiled again
    monkeypatch.setattr(knobs, "always_compile", None)
    monkeypatch.setenv("PYPTO_ALWAYS_COMPILE", "1")
    assert knobs.recompile()
    assert build_kernel(_source(30), platform="a2a3sim") == build_kernel(_source(30), platform="a2a3sim")
    assert calls == [1, 1, 1, 1]


def _cli(args, env_dir: Path, cwd: Path) -> str:
    env = {**os.environ, "PYPTO_CACHE_DIR": str(env_dir)}
    done = subprocess.run(
        [sys.executable, "-m", "pypto.cache", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def test_info_and_clean_from_the_command_line(cache_dir, tmp_path):
    so = build_kernel(_source(40), platform="a2a3sim")
    runs = cache_dir / "programs" / "k-0123" / "OPPROF_1_000"
    runs.mkdir(parents=True)
    (runs / "trace.json").write_bytes(b"x" * 1000)
    (cache_dir / "tune" / "sweep").mkdir(parents=True)
    (cache_dir / "tune" / "sweep" / "p.json").write_text("{}")
    info = _cli(["info"], cache_dir, tmp_path)
    assert f"location: {cache_dir}" in info
    kernels = next(line for line in info.splitlines() if line.startswith("kernels"))
    assert kernels.split()[1] == "1" and int(kernels.split()[3].replace(",", "")) >= so.stat().st_size
    runs_line = next(line for line in info.splitlines() if line.startswith("runs"))
    assert runs_line.split()[1:4] == ["1", "entries", "1,000"]
    assert "of which 1 OPPROF_* trace folders in runs: 1,000 bytes" in info
    mine = tmp_path / "out" / "trace" / "k"  # a user's output_dir
    for n in range(3):
        (mine / f"OPPROF_{n}").mkdir(parents=True)
        (mine / f"OPPROF_{n}" / "trace.json").write_text("[]")
    (tmp_path / "out" / "report").mkdir()
    _cli(["clean", "--traces", str(tmp_path / "out")], cache_dir, tmp_path)
    assert not any(mine.iterdir()) and (tmp_path / "out" / "report").is_dir() and runs.is_dir()
    _cli(["clean", "--traces"], cache_dir, tmp_path)
    assert not runs.exists() and runs.parent.is_dir()  # the run folder stays, its traces go
    _cli(["clean", "--area", "runs", "--area", "tune"], cache_dir, tmp_path)
    assert not runs.parent.exists() and not (cache_dir / "tune" / "sweep").exists()
    assert lookup_entry(so.parent) == so
    _cli(["clean"], cache_dir, tmp_path)
    assert lookup_entry(so.parent) is None and not any(kernel_cache_dir().glob("*/*/meta.json"))
    assert "info" in _cli(["--help"], cache_dir, tmp_path)
