"""execute_compiled on a compile's output folder (also from a new process), its argument checks,
and upstream's DFX options writing real files filled from the simulator."""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import pypto.language as pl
from pypto.errors import ArgumentError, ConfigError
from pypto.hardware import PIPES
from pypto.runtime import RunConfig, execute_compiled
from pypto.runtime.runner import DfxOptions, _DfxOpts, load_compiled

R, C = 64, 128


@pl.jit
def shift(x: pl.Tensor[[R, C], pl.FP32], out: pl.Out[pl.Tensor[[R, C], pl.FP32]], k: pl.Scalar[pl.INT32]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(0, 2, 1):
            t = pl.load(x, [i * 32, 0], [32, C])
            pl.store(pl.exp(pl.adds(t, k)), [i * 32, 0], out)
    return out


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "cache"))


def _x() -> np.ndarray:
    return np.random.default_rng(0).uniform(-1, 1, (R, C)).astype(np.float32)


def _build(folder: Path) -> Path:
    shift.compile(_x(), np.zeros((R, C), np.float32), 2, config=RunConfig(output_dir=folder))
    return folder


def test_runs_the_folder_with_ctypes_scalars(tmp_path: Path):
    folder = _build(tmp_path / "build")
    x, out = _x(), np.zeros((R, C), np.float32)
    assert execute_compiled(folder, [x, out, ctypes.c_int32(2)], platform="a2a3sim", device_id=0) is None
    np.testing.assert_allclose(out, np.exp(x + 2), rtol=1e-6)
    assert load_compiled(folder).last_report.cycles > 0


def test_the_folder_alone_runs_in_a_new_process(tmp_path: Path):
    folder = _build(tmp_path / "build")
    x = _x()
    np.save(tmp_path / "x.npy", x)
    script = textwrap.dedent(f"""
        import ctypes, numpy as np
        from pypto.runtime import execute_compiled
        x = np.load({str(tmp_path / "x.npy")!r}); out = np.zeros_like(x)
        execute_compiled({str(folder)!r}, [x, out, ctypes.c_int64(2)], platform="a2a3sim", device_id=0)
        np.save({str(tmp_path / "out.npy")!r}, out)
    """)
    env = dict(os.environ, SKBUILD_EDITABLE_VERBOSE="0")
    subprocess.run([sys.executable, "-c", script], check=True, cwd=tmp_path, env=env)
    np.testing.assert_allclose(np.load(tmp_path / "out.npy"), np.exp(x + 2), rtol=1e-6)


def test_bad_calls_are_typed_errors_and_change_nothing(tmp_path: Path):
    folder = _build(tmp_path / "build")
    x, out = _x(), np.full((R, C), 5.0, np.float32)
    with pytest.raises(ArgumentError, match=r"shift takes 3 arguments \(x, out, k\), got 2"):
        execute_compiled(folder, [x, out])
    with pytest.raises(
        ArgumentError, match="argument 'x' must be a tensor of shape .* dtype FP32, got .*float16"
    ):
        execute_compiled(folder, [x.astype(np.float16), out, 2])
    with pytest.raises(ArgumentError, match="argument 'k' is 5, but shift was compiled with 2"):
        execute_compiled(folder, [x, out, ctypes.c_int32(5)])
    with pytest.raises(TypeError, match="unexpected keyword argument 'enable_bogus'"):
        execute_compiled(folder, [x, out, 2], platform="a2a3sim", enable_bogus=True)  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="compiled for 'a2a3sim', not 'a5sim'"):
        execute_compiled(folder, [x, out, 2], platform="a5sim")
    assert (out == 5).all()


def test_dfx_options_write_their_files(tmp_path: Path):
    folder = _build(tmp_path / "build")
    x, out = _x(), np.full((R, C), -1.0, np.float32)
    dfx = _DfxOpts(enable_chip_swimlane=True, enable_dump_args=2, enable_pmu=2, enable_dep_gen=True,
                   enable_scope_stats=True)  # fmt: skip
    execute_compiled(folder, [x, out, 2], platform="a2a3sim", device_id=0, dfx=dfx)
    report, dfx_dir = load_compiled(folder).last_report, folder / "dfx_outputs"
    records = json.loads((dfx_dir / "chip_swimlane_records.json").read_text())
    assert records["level"] == 4 and [t["end_cycle"] for t in records["tasks"]] == [
        t.end for t in report.tasks
    ]
    assert (folder / "report" / "timeline.html").is_file() and report.trace_paths  # pypto's trace
    rows = (dfx_dir / "pmu.csv").read_text().splitlines()
    assert rows[0].split(",")[-len(PIPES) :] == [f"{p}_busy_cycles" for p in PIPES]
    busy = {p: sum(int(r.split(",")[6 + k]) for r in rows[1:]) for k, p in enumerate(PIPES)}
    assert busy == report.pipe_busy and busy["MTE2"] > 0
    deps = json.loads((dfx_dir / "deps.json").read_text())
    assert [t["func_name"] for t in deps["tasks"]] == [t.name for t in report.tasks]
    listing = json.loads((dfx_dir / "args_dump" / "args_dump.json").read_text())["args"]
    assert [(a["name"], a["stage"]) for a in listing] == [("x", "input"), ("out", "input"), ("out", "output")]
    dumped = {(a["name"], a["stage"]): np.load(dfx_dir / "args_dump" / a["file"]) for a in listing}
    assert (dumped["out", "input"] == -1).all() and np.array_equal(dumped["out", "output"], out)
    assert np.array_equal(dumped["x", "input"], x)
    stats = [
        json.loads(line) for line in (dfx_dir / "scope_stats" / "scope_stats.jsonl").read_text().splitlines()
    ]
    assert stats[-1]["tasks"] == len(report.tasks) and stats[-1]["task_window_peak"] >= 1


def test_dfx_values_are_checked_and_normalised():
    assert DfxOptions(enable_chip_swimlane=True).enable_chip_swimlane == 4
    assert not DfxOptions().any() and DfxOptions(enable_dep_gen=True).any()
    with pytest.raises(ValueError, match=r"enable_chip_swimlane must be a level in \[0, 4\], got 7"):
        DfxOptions(enable_chip_swimlane=7)
    with pytest.raises(ConfigError, match="enable_dump_args must be a level in"):
        RunConfig(enable_dump_args=3)
    cfg = RunConfig(enable_chip_swimlane=3)
    assert cfg.trace and cfg.timeline and cfg.enable_chip_swimlane == 3
    with pytest.raises(TypeError, match="takes a DfxOptions"):
        execute_compiled("nowhere", [], dfx={"enable_pmu": 2})  # type: ignore[arg-type]


def test_dfx_per_call_config_on_a_compiled_program(tmp_path: Path):
    x = _x()
    compiled = shift.compile(x, np.zeros_like(x), 2, config=RunConfig(output_dir=tmp_path / "b"))
    compiled(x, np.zeros_like(x), 2, config=RunConfig(enable_dep_gen=True))
    graph = json.loads((tmp_path / "b" / "dfx_outputs" / "deps.json").read_text())
    assert graph["program"] == "shift" and len(graph["tasks"]) == len(compiled.tasks)
    assert not (tmp_path / "b" / "dfx_outputs" / "pmu.csv").exists()  # only what was asked for


def test_a_direct_kernel_call_takes_dfx_options_and_reports_traffic(tmp_path: Path):
    x, out = _x(), np.zeros((R, C), np.float32)
    shift(x, out, 2, config=RunConfig(output_dir=tmp_path / "direct", enable_pmu=True))
    assert (tmp_path / "direct" / "dfx_outputs" / "pmu.csv").read_text().count("\n") == 1 + len(
        shift.last_report.tasks
    )
    memory = shift.last_report.memory
    assert (memory["host_to_device_bytes"], memory["device_to_host_bytes"]) == (2 * x.nbytes, x.nbytes)
    assert "memory traffic: host->device 65536 B, device->host 32768 B" in str(shift.last_report)
