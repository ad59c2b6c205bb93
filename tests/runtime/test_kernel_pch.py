"""The precompiled ``kernel.hpp`` (cmake/PyptoKernelPch.cmake): gcc uses it for generated
kernels, a missing, truncated, stale or foreign one is never used and never breaks a build, and
it changes nothing about the kernel that comes out."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pypto.kernel_build import KernelSource, build_kernel
from pypto.kernel_build.commands import GENERATED_CXX_FLAGS, GENERATED_FLAGS, compile_command
from pypto.kernel_build.toolchain import BUILD_INFO_NAME, Toolchain, native_dir, toolchain

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("pypto._native") is None
    or not (native_dir() / BUILD_INFO_NAME).is_file()
    or not toolchain().compiler_id.startswith("GNU"),
    reason="needs the native build made with gcc",
)

# Enough of the API (tiles, a loop, flags, a load/compute/store) that the header matters.
KERNEL = """// a generated-style kernel
#include <pypto/kernel.hpp>
using namespace pypto;
extern "C" void kernel_entry(__gm__ int64_t* args) {
  Tensor a = arg_tensor(args, 0);
  Tensor out = arg_tensor(args, 1);
  for (int64_t i = 0; i < 4; ++i) {
    Tile t(Mem::Vec, DType::FP32, 8, 64, 0);
    TLOAD(t, a, i * 8, 0);
    set_flag(PIPE_MTE2, PIPE_V, 0);
    wait_flag(PIPE_MTE2, PIPE_V, 0);
    TEXP(t, t);
    set_flag(PIPE_V, PIPE_MTE3, 0);
    wait_flag(PIPE_V, PIPE_MTE3, 0);
    TSTORE(out, i * 8, 0, t);
  }
}
"""


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def uses_gch(tc: Toolchain, src: Path, tmp_path: Path) -> bool:
    """Whether gcc reads the ``.gch`` for a generated kernel's compile (``-H`` marks it ``!``)."""
    cmd = compile_command(src, tmp_path / "probe.so", (), tc, GENERATED_FLAGS)
    proc = subprocess.run([*cmd, "-H"], capture_output=True, text=True, check=True)
    return any(line.startswith("! ") and line.endswith("kernel.hpp.gch") for line in proc.stderr.splitlines())


def test_installed_pch_matches_the_generated_kernels_flags(tmp_path: Path) -> None:
    tc = toolchain()
    assert tc.pch_dir is not None and (tc.pch_dir / "pypto" / "kernel.hpp.gch").is_file()
    assert tc.pch_flags == (*tc.flags, *GENERATED_CXX_FLAGS)  # else the CMake and Python flags drifted
    src = tmp_path / "k.cpp"
    src.write_text(KERNEL)
    assert uses_gch(tc, src, tmp_path)
    assert not uses_gch(tc.replace(pch_dir=None), src, tmp_path)
    # Hand-written kernels get other flags: never offered the gch, though gcc would take it.
    assert f"-I{tc.pch_dir}" not in compile_command(src, tmp_path / "k.so", (), tc, ())


def test_the_kernel_is_byte_identical_with_and_without_the_pch() -> None:
    tc = toolchain()
    source = KernelSource("k", code=KERNEL)
    with_pch = build_kernel(source, platform="a2a3sim", toolchain=tc)
    without = build_kernel(source, platform="a2a3sim", toolchain=tc.replace(pch_dir=None))
    assert with_pch != without  # two cache entries: whether the pch is used is part of the key
    assert with_pch.read_bytes() == without.read_bytes()


def test_a_second_include_of_the_header_builds_with_the_pch(tmp_path: Path) -> None:
    """Mixed kernels join two generated units, each starting with the #include: the second one
    resolves in the pch folder (where gcc found the gch) and must reach the real header."""
    tc = toolchain()
    two = KERNEL + KERNEL.replace("kernel_entry", "second_entry")
    src = tmp_path / "k.cpp"
    src.write_text(two)
    assert uses_gch(tc, src, tmp_path)
    source = KernelSource("k", code=two)
    so = build_kernel(source, platform="a2a3sim", toolchain=tc)
    plain = build_kernel(source, platform="a2a3sim", toolchain=tc.replace(pch_dir=None))
    assert so.read_bytes() == plain.read_bytes()
    meta = json.loads((so.parent / "meta.json").read_text())
    assert meta["headers"] == {}  # the forwarder is part of the toolchain, not a user header


def copied_native(tmp_path: Path) -> Path:
    """A copy of the installed build_info.json, headers and pch; returns the build_info path."""
    real = native_dir()
    info = json.loads((real / BUILD_INFO_NAME).read_text())
    shutil.copytree(real / info["include_dir"], tmp_path / "include")
    shutil.copytree(real / info["pch_dir"], tmp_path / "pch")
    info.update(include_dir="include", pch_dir="pch", lib_dir=str(real / info["lib_dir"]))
    (tmp_path / BUILD_INFO_NAME).write_text(json.dumps(info))
    return tmp_path / BUILD_INFO_NAME


def _missing(native: Path) -> None:
    (native / "pch" / "pypto" / "kernel.hpp.gch").unlink()


def _truncated(native: Path) -> None:  # gcc would fail on it: "cannot read PCH file"
    gch = native / "pch" / "pypto" / "kernel.hpp.gch"
    gch.write_bytes(gch.read_bytes()[:100_000])


def _stale(native: Path) -> None:  # gcc would use it and compile the old header
    header = native / "include" / "pypto" / "kernel.hpp"
    header.write_text(header.read_text() + "\n// edited after the pch was built\n")


def _no_stamp(native: Path) -> None:
    (native / "pch" / "stamp.json").unlink()


def _no_forwarder(native: Path) -> None:  # a second #include would fail
    (native / "pch" / "pypto" / "kernel.hpp").unlink()


@pytest.mark.parametrize("damage", [_missing, _truncated, _stale, _no_stamp, _no_forwarder])
def test_a_damaged_pch_is_not_used_and_kernels_still_build(tmp_path: Path, damage) -> None:
    info = copied_native(tmp_path)
    intact = Toolchain.from_build_info(info)
    assert intact.pch_dir == tmp_path / "pch"
    damage(tmp_path)
    tc = Toolchain.from_build_info(info)
    assert tc.pch_dir is None and tc.fingerprint != intact.fingerprint
    so = build_kernel(KernelSource("k", code=KERNEL), platform="a2a3sim", toolchain=tc)
    assert so.is_file()


def test_another_compiler_does_not_get_the_pch(tmp_path: Path) -> None:
    info = copied_native(tmp_path)
    wrapper = tmp_path / "other-g++"
    wrapper.write_text(f'#!/bin/sh\nexec {toolchain().cxx} "$@"\n')
    wrapper.chmod(0o755)
    assert Toolchain.from_build_info(info, cxx_override=str(wrapper)).pch_dir is None


def test_a_gch_gcc_rejects_is_skipped(tmp_path: Path) -> None:
    """A gch made with other flags (stamp notwithstanding) is one gcc skips: still a build."""
    tc = toolchain()
    pch = tmp_path / "pch"
    (pch / "pypto").mkdir(parents=True)
    (tmp_path / "wrap.hpp").write_text("#include <pypto/kernel.hpp>\n")
    other = [f for f in tc.flags if not f.startswith("-O")] + ["-O0"]  # no __OPTIMIZE__
    subprocess.run(
        [tc.cxx, *other, f"-I{tc.include_dir}", "-x", "c++-header", str(tmp_path / "wrap.hpp"), "-o",
         str(pch / "pypto" / "kernel.hpp.gch")],
        check=True,
    )  # fmt: skip
    rejected = tc.replace(pch_dir=pch)
    src = tmp_path / "k.cpp"
    src.write_text(KERNEL)
    assert not uses_gch(rejected, src, tmp_path)
    source = KernelSource("k", code=KERNEL)
    so = build_kernel(source, platform="a2a3sim", toolchain=rejected)
    assert so.read_bytes() == build_kernel(source, platform="a2a3sim", toolchain=tc).read_bytes()


RUN_SEED = """
import sys
import numpy as np
sys.path.insert(0, {fixtures!r})
import seed_kernels as sk
from pypto.runtime import RunConfig
a = (np.arange(sk.ROWS * sk.TC) % 3 - 1).astype(np.float32).reshape(sk.ROWS, sk.TC)
out = np.zeros_like(a)
sk.single_buffer(a, out, config=RunConfig(platform="a2a3sim"))
print(out.tobytes().hex()[:64], float(out.sum()), sk.single_buffer.last_report.cycles)
"""


def test_seed_kernel_results_and_cycles_are_the_same_without_the_pch(tmp_path: Path) -> None:
    """A compiler override (a wrapper around the same gcc) turns the pch off; nothing else moves."""
    fixtures = Path(__file__).resolve().parents[1] / "fixtures"
    wrapper = tmp_path / "g++-wrapper"
    wrapper.write_text(f'#!/bin/sh\nexec {toolchain().cxx} "$@"\n')
    wrapper.chmod(0o755)
    code = RUN_SEED.format(fixtures=str(fixtures))

    def run(cache: str, **env: str) -> tuple[str, list[bytes]]:
        full = {**os.environ, "PYPTO_CACHE_DIR": str(tmp_path / cache), **env}
        proc = subprocess.run(  # from tmp_path: the checkout's pypto/ must not shadow the install
            [sys.executable, "-c", code], capture_output=True, text=True, env=full, check=True, cwd=tmp_path
        )
        sos = sorted((tmp_path / cache / "kernels").rglob("*.so"))
        return proc.stdout.strip(), [so.read_bytes() for so in sos]

    with_pch, without = run("a"), run("b", PYPTO_CXX=str(wrapper))
    assert with_pch[1] and with_pch == without
