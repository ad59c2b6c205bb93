"""Quiet by default: a rerun of an unchanged kernel prints nothing, hint summaries go through
logging (PYPTO_LOG_LEVEL), and perf_hints.log is rewritten per compile, one per source file."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

KERNEL = """
import numpy as np
import pypto.language as pl

COLS = {cols}

@pl.jit
def narrow_copy(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [64, COLS])
        pl.store(t, [0, 0], out)
    return out
"""
MAIN = """
import numpy as np
from kernel import COLS, narrow_copy

a = np.ones((64, COLS), np.float32)
out = np.zeros_like(a)
narrow_copy(a, out)
assert (out == a).all()
"""


def _run(folder: Path, **env: str) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items() if k != "PYPTO_LOG_LEVEL"}
    full.update(PYPTO_CACHE_DIR=str(folder / "cache"), SKBUILD_EDITABLE_VERBOSE="0", **env)
    return subprocess.run(
        [sys.executable, "main.py"], cwd=folder, env=full, capture_output=True, text=True, timeout=300
    )


def test_a_second_run_of_an_unchanged_kernel_prints_nothing(tmp_path: Path):
    (tmp_path / "kernel.py").write_text(KERNEL.format(cols=16))
    (tmp_path / "main.py").write_text(MAIN)
    first = _run(tmp_path)
    assert first.returncode == 0, first.stderr
    assert first.stdout == "" and first.stderr.startswith("[perf_hint] 2 hints across 2 sites; see ")
    (log,) = (tmp_path / "cache" / "programs").glob("narrow_copy-*/report/perf_hints.log")
    lines = log.read_text().splitlines()
    assert len(lines) == 2 and all(line.startswith("[perf_hint PH001]") for line in lines)
    second = _run(tmp_path)
    assert (second.returncode, second.stdout, second.stderr) == (0, "", "")
    assert log.read_text().splitlines() == lines  # rewritten, not appended to
    shown = _run(tmp_path, PYPTO_LOG_LEVEL="info")
    assert shown.returncode == 0 and shown.stderr.startswith("[perf_hint] 2 hints across 2 sites")
    silent = _run(tmp_path, PYPTO_LOG_LEVEL="ERROR")
    assert (silent.returncode, silent.stdout, silent.stderr) == (0, "", "")


def test_a_changed_kernel_shows_its_new_hints_and_its_log_holds_only_them(tmp_path: Path):
    (tmp_path / "main.py").write_text(MAIN)
    (tmp_path / "kernel.py").write_text(KERNEL.format(cols=16))
    assert _run(tmp_path).returncode == 0
    # A new size too: within the same second, Python would take the old .pyc for same-size source.
    (tmp_path / "kernel.py").write_text(KERNEL.format(cols=32) + "# edited\n")
    again = _run(tmp_path)
    assert again.returncode == 0 and again.stderr.startswith("[perf_hint] 2 hints")
    logs = list((tmp_path / "cache" / "programs").glob("narrow_copy-*/report/perf_hints.log"))
    new = [log for log in logs if "= 128B" in log.read_text()]  # 32 fp32 rows
    (log,) = new
    assert "= 64B" not in log.read_text() and len(log.read_text().splitlines()) == 2


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_two_source_files_with_one_kernel_name_never_share_a_log(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "cache"))
    compiled = []
    for cols in (16, 32):
        src = tmp_path / f"k{cols}" / "kernel.py"
        src.parent.mkdir()
        src.write_text(KERNEL.format(cols=cols))
        a = np.ones((64, cols), np.float32)
        compiled.append(_load(src, f"kernel{cols}").narrow_copy.compile(a, np.zeros_like(a)))
    assert compiled[0].output_dir != compiled[1].output_dir
    logs = [(c.output_dir / "report" / "perf_hints.log").read_text() for c in compiled]
    assert "= 64B" in logs[0] and "= 128B" in logs[1] and "= 128B" not in logs[0]


def test_the_log_level_knob_refuses_a_wrong_level(monkeypatch):
    from pypto import knobs
    from pypto.errors import PyptoError

    monkeypatch.setenv("PYPTO_LOG_LEVEL", "loud")
    with pytest.raises(PyptoError, match="PYPTO_LOG_LEVEL='loud'.*DEBUG, INFO, WARNING"):
        knobs.log_level()
