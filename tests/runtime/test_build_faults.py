"""A failed build never poisons the kernel cache. Faults are injected through PYPTO_CXX: a
wrapper around the real compiler that, while a fault file names a fault, runs the compile
and then damages it — the linker killed mid-write, a file-size limit, a lying exit status, an
output that is an ELF file but no loadable kernel. Each is a typed error now and a correct
build on the next call, in this process and in the next one. Entries damaged after they were
published are rebuilt, never trusted."""

from __future__ import annotations

import json
import shutil
import stat
from pathlib import Path

import numpy as np
import pytest

import pypto.language as pl
from pypto.errors import KernelBuildError, KernelLoadError
from pypto.kernel_build import KernelSource, build_kernel
from pypto.kernel_build.toolchain import toolchain
from pypto.runtime import RunConfig

KERNELS = Path(__file__).resolve().parents[1] / "fixtures" / "kernels"
# The wrapper: FAULT's content picks the damage; the real compiler always runs first.
WRAPPER = """#!/bin/bash
out=""; prev=""
for a in "$@"; do [ "$prev" = "-o" ] && out="$a"; prev="$a"; done
fault=$(cat "{fault}" 2>/dev/null)
[ -z "$out" ] && exec {real} "$@"  # --version
if [ "$fault" = fsize ]; then ulimit -f 4; exec {real} "$@"; fi
{real} "$@" || exit $?
case "$fault" in
  killed) truncate -s 4000 "$out"; kill -KILL $$ ;;
  lying) truncate -s 4000 "$out" ;;
  not-a-kernel) cp /bin/true "$out" ;;
  slow) echo $$ > "{fault}.pid"; sleep 60 & echo $! >> "{fault}.pid"; wait ;;
esac
exit 0
"""
FAULTS = {
    "killed": (KernelBuildError, "the compiler was killed by SIGKILL"),
    "fsize": (KernelBuildError, "the compiler (was killed by SIGXFSZ|exited with status)"),
    "lying": (KernelBuildError, "is truncated: its section table ends at byte"),
    "not-a-kernel": (KernelLoadError, "the built kernel does not load"),
}


@pytest.fixture
def faulty(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """PYPTO_CXX is the wrapper and PYPTO_CACHE_DIR a fresh cache; returns the fault file."""
    fault = tmp_path / "fault"
    wrapper = tmp_path / "faulty-c++"
    wrapper.write_text(WRAPPER.format(fault=fault, real=toolchain().cxx))
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PYPTO_CXX", str(wrapper))
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "cache"))
    return fault


def exp_kernel() -> KernelSource:
    return KernelSource(name="exp_single_buffer", path=KERNELS / "exp_single_buffer.cpp")


def cached_files(tmp_path: Path) -> list[str]:
    return sorted(p.name for p in (tmp_path / "cache" / "kernels").rglob("*") if p.is_file())


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_a_failed_build_is_a_typed_error_then_the_next_call_builds(faulty, tmp_path, fault):
    from pypto.runtime import run_kernel_file

    error, text = FAULTS[fault]
    faulty.write_text(fault)
    with pytest.raises(error, match=text):
        build_kernel(exp_kernel(), platform="a2a3sim")
    assert not [n for n in cached_files(tmp_path) if n.endswith((".so", ".json"))], "nothing published"
    faulty.unlink()
    so = build_kernel(exp_kernel(), platform="a2a3sim")
    a, out = np.ones((64, 128), np.float32), np.zeros((64, 128), np.float32)
    run_kernel_file(so, [a, out], outputs={1})
    np.testing.assert_allclose(out, np.exp(a), rtol=1e-6)


@pl.jit
def double(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        pl.store(pl.muls(pl.load(a, [0, 0], [64, 128]), 2.0), [0, 0], out)
    return out


CALL_DOUBLE = """
    import numpy as np
    from test_build_faults import double
    out = np.zeros((64, 128), np.float32)
    try:
        double(np.ones((64, 128), np.float32), out)
        print("ran", out[0, 0])
    except Exception as e:
        print(type(e).__name__)
"""


@pytest.mark.parametrize("fault", ["killed", "fsize"])
def test_the_next_process_is_not_poisoned(faulty, tmp_path, run_python, fault):
    """The original failure: a killed link published a truncated .so and every later process
    failed on it until the cache was deleted by hand."""
    faulty.write_text(fault)
    here = str(Path(__file__).parent)
    assert run_python(CALL_DOUBLE, PYTHONPATH=here).stdout.split() == ["KernelBuildError"]
    faulty.unlink()
    assert run_python(CALL_DOUBLE, PYTHONPATH=here).stdout.split() == ["ran", "2.0"]


# --- entries damaged after they were published --------------------------------------------------
def _republish(so: Path, data: bytes) -> Path:
    """Replace the entry's .so by ``data`` with a consistent meta.json: what a writer that does
    not verify would have published. The new file gets a new name (never loaded here yet)."""
    from pypto._light import sha256

    meta_file = so.parent / "meta.json"
    meta = json.loads(meta_file.read_text())
    bad = so.parent / "kernel-badbadbadbadbadb.so"
    bad.write_bytes(data)
    so.unlink()
    meta.update(so=bad.name, so_size=len(data), so_sha256=sha256(data).hexdigest())
    meta_file.write_text(json.dumps(meta))
    return bad


def test_a_truncated_entry_with_a_consistent_meta_is_rebuilt(faulty, tmp_path, caplog):
    so = build_kernel(exp_kernel(), platform="a2a3sim")
    bad = _republish(so, so.read_bytes()[:4000])
    rebuilt = build_kernel(exp_kernel(), platform="a2a3sim")
    assert rebuilt != bad and not bad.exists() and rebuilt.read_bytes() == so.read_bytes()
    assert "corrupt kernel cache entry" in caplog.text and "is truncated" in caplog.text


def test_an_entry_that_does_not_load_is_rebuilt(faulty, tmp_path, caplog):
    """It passes every file check (an ELF shared object of the recorded size and hash) and is
    found out when it does not load: evicted, rebuilt, run."""
    a, out = np.ones((64, 128), np.float32), np.zeros((64, 128), np.float32)
    double(a, out, config=RunConfig(platform="a5sim"))
    for meta_file in (tmp_path / "cache" / "kernels").rglob("meta.json"):
        _republish(meta_file.parent / json.loads(meta_file.read_text())["so"], Path("/bin/true").read_bytes())
    double.__dict__.pop("_pypto_compiled")  # as a new process would: from the program cache
    out[:] = 0
    double(a, out, config=RunConfig(platform="a5sim"))
    assert (out == 2).all()
    assert "does not load" in caplog.text


def test_a_program_cache_hit_whose_kernel_does_not_load_is_rebuilt(faulty, tmp_path, run_python):
    here = str(Path(__file__).parent)
    assert run_python(CALL_DOUBLE, PYTHONPATH=here).stdout.split() == ["ran", "2.0"]
    for meta_file in (tmp_path / "cache" / "kernels").rglob("meta.json"):
        _republish(meta_file.parent / json.loads(meta_file.read_text())["so"], Path("/bin/true").read_bytes())
    done = run_python(CALL_DOUBLE, PYTHONPATH=here)
    assert done.stdout.split() == ["ran", "2.0"], done.stderr
    assert "does not load" in done.stderr and "rebuilding" in done.stderr
    shutil.rmtree(tmp_path / "cache")


def test_ctrl_c_during_a_build_stops_the_compilers(faulty, tmp_path):
    """Ctrl-C while compilers run: KeyboardInterrupt at once, every compiler process (and its
    children) gone, nothing published."""
    import os
    import signal
    import subprocess
    import sys
    import time

    faulty.write_text("slow")
    code = "from test_build_faults import *; build_kernel(exp_kernel(), platform='a2a3sim')"
    env = {**os.environ, "SKBUILD_EDITABLE_VERBOSE": "0", "PYTHONPATH": str(Path(__file__).parent)}
    child = subprocess.Popen(  # outside the checkout: the installed pypto, not the source tree
        [sys.executable, "-c", code], env=env, stderr=subprocess.PIPE, text=True, cwd=tmp_path
    )
    pids = Path(f"{faulty}.pid")
    deadline = time.monotonic() + 120
    while len(pids.read_text().split()) < 2 if pids.exists() else True:
        assert time.monotonic() < deadline and child.poll() is None, "the compiler never started"
        time.sleep(0.05)
    child.send_signal(signal.SIGINT)
    _, err = child.communicate(timeout=30)
    assert "KeyboardInterrupt" in err
    for pid in map(int, pids.read_text().split()):  # the wrapper and its `sleep`
        assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().split()[2]
    assert not [n for n in cached_files(tmp_path) if n.endswith((".so", ".json"))]
