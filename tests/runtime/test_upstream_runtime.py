"""benchmark (simulated device time and host wall time, labelled apart), pypto.backend,
configure_log and pto_isa_include_dir."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest
from small_programs import Double

import pypto.language as pl
from pypto import ir
from pypto.backend import (
    BackendType,
    backend_for_platform,
    get_backend_type,
    is_backend_configured,
    reset_for_testing,
    set_backend_type,
)
from pypto.errors import ConfigError, KernelBuildError
from pypto.logs import LOGGER
from pypto.runtime import BenchmarkStats, RunConfig, benchmark, configure_log, pto_isa_include_dir
from pypto.runtime.log_config import current_level


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "cache"))


def test_benchmark_reports_simulated_time_and_host_wall_time_apart():
    compiled = ir.compile(Double, platform="a2a3sim")
    a, out = np.ones((64, 64), np.float32), np.zeros((64, 64), np.float32)
    stats = benchmark(compiled, [a, out], rounds=5, warmup=2)
    assert isinstance(stats, BenchmarkStats) and (out == 2).all()
    assert len(stats.samples) == len(stats.host_wall_us) == len(stats.cycles) == 5 and stats.warmup == 2
    report = compiled.last_report
    assert stats.cycles == [report.cycles] * 5  # the simulator is deterministic
    assert stats.device_wall_us_median == pytest.approx(report.cycles / report.clock_hz * 1e6)
    assert not stats.all_zero_device and min(stats.host_wall_us) > 0
    text = str(stats)
    assert "simulated device us" in text and "host wall us (simulation included)" in text
    assert "simulated device" in stats.format_tree(0) and "host wall" in stats.format_mean_tree(spread="both")
    assert stats.per_round("host") == stats.host_wall_us


def test_benchmark_checks_its_arguments():
    compiled = ir.compile(Double, platform="a2a3sim")
    args = [np.ones((64, 64), np.float32), np.zeros((64, 64), np.float32)]
    with pytest.raises(ValueError, match="rounds must be >= 1"):
        benchmark(compiled, args, rounds=0)
    with pytest.raises(ValueError, match="either config=... or platform="):
        benchmark(compiled, args, config=RunConfig(), platform="a2a3sim")
    with pytest.raises(ValueError, match="multi-card programs only"):
        benchmark(compiled, args, persistent=True)
    with pytest.raises(ValueError, match="does not match"):
        benchmark(compiled, args, platform="a5sim")


def test_backend_type_is_set_once_and_checked_against_the_platform():
    reset_for_testing()
    assert not is_backend_configured()
    with pytest.raises(ValueError, match="no backend type is configured"):
        get_backend_type()
    set_backend_type(BackendType.Ascend910B)
    set_backend_type(BackendType.Ascend910B)  # the same again is fine
    with pytest.raises(ValueError, match="cannot change to Ascend950"):
        set_backend_type(BackendType.Ascend950)
    assert get_backend_type() is BackendType.Ascend910B
    reset_for_testing()
    assert backend_for_platform("a5") is BackendType.Ascend950
    assert RunConfig(platform="a5sim", backend_type=BackendType.Ascend950).platform == "a5sim"
    with pytest.raises(ConfigError, match="backend_type Ascend910B compiles for a2a3sim / a2a3"):
        RunConfig(platform="a5sim", backend_type=BackendType.Ascend910B)
    with pytest.raises(ConfigError, match="takes a pypto.backend.BackendType"):
        ir.compile(Double, platform="a2a3sim", backend_type="910B")


def test_configure_log_sets_the_pypto_logger():
    before = LOGGER.level
    try:
        configure_log("debug")
        assert current_level() == logging.DEBUG
        configure_log("timing")
        assert logging.INFO < current_level() < logging.WARNING
        configure_log(40)
        assert current_level() == logging.ERROR
        with pytest.raises(ValueError, match="unknown log level 'loud'"):
            configure_log("loud")
    finally:
        LOGGER.setLevel(before)
        configure_log("warn")


def test_pto_isa_include_dir_holds_the_kernel_header_and_vendor_headers_are_absent(tmp_path: Path):
    include = pto_isa_include_dir()
    assert (include / "pypto" / "kernel.hpp").is_file() and (include / "pypto" / "abi.h").is_file()
    from pypto.kernel_build import KernelSource, build_kernels

    vendor = tmp_path / "vendor.cpp"
    vendor.write_text('#include "pto/pto-inst.hpp"\nextern "C" void kernel_entry(long* args) {}\n')
    with pytest.raises(KernelBuildError, match="pto/pto-inst.hpp"):
        build_kernels([KernelSource(name="vendor", path=vendor, include_dirs=(include,))], platform="a2a3sim")


@pl.program
class Scoped:
    @pl.function(type=pl.FunctionType.Orchestration, auto_scope=False)
    def scoped(
        self, a: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]
    ) -> pl.Tensor[[64, 64], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP):
            t: pl.Tile[[64, 64], pl.FP32] = pl.tile.load(a, [0, 0], [64, 64])
            pl.tile.store(pl.tile.muls(t, 2.0), [0, 0], out)
        return out


def test_auto_scope_false_compiles_the_same_program():
    assert ir.structural_equal(Scoped.functions[0].body, Double.functions[0].body, names=False)
    with pytest.raises(TypeError, match="auto_scope must be True or False"):
        pl.function(type=pl.FunctionType.Orchestration, auto_scope=1)


def test_as_python_concise_and_param_direction():
    full, concise = Double.as_python(), Double.as_python(concise=True)
    assert "t: pl.Tile[[64, 64], pl.FP32, pl.Mem.Vec] = pl.tile.load" in full
    assert "    t = pl.tile.load(a, [0, 0], [64, 64])" in concise and "pl.Tile" not in concise
    assert "out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]" in concise  # parameters keep their types
    assert Double.functions[0].as_python(concise=True) in concise
    assert ir.ParamDirection.Out is ir.Direction.Out
    assert [p.direction for p in Double.entry.params] == [ir.ParamDirection.In, ir.ParamDirection.Out]


@pl.jit
def add_full(
    a: pl.Tensor[[64, 128], pl.FP32],
    b: pl.Tensor[[64, 128], pl.FP32],
    out: pl.Out[pl.Tensor[[64, 128], pl.FP32]],
):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(a, b)
    return out


@pl.jit
def add_bare(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(a, a)
    return out


def test_compile_without_arguments_reads_the_signature():
    compiled = add_full.compile()
    a = np.ones((64, 128), np.float32)
    assert add_full.compile(a, a, np.zeros_like(a)) is compiled  # the same specialisation
    out = np.zeros_like(a)
    compiled(a, 2 * a, out)
    assert (out == 3).all() and compiled.param_names == ["a", "b", "out"]
    with pytest.raises(TypeError, match="parameter `a` is not a full pl.Tensor"):
        add_bare.compile()
