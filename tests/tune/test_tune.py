"""pypto.tune: a sweep ranks every point by simulated cycles through any executor (serial,
process pool, a Dask LocalCluster) and agrees across them; pl.autotune picks per key and
keeps the pick on disk."""

from __future__ import annotations

import importlib.util
import json
import os
import pickle
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures"))
import tune_kernels as tk  # noqa: E402

import pypto.language as pl  # noqa: E402
from pypto.passes import MemoryPlanner  # noqa: E402
from pypto.runtime import PIPES, RunConfig  # noqa: E402
from pypto.tune import TuneError, _worker, sweep  # noqa: E402

SPACE = {"rows": [32, 64, 512], "depth": [1, 2]}  # 512 rows x 512 B = 256 KiB: no fit in Vec


def _args():
    a = tk.seed_input()
    return (a, np.zeros_like(a))


def _measured(rows: int, depth: int) -> int:
    kernel = tk.exp_kernel(rows, depth)
    kernel(*_args())
    return kernel.last_report.cycles


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "cache"))


def test_a_serial_sweep_ranks_points_by_their_cycles():
    result = sweep(tk.exp_kernel, SPACE, _args(), executor="serial", check=tk.check)
    assert [(r["rows"], r["depth"]) for r in result.rows] == [
        (32, 1),
        (32, 2),
        (64, 1),
        (64, 2),
        (512, 1),
        (512, 2),
    ]
    for r in result.rows[:4]:
        assert r["error"] is None and r["cycles"] == _measured(r["rows"], r["depth"]) and r["bound"] == "MTE2"
    for r in result.rows[4:]:  # refused by the capacity check, with the reason
        assert r["cycles"] is None and r["error"].startswith("MemoryCapacityError")
    best = min(result.rows[:4], key=lambda r: r["cycles"])
    assert result.best == {"rows": best["rows"], "depth": best["depth"]} and best["depth"] == 2
    text = result.format()
    assert text.splitlines()[0].split() == [
        "rows",
        "depth",
        "cycles",
        "bound",
        "MTE2",
        "VECTOR",
        "MTE3",
        "SCALAR",
    ]
    starred = [line for line in text.splitlines() if line.startswith("*")]
    assert len(starred) == 1 and starred[0].split()[1:4] == [str(best["rows"]), "2", str(best["cycles"])]


def test_run_config_fields_in_the_space_configure_the_run():
    space = {"rows": [64], "depth": [2], "memory_planner": [MemoryPlanner.PYPTO, MemoryPlanner.PTOAS],
             "platform_overrides": [{}, {"bw_gm_to_ub": 118}]}  # fmt: skip
    result = sweep(tk.exp_kernel, space, _args(), executor=ThreadPoolExecutor(2))
    assert all(r["error"] is None for r in result.rows)
    slow, fast = result.rows[0]["cycles"], result.rows[1]["cycles"]
    assert fast < slow  # a faster MTE2 shortens an MTE2-bound kernel
    assert result.best["platform_overrides"] == {"bw_gm_to_ub": 118}


def test_process_pool_and_dask_local_cluster_agree():
    distributed = pytest.importorskip(
        "distributed", reason="dask.distributed is not installed (pip install '.[dask]')"
    )
    space = {"rows": [32, 64], "depth": [1, 2]}
    pool = sweep(tk.exp_kernel, space, _args(), check=tk.check)  # the default: a local process pool
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cl,
        distributed.Client(cl) as client,
    ):
        dask = sweep(tk.exp_kernel, space, _args(), executor=client.get_executor(), check=tk.check)
    strip = lambda rows: [{k: v for k, v in r.items() if k != "wall_s"} for r in rows]
    assert strip(pool.rows) == strip(dask.rows) and pool.best == dask.best
    assert all(r["error"] is None for r in pool.rows)


def test_progress_bar_and_executor_errors(capsys):
    pytest.importorskip("tqdm", reason="tqdm is not installed")
    sweep(tk.exp_kernel, {"rows": [64], "depth": [1]}, _args(), executor="serial", progress=True)
    assert "sweep exp_kernel" in capsys.readouterr().err
    with pytest.raises(TuneError, match="concurrent.futures.Executor"):
        sweep(tk.exp_kernel, {"rows": [64], "depth": [1]}, _args(), executor=42)
    with pytest.raises(TuneError, match=r"sweep parameters \['row'\] are neither parameters of exp_kernel"):
        sweep(tk.exp_kernel, {"row": [64], "depth": [1]}, _args())
    with pytest.raises(ValueError, match="'depth' has no values"):
        sweep(tk.exp_kernel, {"rows": [64], "depth": []}, _args())


def test_autotune_picks_per_key_and_keeps_the_pick_on_disk(tmp_path: Path):
    configs = [{"rows": 32, "depth": 1}, {"rows": 64, "depth": 2}, {"rows": 64, "depth": 1}]
    tuned = pl.autotune(configs=configs, key=["a"])(tk.exp_kernel)
    a, out = _args()
    tuned(a, out)
    np.testing.assert_allclose(out, np.exp(a), rtol=1e-5)
    best = min(configs, key=lambda c: _measured(**c))
    (key,) = tuned.picks
    assert tuned.picks[key] == best and tuned.last_report.cycles == _measured(**best)
    (file,) = (tmp_path / "cache" / "autotune").glob("exp_kernel-*.json")
    stored = json.loads(file.read_text())
    assert stored[key]["config"] == best and stored[key]["cycles"] == _measured(**best)
    again = pl.autotune(configs=configs, key=["a"])(tk.exp_kernel)  # a new process, as it were
    again(a, np.zeros_like(out))
    assert again.picks == tuned.picks and not hasattr(again, "last_sweep")  # read, not re-swept
    half = np.ascontiguousarray(a[:256])
    with pytest.raises(ValueError, match="no point of the sweep ran"):
        again(half, np.zeros_like(half))  # ROWS is fixed at 512: every config reads out of bounds
    with pytest.raises(ValueError, match=r"key names \['b'\] are not parameters"):
        pl.autotune(configs=configs, key=["b"])(tk.exp_kernel)(a, out)


def test_an_unwritable_autotune_folder_costs_the_kept_pick_not_the_sweep(tmp_path: Path, caplog):
    (tmp_path / "cache").mkdir(exist_ok=True)
    (tmp_path / "cache" / "autotune").write_text("a file where the folder would be")
    configs = [{"rows": 32, "depth": 1}, {"rows": 64, "depth": 1}]
    tuned = pl.autotune(configs=configs, key=["a"])(tk.exp_kernel)
    a, out = _args()
    with caplog.at_level("WARNING", logger="pypto.tune.autotune"):
        tuned(a, out)
    np.testing.assert_allclose(out, np.exp(a), rtol=1e-5)
    assert list(tuned.picks.values()) == [min(configs, key=lambda c: _measured(**c))]
    assert "cannot keep the pick for exp_kernel" in caplog.text and "used in this process only" in caplog.text


def test_a_task_runs_on_a_worker_that_lacks_the_factorys_file(tmp_path: Path):
    src = tmp_path / "only_here.py"
    src.write_text(Path(tk.__file__).read_text())
    spec = importlib.util.spec_from_file_location("only_here", src)
    module = importlib.util.module_from_spec(spec)
    sys.modules["only_here"] = module
    try:
        spec.loader.exec_module(module)
        a = module.seed_input()
        folder = str(tmp_path / "point")
        job = _worker.Job(module.exp_kernel, (a, np.zeros_like(a)), RunConfig(), module.check)
        (tmp_path / "task.bin").write_bytes(_worker.dumps(job))
    finally:
        del sys.modules["only_here"]
    src.unlink()  # the worker below sees neither the file nor the module
    code = (
        "import pickle, sys\nfrom pypto.tune import _worker\n"
        f"job = open({str(tmp_path / 'task.bin')!r}, 'rb').read()\n"
        f"print(pickle.dumps(_worker.evaluate(job, {{'rows': 64, 'depth': 2}}, {folder!r})).hex())"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          cwd=tmp_path, env={**os.environ, "SKBUILD_EDITABLE_VERBOSE": "0"})  # fmt: skip
    assert done.returncode == 0, done.stderr
    row = pickle.loads(bytes.fromhex(done.stdout.strip().splitlines()[-1]))
    assert row["error"] is None and row["cycles"] == _measured(64, 2)


def test_a_script_without_a_main_guard_is_told_how_to_fix_it(tmp_path: Path):
    (tmp_path / "tune_kernels.py").write_text(Path(tk.__file__).read_text())
    (tmp_path / "noguard.py").write_text(
        "import numpy as np\nimport tune_kernels as tk\nfrom pypto.tune import sweep\n"
        "a = tk.seed_input()\nsweep(tk.exp_kernel, {'rows': [64], 'depth': [1]}, (a, np.zeros_like(a)))\n"
    )
    env = {**os.environ, "SKBUILD_EDITABLE_VERBOSE": "0"}
    cmd = [sys.executable, "noguard.py"]
    done = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1
    assert "PyptoError: the sweep's worker processes could not start" in done.stderr
    assert "if __name__ == '__main__':" in done.stderr


def test_the_table_is_a_dataframe_with_pandas():
    pandas = pytest.importorskip("pandas", reason="pandas is not installed")
    result = sweep(tk.exp_kernel, {"rows": [64, 512], "depth": [2]}, _args(), executor="serial")
    frame = result.table
    assert isinstance(frame, pandas.DataFrame)
    busy = [f"busy_{p}" for p in PIPES]
    assert list(frame.columns) == ["rows", "depth", "cycles", "time_us", "bound", "bound_cycles", *busy,
                                   "empty", "wall_s", "error"]  # fmt: skip
    assert str(frame["cycles"].dtype) == "Int64" and frame["cycles"].isna().tolist() == [False, True]
    assert frame.loc[0, "cycles"] == result.rows[0]["cycles"] and frame["error"].isna().tolist() == [
        True,
        False,
    ]
    best = frame.loc[frame["cycles"].idxmin()]
    assert (int(best["rows"]), int(best["depth"])) == (64, 2) == tuple(result.best.values())
