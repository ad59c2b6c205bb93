"""The compile driver (pypto.compile): its stages in order, and the options split — a run
option (trace, timeline, output folder, cost profile, seed, limits) never compiles again, while
a compile option does."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import pypto.language as pl
from pypto.compile import STAGES, CompileOptions, KernelCall, compile
from pypto.passes.options import MemoryPlanner
from pypto.runtime import CompiledProgram, RunConfig


@pl.jit
def scale(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 64])
        pl.store(pl.muls(t, 3.0), [0, 0], out)
    return out


A = np.arange(16 * 64, dtype=np.float32).reshape(16, 64)


@pytest.fixture(autouse=True)
def fresh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A private cache and a fresh kernel object state (nothing compiled before the test)."""
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "cache"))
    scale.__dict__.pop("_pypto_compiled", None)


def test_the_stages_run_in_their_written_order():
    assert [s.name for s in STAGES] == [
        "parse", "passes", "kernel sources", "build", "load check", "hints", "launch plan",
    ]  # fmt: skip


def test_compile_makes_one_artifact_that_a_program_runs(tmp_path, compiles):
    artifact = compile(KernelCall(scale, (A, np.zeros_like(A)), {}), CompileOptions(), tmp_path / "out")
    assert artifact.name == "scale" and artifact.param_names == ("a", "out") and artifact.outputs == {1}
    assert set(artifact.kernels) == set(artifact.sources) and all(
        p.is_file() for p in artifact.kernels.values()
    )
    assert (tmp_path / "out" / "report" / "perf_hints.log").is_file()
    out = np.zeros_like(A)
    report = CompiledProgram(artifact, RunConfig(), tmp_path / "out").run(A, out)
    np.testing.assert_array_equal(out, A * 3)
    assert report.cycles > 0


def test_changing_run_options_compiles_once(tmp_path, compiles):
    plain = scale.compile(A, np.zeros_like(A), config=RunConfig())
    configs = [
        RunConfig(trace=True),
        RunConfig(trace=True, timeline=True, output_dir=tmp_path / "traced"),
        RunConfig(output_dir=tmp_path / "elsewhere"),
        RunConfig(cost_profile="pto-isa"),
        RunConfig(seed=7, max_cycles=10**9, max_instructions=10**6, isolate=False),
    ]
    cycles = {}
    for config in configs:
        out = np.zeros_like(A)
        scale(A, out, config=config)
        np.testing.assert_array_equal(out, A * 3)
        cycles[config.cost_profile] = scale.last_report.cycles
        assert scale.compile(A, np.zeros_like(A), config=config).artifact is plain.artifact
    assert compiles == ["scale"]
    # each run option took effect: the other cost table prices differently, the trace and the
    # timeline went to the run's folder, and that folder can be read back as a program
    assert cycles["pto-isa"] != cycles["device"]
    assert (tmp_path / "traced" / "report" / "timeline.html").is_file()
    assert list((tmp_path / "traced" / "trace").iterdir())
    again = CompiledProgram.from_dir(tmp_path / "elsewhere")
    out = np.zeros_like(A)
    again(A, out)
    np.testing.assert_array_equal(out, A * 3)


def test_changing_a_compile_option_compiles_again(compiles):
    scale(A, np.zeros_like(A), config=RunConfig())
    scale(A, np.zeros_like(A), config=RunConfig(memory_planner=MemoryPlanner.PTOAS))
    scale(A, np.zeros_like(A), config=RunConfig(platform_overrides={"ub_bytes": 128 * 1024}))
    assert compiles == ["scale"] * 3


def test_the_compile_reads_no_prices():
    """Why a cost profile is a run option: the two profiles differ only in prices, and the
    table the compile reads is the same under both."""
    dev, pto = RunConfig(), RunConfig(cost_profile="pto-isa")
    assert dev.compile_options() == pto.compile_options()
    assert dev.compile_key() != pto.compile_key()  # the compiled program (public face) is another
