"""What a sweep's rows tell: a point whose work is empty (a loop that ran zero times) is
flagged and never best, with or without check=; every row carries its per-pipe busy cycles
and its bound; cycles are nullable integers; prune= drops points before they run; the job is
shipped once per worker; pl.autotune(prune=, print=)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures"))
import tune_kernels as tk  # noqa: E402

import pypto.language as pl  # noqa: E402
from pypto import platforms  # noqa: E402
from pypto.runtime import PIPES  # noqa: E402
from pypto.tune import TuneError, _worker, sweep  # noqa: E402

FULL = tk.ROWS // 64  # the tiles of 64 rows that cover the input


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "cache"))


def _measured(rows: int, tiles: int):
    a = tk.seed_input()
    kernel = tk.exp_first_tiles(rows, tiles)
    kernel(a, np.zeros_like(a))
    return kernel.last_report


def test_the_zero_trip_point_is_flagged_and_never_best_without_check():
    a = tk.seed_input()
    result = sweep(tk.exp_first_tiles, {"rows": [64], "tiles": [0, FULL]}, (a, np.zeros_like(a)),
                   executor="serial")  # fmt: skip
    zero, full = result.rows
    cold = platforms.get("a2a3sim").task_cold_head_cycles  # the launch's head: the empty task's only cost
    assert zero["error"] is None and zero["cycles"] == cold < full["cycles"]  # it ran, and was "fastest"
    assert (
        zero["empty"] == "no instruction that reads GM or computes or writes GM, which every other point runs"
    )
    assert full["empty"] is None and result.best == {"rows": 64, "tiles": FULL}
    marked = [line for line in result.format().splitlines() if line.startswith("*")]
    assert len(marked) == 1 and marked[0].split()[1:3] == ["64", str(FULL)]
    assert "empty: no instruction that reads GM" in result.format()


def test_the_zero_trip_point_is_flagged_and_never_best_with_a_check_it_passes():
    a = tk.seed_input()
    done = np.exp(a)  # an output buffer that already holds the answer: the check passes for both
    result = sweep(tk.exp_first_tiles, {"rows": [64], "tiles": [0]}, (a, done), check=tk.check,
                   executor="serial")  # fmt: skip
    (zero,) = result.rows
    assert zero["error"] is None and zero["empty"] == "it wrote nothing (every array argument is as it was)"
    with pytest.raises(TuneError, match="every point of the sweep that ran did no work"):
        _ = result.best
    both = sweep(tk.exp_first_tiles, {"rows": [64], "tiles": [0, FULL]}, (a, done), check=tk.check)
    assert [r["error"] for r in both.rows] == [None, None] and both.rows[0]["empty"]
    assert both.best == {"rows": 64, "tiles": FULL}  # on the process pool too


def test_rows_carry_per_pipe_busy_the_bound_and_integer_cycles():
    a = tk.seed_input()
    result = sweep(tk.exp_first_tiles, {"rows": [64], "tiles": [2, FULL]}, (a, np.zeros_like(a)),
                   executor="serial")  # fmt: skip
    for row in result.rows:
        report = _measured(64, row["tiles"])
        assert {p: row[f"busy_{p}"] for p in PIPES} == report.pipe_busy
        assert row["cycles"] == report.cycles and isinstance(row["cycles"], int)
        # MTE2 bounds: its busy cycles on the one core outnumber what HBM needs for the bytes
        assert row["bound"] == report.bound.pipe == "MTE2" and row["bound_cycles"] == report.bound.busy
        assert report.rooflines().hbm_cycles < row["bound_cycles"]
    assert result.rows[1]["busy_MTE2"] == 4 * result.rows[0]["busy_MTE2"]  # 8 tiles against 2
    pandas = pytest.importorskip("pandas", reason="pandas is not installed")
    frame = result.table
    assert isinstance(frame, pandas.DataFrame)
    assert {str(frame[c].dtype) for c in ["cycles", "bound_cycles", *(f"busy_{p}" for p in PIPES)]} == {
        "Int64"
    }


def test_prune_drops_points_before_they_run():
    a = tk.seed_input()
    seen = []

    def only_full(points):
        seen.extend(points)
        return [p for p in points if p["rows"] * p["tiles"] == tk.ROWS]

    result = sweep(tk.exp_first_tiles, {"rows": [64, 128], "tiles": [2, 4, 8]}, (a, np.zeros_like(a)),
                   executor="serial", check=tk.check, prune=only_full)  # fmt: skip
    assert len(seen) == 6
    assert [(r["rows"], r["tiles"]) for r in result.rows] == [(64, 8), (128, 4)]
    assert len(result.pruned) == 4 and all(r["error"] is None for r in result.rows)
    with pytest.raises(TuneError, match="prune dropped every one of the 6 points"):
        sweep(tk.exp_first_tiles, {"rows": [64, 128], "tiles": [2, 4, 8]}, (a, a), prune=lambda p: [])
    with pytest.raises(TuneError, match="not in the space"):
        sweep(
            tk.exp_first_tiles,
            {"rows": [64], "tiles": [8]},
            (a, a),
            prune=lambda p: [{"rows": 1, "tiles": 8}],
        )


def test_the_job_is_shipped_once_per_worker_not_per_point():
    a = tk.seed_input()
    space = {"rows": [32, 64, 128, 256], "tiles": [1, 2]}
    result = sweep(tk.exp_first_tiles, space, (a, np.zeros_like(a)))  # the process pool
    assert all(r["error"] is None for r in result.rows)
    job = len(_worker.dumps(_worker.Job(tk.exp_first_tiles, (a, np.zeros_like(a)), None, None)))
    assert job > 2 * a.nbytes  # the two arrays travel with the job
    # each worker (at most one per CPU, at most one per point) got the job once; each point
    # then sent only its parameters and folder
    assert result.sent_bytes < job * min(len(result.rows), os.cpu_count() or 1) + 4096
    assert result.sent_bytes < job * len(result.rows) / 2
    assert sweep(tk.exp_first_tiles, space, (a, np.zeros_like(a)), executor="serial").sent_bytes == 0


def test_autotune_prunes_by_the_call_and_prints_its_pick(capsys):
    configs = [{"rows": 64, "tiles": 8}, {"rows": 128, "tiles": 4}, {"rows": 256, "tiles": 2}]
    calls = []

    def fits(configs, named_args):
        calls.append(sorted(named_args))
        return [c for c in configs if c["rows"] <= named_args["a"].shape[0] // 4]

    tuned = pl.autotune(configs=configs, key=["a"], prune=fits, print=True)(tk.exp_first_tiles)
    a = tk.seed_input()
    out = np.zeros_like(a)
    tuned(a, out)
    np.testing.assert_allclose(out, np.exp(a), rtol=1e-5)
    assert calls == [["a", "out"]] and len(tuned.last_sweep.rows) == 2 and len(tuned.last_sweep.pruned) == 1
    best = min(configs[:2], key=lambda c: _measured(**c).cycles)
    (pick,) = tuned.picks.values()
    assert pick == best
    printed = capsys.readouterr().out.splitlines()
    head = f"pl.autotune exp_first_tiles: {next(iter(tuned.picks))} -> "
    assert (
        printed[0].startswith(head)
        and f"({_measured(**best).cycles} cycles); 2 config(s) run, 1 pruned" in printed[0]
    )
    assert printed[1].split()[:3] == ["rows", "tiles", "cycles"] and len(printed) == 4
    again = pl.autotune(configs=configs, key=["a"], prune=fits, print=True)(tk.exp_first_tiles)
    again(a, np.zeros_like(a))  # the pick on disk
    assert "; read from " in capsys.readouterr().out
