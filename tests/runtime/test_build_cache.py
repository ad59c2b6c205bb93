"""Kernel build + cache (pypto.kernel_build): hits, misses, corruption, header edits, compiler
errors and concurrent builders.

The tests use an explicit :class:`Toolchain` (the system ``c++`` behind a wrapper that counts its
invocations, and a stub ``<pypto/kernel.hpp>``), so they run without pypto's native build; one
test at the end uses the real installed toolchain when it exists.
"""

from __future__ import annotations

import ctypes
import importlib.util
import json
import logging
import os
import pickle
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from pypto import knobs
from pypto.errors import KernelBuildError, PyptoError
from pypto.kernel_build import KernelSource, build_kernel, build_kernels, kernel_cache_dir
from pypto.kernel_build.toolchain import Toolchain, detect_compiler_id, toolchain

STUB_HEADER = """#pragma once
#include <stdint.h>
#define __gm__
#define __aicore__
"""

# A kernel that stores `value` into args[0], so a test can tell which build it loaded.
KERNEL = """#include <pypto/kernel.hpp>
extern "C" void kernel_entry(__gm__ int64_t* args) {{ args[0] = {value}; }}
"""

COUNT_ENV = "PYPTO_TEST_CXX_COUNT"


@pytest.fixture(scope="module")
def tc(tmp_path_factory: pytest.TempPathFactory) -> Toolchain:
    """A toolchain over the system compiler and a stub kernel header."""
    root = tmp_path_factory.mktemp("toolchain")
    (root / "include" / "pypto").mkdir(parents=True)
    (root / "include" / "pypto" / "kernel.hpp").write_text(STUB_HEADER)
    real = shutil.which("c++") or shutil.which("g++") or shutil.which("clang++")
    if real is None:
        pytest.skip("no C++ compiler on PATH")
    wrapper = root / "counting-c++"
    wrapper.write_text(f'#!/bin/sh\n[ -n "${COUNT_ENV}" ] && echo x >> "${COUNT_ENV}"\nexec {real} "$@"\n')
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IEXEC)
    return Toolchain.create(root / "include", cxx=str(wrapper), compiler_id=detect_compiler_id(real))


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private cache dir, and a fresh compiler-invocation counter, for each test."""
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv(COUNT_ENV, str(tmp_path / "cxx-count"))
    return tmp_path / "cache"


def compiles(tmp_path: Path) -> int:
    """How many times the compiler ran in this test."""
    counter = tmp_path / "cxx-count"
    return len(counter.read_text().split()) if counter.exists() else 0


def run(so: Path) -> int:
    """Load ``so`` and call its ``kernel_entry``; returns what it stored in args[0]."""
    args = (ctypes.c_int64 * 1)(0)
    ctypes.CDLL(str(so)).kernel_entry(args)
    return args[0]


def kernel_including(include: str, value: str) -> str:
    """KERNEL storing ``value``, with one more ``#include`` after the kernel header."""
    return KERNEL.format(value=value).replace("kernel.hpp>", f"kernel.hpp>\n#include {include}")


def code_kernel(name: str = "k", value: int = 1) -> KernelSource:
    return KernelSource(name, code=KERNEL.format(value=value))


# --- hits and misses -----------------------------------------------------------------------------
def test_second_build_is_a_hit(tc: Toolchain, tmp_path: Path, cache: Path) -> None:
    so = build_kernel(code_kernel(value=7), platform="a2a3sim", toolchain=tc)
    assert so.is_file() and so.is_relative_to(cache / "kernels")
    assert run(so) == 7
    mtime = so.stat().st_mtime_ns
    again = build_kernel(code_kernel(value=7), platform="a2a3sim", toolchain=tc)
    assert again == so
    assert compiles(tmp_path) == 1
    assert so.stat().st_mtime_ns == mtime
    assert not any((cache / "tmp").iterdir()), "the private build dir is removed"


def test_entry_layout_and_meta(tc: Toolchain, cache: Path) -> None:
    so = build_kernel(code_kernel(), platform="a2a3sim", toolchain=tc)
    entry = so.parent
    key = entry.name
    assert entry == cache / "kernels" / key[:2] / key
    assert (entry.parent / f"{key}.lock").exists()
    meta = json.loads((entry / "meta.json").read_text())
    assert meta["so"] == so.name
    assert meta["so_size"] == so.stat().st_size
    assert meta["platform"] == "a2a3sim" and meta["name"] == "k"
    assert meta["headers"] == {}, "the toolchain's own headers are covered by its fingerprint"


def test_source_and_platform_select_the_entry(tc: Toolchain, tmp_path: Path) -> None:
    base = build_kernel(code_kernel(value=1), platform="a2a3sim", toolchain=tc)
    other_code = build_kernel(code_kernel(value=2), platform="a2a3sim", toolchain=tc)
    other_platform = build_kernel(code_kernel(value=1), platform="a5sim", toolchain=tc)
    assert len({base.parent, other_code.parent, other_platform.parent}) == 3
    assert (run(base), run(other_code)) == (1, 2)
    # The name labels files and errors; it is not part of the key.
    assert build_kernel(code_kernel("renamed", 1), platform="a2a3sim", toolchain=tc) == base
    assert compiles(tmp_path) == 3


def test_toolchain_change_is_a_miss(tc: Toolchain, tmp_path: Path) -> None:
    base = build_kernel(code_kernel(), platform="a2a3sim", toolchain=tc)
    flags = Toolchain.create(tc.include_dir, cxx=tc.cxx, compiler_id=tc.compiler_id, flags=(*tc.flags, "-g"))
    assert build_kernel(code_kernel(), platform="a2a3sim", toolchain=flags).parent != base.parent
    assert compiles(tmp_path) == 2


def test_many_kernels_build_in_one_call_in_order(tc: Toolchain, tmp_path: Path) -> None:
    sources = [code_kernel(f"k{i}", i) for i in range(4)] + [code_kernel("k1", 1)]
    paths = build_kernels(sources, platform="a2a3sim", toolchain=tc)
    assert [run(p) for p in paths] == [0, 1, 2, 3, 1]
    assert paths[1] == paths[4]
    assert compiles(tmp_path) == 4, "a duplicate source is built once"
    assert build_kernels(sources, platform="a2a3sim", toolchain=tc) == paths
    assert compiles(tmp_path) == 4


# --- corrupt entries -----------------------------------------------------------------------------
def _truncate(so: Path) -> None:
    so.write_bytes(so.read_bytes()[:100])


def _flip_byte(so: Path) -> None:  # same size: only the hash can tell
    data = bytearray(so.read_bytes())
    data[len(data) // 2] ^= 0xFF
    so.write_bytes(bytes(data))


def _garble_meta(so: Path) -> None:
    (so.parent / "meta.json").write_text("{not json")


@pytest.mark.parametrize("damage", [_truncate, _flip_byte, Path.unlink, _garble_meta])
def test_corrupt_entry_is_rebuilt(tc: Toolchain, tmp_path: Path, damage, caplog) -> None:
    so = build_kernel(code_kernel(value=5), platform="a2a3sim", toolchain=tc)
    assert build_kernel(code_kernel(value=5), platform="a2a3sim", toolchain=tc) == so  # memoised hash
    damage(so)
    with caplog.at_level(logging.WARNING, logger="pypto.kernel_build"):
        rebuilt = build_kernel(code_kernel(value=5), platform="a2a3sim", toolchain=tc)
    assert "corrupt kernel cache entry" in caplog.text
    assert compiles(tmp_path) == 2
    assert run(rebuilt) == 5
    assert sorted(p.name for p in rebuilt.parent.iterdir()) == sorted([rebuilt.name, "meta.json"])


# --- path sources and their headers --------------------------------------------------------------
def _external_kernel(folder: Path, value: int) -> Path:
    """A two-file kernel: the entry includes a header from a sibling folder."""
    (folder / "inc").mkdir(parents=True, exist_ok=True)
    (folder / "inc" / "value.h").write_text(f"#define VALUE {value}\n")
    src = folder / "my_kernel.cpp"
    src.write_text(kernel_including('"inc/value.h"', "VALUE"))
    return src


def test_edited_header_rebuilds_a_path_source(tc: Toolchain, tmp_path: Path) -> None:
    src = _external_kernel(tmp_path / "ext", value=10)
    kernel = KernelSource("my_kernel", path=src)
    first = build_kernel(kernel, platform="a2a3sim", toolchain=tc)
    assert run(first) == 10
    meta = json.loads((first.parent / "meta.json").read_text())
    assert list(meta["headers"]) == [str((tmp_path / "ext" / "inc" / "value.h").resolve())]
    assert build_kernel(kernel, platform="a2a3sim", toolchain=tc) == first
    assert compiles(tmp_path) == 1

    (tmp_path / "ext" / "inc" / "value.h").write_text("#define VALUE 11\n")
    second = build_kernel(kernel, platform="a2a3sim", toolchain=tc)
    assert compiles(tmp_path) == 2
    assert second.parent == first.parent and second != first, "same key, new content-named file"
    assert run(second) == 11, "a new path, so dlopen does not hand back the old library"
    assert not first.exists()
    assert build_kernel(kernel, platform="a2a3sim", toolchain=tc) == second


def test_edited_source_file_rebuilds(tc: Toolchain, tmp_path: Path) -> None:
    src = tmp_path / "k.cpp"
    src.write_text(KERNEL.format(value=1))
    first = build_kernel(KernelSource("k", path=src), platform="a2a3sim", toolchain=tc)
    src.write_text(KERNEL.format(value=2))
    second = build_kernel(KernelSource("k", path=src), platform="a2a3sim", toolchain=tc)
    assert second.parent != first.parent
    assert (run(first), run(second)) == (1, 2)


def test_include_dirs_are_searched_and_tracked(tc: Toolchain, tmp_path: Path) -> None:
    (tmp_path / "extra").mkdir()
    (tmp_path / "extra" / "v.h").write_text("#define V 3\n")
    kernel = KernelSource("k", code=kernel_including("<v.h>", "V"), include_dirs=(tmp_path / "extra",))
    assert run(build_kernel(kernel, platform="a2a3sim", toolchain=tc)) == 3
    (tmp_path / "extra" / "v.h").write_text("#define V 42\n")
    assert run(build_kernel(kernel, platform="a2a3sim", toolchain=tc)) == 42
    assert compiles(tmp_path) == 2


# --- errors --------------------------------------------------------------------------------------
def test_compile_error_carries_the_diagnostics(tc: Toolchain, cache: Path) -> None:
    bad = KernelSource("broken", code=KERNEL.format(value="undeclared_name"))
    with pytest.raises(KernelBuildError) as info:
        build_kernel(bad, platform="a2a3sim", toolchain=tc)
    message = str(info.value)
    assert "kernel 'broken' failed to build" in message
    assert "broken.cpp:2:" in message and "error:" in message and "undeclared_name" in message
    assert not (cache / "kernels").exists() or not any((cache / "kernels").rglob("*.so"))


def test_compile_error_in_a_path_source_names_the_file(tc: Toolchain, tmp_path: Path) -> None:
    src = tmp_path / "ext" / "bad.cpp"
    src.parent.mkdir()
    src.write_text("#include <pypto/kernel.hpp>\n\nint f() { return }\n")
    with pytest.raises(KernelBuildError, match=rf"{src}:3:\d+: error:"):
        build_kernel(KernelSource("bad", path=src), platform="a2a3sim", toolchain=tc)


def test_failure_keeps_the_other_kernels(tc: Toolchain, tmp_path: Path) -> None:
    good, bad = code_kernel("good", 1), KernelSource("bad", code="#error nope\n")
    with pytest.raises(KernelBuildError, match="'bad'"):
        build_kernels([good, bad], platform="a2a3sim", toolchain=tc)
    assert run(build_kernel(good, platform="a2a3sim", toolchain=tc)) == 1
    assert compiles(tmp_path) == 2


def test_long_diagnostics_are_trimmed(tc: Toolchain) -> None:
    code = "#include <pypto/kernel.hpp>\n" + "".join(f"int f{i}() {{ return x{i}; }}\n" for i in range(200))
    with pytest.raises(KernelBuildError) as info:
        build_kernel(KernelSource("noisy", code=code), platform="a2a3sim", toolchain=tc)
    assert "x0" in str(info.value) and "more lines" in str(info.value)
    assert len(str(info.value)) < 5000


def test_missing_compiler_is_a_build_error(tc: Toolchain) -> None:
    broken = Toolchain.create(tc.include_dir, cxx="/nonexistent/c++", compiler_id="none")
    with pytest.raises(KernelBuildError, match="not found"):
        build_kernel(code_kernel(), platform="a2a3sim", toolchain=broken)


def test_missing_source_file_shows_the_resolved_path(tc: Toolchain, tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "k.cpp"
    with pytest.raises(KernelBuildError, match=str(missing)):
        build_kernel(KernelSource("k", path=missing), platform="a2a3sim", toolchain=tc)


def test_kernel_source_takes_exactly_one_of_code_and_path() -> None:
    with pytest.raises(PyptoError, match="exactly one"):
        KernelSource("k")
    with pytest.raises(PyptoError, match="exactly one"):
        KernelSource("k", code="", path=Path("k.cpp"))
    with pytest.raises(PyptoError, match="kernel name"):
        KernelSource("../evil", code="")


def test_two_different_kernels_with_one_name_are_rejected(tc: Toolchain) -> None:
    with pytest.raises(PyptoError, match="both named 'k'"):
        build_kernels([code_kernel("k", 1), code_kernel("k", 2)], platform="a2a3sim", toolchain=tc)


# --- output_dir ----------------------------------------------------------------------------------
def test_output_dir_gets_the_sources_and_the_ninja_build(tc: Toolchain, tmp_path: Path, cache: Path) -> None:
    out = tmp_path / "out"
    ext = _external_kernel(tmp_path / "ext", value=4)
    sources = [code_kernel("gen", 9), KernelSource("ext", path=ext)]
    paths = build_kernels(sources, platform="a2a3sim", output_dir=out, toolchain=tc)
    assert [run(p) for p in paths] == [9, 4]
    assert all(p.is_relative_to(cache / "kernels") for p in paths)
    assert (out / "kernels" / "gen.cpp").read_text() == KERNEL.format(value=9)
    assert not (out / "kernels" / "ext.cpp").exists(), "a path source is compiled in place"
    ninja_file = (out / "build" / "build.ninja").read_text()
    assert "deps = gcc" in ninja_file and str(ext) in ninja_file
    shutil.rmtree(cache)
    assert build_kernels(sources, platform="a2a3sim", output_dir=out, toolchain=tc) == paths


def test_the_written_build_ninja_rebuilds_the_kernels_by_hand(
    tc: Toolchain, tmp_path: Path, cache: Path
) -> None:
    ninja = shutil.which(
        "ninja", path=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    )
    if ninja is None:
        pytest.skip("no ninja installed (pypto itself never runs it)")
    out = tmp_path / "out"
    paths = build_kernels([code_kernel("gen", 7)], platform="a2a3sim", output_dir=out, toolchain=tc)
    built = sorted((out / "build").glob("gen.*.so"))
    for so in built:
        so.unlink()
    subprocess.run([ninja, "-C", str(out / "build")], check=True, capture_output=True)
    assert [so.name for so in sorted((out / "build").glob("gen.*.so"))] == [so.name for so in built]
    assert run(built[0]) == 7 and built[0].read_bytes() == paths[0].read_bytes()
    again = subprocess.run([ninja, "-C", str(out / "build")], check=True, capture_output=True, text=True)
    assert "no work to do" in again.stdout  # its depfile edges are up to date


# --- concurrency ---------------------------------------------------------------------------------
_CHILD = """
import pickle, sys, time
from pathlib import Path
from pypto.kernel_build import build_kernel
tc, source, go = pickle.loads(Path(sys.argv[1]).read_bytes())
while not Path(go).exists():  # start together: the race is the point
    time.sleep(0.001)
print(build_kernel(source, platform="a2a3sim", toolchain=tc))
"""


def test_two_processes_building_one_kernel(tc: Toolchain, tmp_path: Path) -> None:
    # Plain subprocesses, not multiprocessing: test modules are not importable by name in a
    # spawned child under --import-mode=importlib.
    job = tmp_path / "job.pickle"
    job.write_bytes(pickle.dumps((tc, code_kernel(value=99), str(tmp_path / "go"))))
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _CHILD, str(job)], stdout=subprocess.PIPE, text=True, cwd=tmp_path
        )  # not the repo root: import the installed package
        for _ in range(3)
    ]
    (tmp_path / "go").touch()
    outs = [p.communicate(timeout=120)[0].strip().splitlines()[-1] for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0]
    assert len(set(outs)) == 1
    so = Path(outs[0])
    assert sorted(p.name for p in so.parent.iterdir()) == sorted([so.name, "meta.json"])
    assert build_kernel(code_kernel(value=99), platform="a2a3sim", toolchain=tc) == so
    assert run(so) == 99


# --- knobs and the toolchain record --------------------------------------------------------------
def test_knobs_are_read_lazily(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "elsewhere"))
    assert kernel_cache_dir() == tmp_path / "elsewhere" / "kernels"
    monkeypatch.delenv("PYPTO_CACHE_DIR")
    assert knobs.cache_dir() == Path.home() / ".cache" / "pypto"
    monkeypatch.setenv("PYPTO_BUILD_JOBS", "3")
    assert knobs.build_jobs() == 3
    monkeypatch.setenv("PYPTO_BUILD_JOBS", "zero")
    with pytest.raises(PyptoError, match="PYPTO_BUILD_JOBS"):
        knobs.build_jobs()
    monkeypatch.setenv("PYPTO_KEEP_BUILD", "yes")
    assert knobs.keep_build() is True


def test_keep_build_keeps_the_build_dir(tc: Toolchain, cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYPTO_KEEP_BUILD", "1")
    build_kernel(code_kernel(), platform="a2a3sim", toolchain=tc)
    (kept,) = (cache / "tmp").iterdir()
    assert (kept / "build.ninja").is_file() and (kept / "kernels" / "k.cpp").is_file()


def test_toolchain_from_build_info(tc: Toolchain, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    native = tmp_path / "native"
    shutil.copytree(tc.include_dir, native / "include")
    info = {"cxx": tc.cxx, "compiler_id": "GNU 12.2.0", "cxx_flags": list(tc.flags), "ldflags": ["-shared"],
            "include_dir": "include", "lib_dir": ".", "libs": ["pypto_sim"], "version": "0.1.0",
            "abi_version": 1}  # fmt: skip
    (native / "build_info.json").write_text(json.dumps(info))
    loaded = Toolchain.from_build_info(native / "build_info.json")
    assert (loaded.include_dir, loaded.lib_dir, loaded.libs) == (native / "include", native, ("pypto_sim",))
    assert loaded.compiler_id == "GNU 12.2.0"
    (native / "include" / "pypto" / "kernel.hpp").write_text(STUB_HEADER + "// edited\n")
    assert Toolchain.from_build_info(native / "build_info.json").fingerprint != loaded.fingerprint
    override = Toolchain.from_build_info(native / "build_info.json", cxx_override=shutil.which("c++"))
    assert override.cxx == shutil.which("c++") and override.compiler_id != "GNU 12.2.0"


@pytest.mark.skipif(importlib.util.find_spec("pypto._native") is None, reason="pypto._native is not built")
def test_real_toolchain_builds_a_loadable_kernel() -> None:
    real = toolchain()
    assert (real.include_dir / "pypto" / "kernel.hpp").is_file()
    so = build_kernel(code_kernel(value=123), platform="a2a3sim")
    assert build_kernel(code_kernel(value=123), platform="a2a3sim") == so
    assert os.access(so, os.R_OK)
    assert run(so) == 123


def test_depfile_parsing_keeps_escaped_spaces_and_continuations() -> None:
    from pypto.kernel_build import parse_depfile

    text = "out.so: /src/k.cpp /inc/my\\ dir/a.h \\\n  /inc/b$$.h\n"
    assert parse_depfile(text) == ["/src/k.cpp", "/inc/my dir/a.h", "/inc/b$.h"]
    assert parse_depfile("") == []
