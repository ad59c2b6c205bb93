"""Comparing two runs: RunReport.diff and ``pypto-report diff`` on the saved reports of two GEMM
tilings name the pipe and the kernel that changed, absolute and in %; the memory counters are
printed and in the JSON."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import pypto.language as pl
from pypto.runtime import PIPES, RunReport

S = 256


def gemm_then_exp(t: int):
    """A GEMM in t x t output tiles (one task each), then an exp kernel that tiling leaves alone."""

    @pl.jit
    def tiled(a: pl.Tensor, b: pl.Tensor, x: pl.Tensor, c: pl.Out[pl.Tensor], y: pl.Out[pl.Tensor]):
        for blk in pl.parallel(0, (S // t) * (S // t)):
            with pl.at(level=pl.Level.CORE_GROUP, name_hint="gemm_tile"):
                r = (blk // (S // t)) * t
                q = (blk % (S // t)) * t
                c[r : r + t, q : q + t] = pl.matmul(a[r : r + t, :], b[:, q : q + t], out_dtype=pl.FP32)
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="exp_rows"):
            tile = pl.load(x, [0, 0], [64, 128])
            pl.store(pl.exp(tile), [0, 0], y)
        return c, y

    return tiled


@pytest.fixture(scope="module")
def tilings(tmp_path_factory) -> tuple[Path, Path]:
    """The saved reports of the 128 x 128 tiling (A) and the 64 x 64 one (B), outputs checked."""
    rng = np.random.default_rng(3)
    a = rng.uniform(-1, 1, (S, S)).astype(np.float16)
    b = rng.uniform(-1, 1, (S, S)).astype(np.float16)
    x = rng.uniform(-1, 1, (64, 128)).astype(np.float32)
    folder = tmp_path_factory.mktemp("tilings")
    paths = []
    for t in (128, 64):
        c, y = np.zeros((S, S), np.float32), np.zeros_like(x)
        kernel = gemm_then_exp(t)
        kernel(a, b, x, c, y)
        np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-3, atol=1e-3)
        np.testing.assert_allclose(y, np.exp(x), rtol=1e-5)
        paths.append(kernel.last_report.save(folder / f"tile{t}.json"))
    return paths[0], paths[1]


def test_diff_names_the_pipe_and_kernel_that_changed(tilings):
    a, b = (RunReport.load(p) for p in tilings)
    d = a.diff(b)
    assert (d.makespan.a, d.makespan.b, d.makespan.delta) == (a.cycles, b.cycles, b.cycles - a.cycles)
    assert d.makespan.pct == pytest.approx((b.cycles - a.cycles) / a.cycles)
    # the pipe: the largest absolute change of summed busy cycles, found here independently
    moved = max(PIPES, key=lambda p: abs(b.pipe_busy[p] - a.pipe_busy[p]))
    assert d.pipe.name == moved and d.pipe.delta == b.pipe_busy[moved] - a.pipe_busy[moved] != 0
    # the kernel: the GEMM's time changes with its tiling, the exp kernel's does not
    by_name = {c.name: c for c in d.kernels}
    assert set(by_name) == {"gemm_tile", "exp_rows"} and by_name["exp_rows"].delta == 0
    assert d.kernel.name == "gemm_tile" and by_name["gemm_tile"].delta != 0
    spans = {k.kernel: k.cycles for k in b.kernels()}
    assert by_name["gemm_tile"].b == spans["gemm_tile"]
    assert {c.name for c in d.memory} >= {"hbm_bytes", "l2_hits", "l2_misses"}
    data = d.to_dict()
    assert data["most_changed"] == {"pipe": moved, "kernel": "gemm_tile"}
    assert a.diff(a).pipe is None and a.diff(a).kernel is None
    assert "most changed pipe: none" in str(a.diff(a))


def test_pypto_report_diff_command_prints_the_changes(tilings, tmp_path: Path):
    a, b = (RunReport.load(p) for p in tilings)
    d = a.diff(b)
    run = [sys.executable, "-m", "pypto.tools.report", "diff", str(tilings[0]), str(tilings[1])]
    done = subprocess.run(run, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    pct = f"{d.pipe.pct:+.1%}"
    assert f"  most changed pipe: {d.pipe.name} ({d.pipe.delta:+,} cycles, {pct})" in lines
    assert any(line.startswith("  most changed kernel: gemm_tile (") for line in lines)
    assert f"makespan: {a.cycles:,} -> {b.cycles:,} cycles" in done.stdout
    as_json = subprocess.run([*run, "--json"], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert json.loads(as_json.stdout) == d.to_dict()
    (tmp_path / "bad.json").write_text('{"schema": 99}')
    bad = subprocess.run(run[:4] + [str(tilings[0]), "bad.json"], capture_output=True, text=True,
                         timeout=120, cwd=tmp_path)  # fmt: skip
    assert bad.returncode == 1 and bad.stderr.startswith("error: bad.json: not a pypto run report")
    missing = subprocess.run(run[:4] + ["nope.json", "bad.json"], capture_output=True, text=True,
                             timeout=120, cwd=tmp_path)  # fmt: skip
    assert missing.returncode == 1 and missing.stderr.strip() == "error: no such file: nope.json"


def test_memory_counters_are_printed_and_in_the_json(tilings):
    report = RunReport.load(tilings[0])
    m = report.memory
    assert m["l2_hits"] > 0 and m["l2_misses"] > 0 and m["hbm_bytes"] > 0
    assert json.loads(tilings[0].read_text())["memory"] == m
    rate = m["l2_hits"] / (m["l2_hits"] + m["l2_misses"])
    line = f"  L2: {m['l2_hits']} line hits, {m['l2_misses']} misses (hit rate {rate:.1%}); "
    assert line in str(report)
    assert f"HBM {int(m['hbm_bytes'])} B, L2 {int(m['l2_bytes'])} B" in str(report)
