"""Upstream PyPTO's entry points on the simulator: pypto.runtime.run and pypto.ir.compile on a
@pl.program, CompiledProgram.from_dir, Program.as_python, and upstream RunConfig options."""

from __future__ import annotations

import os
import pickle
import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest

import pypto.language as pl
from pypto import ir
from pypto.errors import ConfigError, SimulationLimitError, TypeCheckError
from pypto.frontend.parser import parse_text
from pypto.runtime import RunConfig, UpstreamOptionWarning, run
from pypto.runtime.entry import CompiledDirError
from pypto.runtime.jit import CompiledProgram
from pypto.runtime.marshal import ArgumentError


@pl.program
class ExpRows:
    @pl.function(type=pl.FunctionType.Orchestration)
    def exp_rows(
        self, a: pl.Tensor[[256, 128], pl.FP32], out: pl.Out[pl.Tensor[[256, 128], pl.FP32]]
    ) -> pl.Tensor[[256, 128], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP):
            for i in pl.range(0, 4, 1):
                t: pl.Tile[[64, 128], pl.FP32] = pl.tile.load(a, [i * 64, 0], [64, 128])
                pl.tile.store(pl.tile.exp(t), [i * 64, 0], out)
        return out


def _input() -> np.ndarray:
    return (np.arange(256 * 128) % 5 - 2).astype(np.float32).reshape(256, 128) / 4


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "cache"))


def test_run_compiles_and_runs_a_program_and_returns_it_callable():
    a, out = _input(), np.zeros((256, 128), np.float32)
    compiled = run(ExpRows, a, out, config=RunConfig(platform="a2a3sim"))
    np.testing.assert_allclose(out, np.exp(a), rtol=1e-6)
    first = compiled.last_report.cycles
    again = np.zeros_like(out)
    assert compiled(2 * a, again) is again
    np.testing.assert_allclose(again, np.exp(2 * a), rtol=1e-6)
    assert compiled.last_report.cycles == first > 0 and compiled.last_report.bound.pipe == "MTE2"
    compiled(a, again, config=RunConfig(platform="a2a3sim", trace=True))  # upstream passes it per call
    assert compiled.last_report.tasks[0].trace is not None and compiled.last_report.trace_paths
    with pytest.raises(ValueError, match="a call may not change them \\(compile again for 'a5sim'"):
        compiled(a, again, config=RunConfig(platform="a5sim"))


def test_a_call_config_without_the_compiles_pass_dumps_runs(tmp_path: Path):
    # upstream compiles with dump_passes=True and passes a plain config to later calls
    a, out = _input(), np.zeros((256, 128), np.float32)
    compiled = run(ExpRows, config=RunConfig(platform="a2a3sim", dump_passes=True, output_dir=tmp_path))
    compiled(a, out, config=RunConfig(platform="a2a3sim"))
    np.testing.assert_allclose(out, np.exp(a), rtol=1e-6)


def test_a_call_config_s_run_options_are_honoured_and_a_new_table_refused(tmp_path: Path):
    a, out = _input(), np.zeros((256, 128), np.float32)
    compiled = run(ExpRows, config=RunConfig(platform="a2a3sim", output_dir=tmp_path))
    with pytest.raises(SimulationLimitError):  # the call's limit, not the compile's
        compiled(a, out, config=RunConfig(platform="a2a3sim", max_cycles=10))
    with pytest.raises(ConfigError, match="compiled with cost_profile='device'.*cost_profile='pto-isa'"):
        compiled(a, out, config=RunConfig(platform="a2a3sim", cost_profile="pto-isa"))
    with pytest.raises(ConfigError, match="compiled with platform_overrides={}; .*'ub_bytes': 131072"):
        compiled(a, out, config=RunConfig(platform="a2a3sim", platform_overrides={"ub_bytes": 131072}))
    assert (out == 0).all()  # nothing ran


def test_ir_compile_checks_arguments_against_the_programs_types(tmp_path: Path):
    compiled = ir.compile(ExpRows, output_dir=tmp_path / "build", platform="a2a3sim")
    assert compiled.output_dir == (tmp_path / "build").resolve()
    wrong = r"argument 'a' must be a tensor of shape \(256, 128\) and dtype FP32, got shape \(128, 128\)"
    with pytest.raises(ArgumentError, match=wrong) as err:
        compiled(np.zeros((128, 128), np.float32), np.zeros((256, 128), np.float32))
    assert "test_upstream_entry.py:" in str(err.value)  # the parameter's line
    with pytest.raises(ArgumentError, match="dtype FP32, got shape .* dtype float16"):
        compiled(np.zeros((256, 128), np.float16), np.zeros((256, 128), np.float32))


def test_from_dir_reruns_a_build_and_rebuilds_lost_kernels(tmp_path: Path):
    a = _input()
    compiled = ir.compile(ExpRows, output_dir=tmp_path / "build")
    compiled(a, ref := np.zeros_like(a))
    cycles = compiled.last_report.cycles
    again = CompiledProgram.from_dir(tmp_path / "build")
    assert again is not compiled and again.param_names == ["a", "out"]
    np.testing.assert_array_equal(again(a, np.zeros_like(a)), ref)
    assert again.last_report.cycles == cycles
    shutil.rmtree(tmp_path / "cache" / "kernels")  # the kernel cache is gone: rebuilt from kernels/*.cpp
    rebuilt = CompiledProgram.from_dir(tmp_path / "build")
    assert all(Path(p).is_file() for p in rebuilt.kernels.values())
    np.testing.assert_array_equal(rebuilt(a, np.zeros_like(a)), ref)
    with pytest.raises(CompiledDirError, match="holds no compiled_meta.json"):
        CompiledProgram.from_dir(tmp_path)


def test_program_as_python_reads_back():
    text = ExpRows.as_python()
    assert text.startswith("# pypto.program: ExpRows\n") and text == ir.print_program(ExpRows)
    ir.assert_structural_equal(parse_text(text), ExpRows, names=True)


def test_a_lowered_programs_functions_read_as_upstreams_table_by_name():
    program = ir.compile(ExpRows, platform="a2a3sim").program  # lowered: the kernels too
    functions = program.functions
    names = functions.keys()
    assert names == [f.name for f in functions] and len(names) == len(set(names)) >= 2
    assert functions.values() == list(functions) and dict(functions.items())["exp_rows"] is program.entry
    assert {f.name: f.func_type for f in functions.values()}["exp_rows"] is ir.FunctionType.Orchestration
    again = pickle.loads(pickle.dumps(program))  # a cached program reads the same
    assert again.functions.keys() == names and again == program


@pl.program
class TwoOutputs:
    @pl.function(type=pl.FunctionType.InCore)
    def exp_and_neg(
        self,
        a: pl.Tensor[[64, 128], pl.FP32],
        e: pl.Out[pl.Tensor[[64, 128], pl.FP32]],
        n: pl.Out[pl.Tensor[[64, 128], pl.FP32]],
    ) -> tuple[pl.Tensor[[64, 128], pl.FP32], pl.Tensor[[64, 128], pl.FP32]]:
        t: pl.Tile[[64, 128], pl.FP32] = pl.tile.load(a, [0, 0], [64, 128])
        e_out = pl.tile.store(pl.tile.exp(t), [0, 0], e)
        n_out = pl.tile.store(pl.tile.neg(t), [0, 0], n)
        return e_out, n_out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(
        self,
        a: pl.Tensor[[64, 128], pl.FP32],
        e: pl.Out[pl.Tensor[[64, 128], pl.FP32]],
        n: pl.Out[pl.Tensor[[64, 128], pl.FP32]],
    ) -> tuple[pl.Tensor[[64, 128], pl.FP32], pl.Tensor[[64, 128], pl.FP32]]:
        e_1, n_1 = self.exp_and_neg(a, e, n)  # each name: the output tensor the kernel wrote
        return e_1, n_1


def test_a_program_method_returning_two_outputs_unpacks_into_them(tmp_path: Path):
    a = _input()[:64]
    e, n = np.zeros_like(a), np.zeros_like(a)
    compiled = ir.compile(TwoOutputs, output_dir=tmp_path / "two", platform="a2a3sim",
                          strategy=ir.OptimizationStrategy.Default)  # fmt: skip
    compiled(a, e, n)
    np.testing.assert_allclose(e, np.exp(a), rtol=1e-6)
    np.testing.assert_array_equal(n, -a)
    assert os.fspath(compiled) == str(compiled) == str(tmp_path / "two")  # reads as its folder
    assert (Path(compiled) / "report").is_dir()
    text = TwoOutputs.as_python()  # the call for its effect, then the outputs returned
    assert "        self.exp_and_neg(a, e, n)\n        return e, n\n" in text
    ir.assert_structural_equal(parse_text(text), TwoOutputs, names=True)


def test_unpacking_a_method_into_the_wrong_number_of_names_is_refused():
    statement = "        self.exp_and_neg(a, e, n)\n"
    text = TwoOutputs.as_python().replace(statement, statement.replace("self.", "x, y, z = self."))
    with pytest.raises(TypeCheckError, match="`exp_and_neg` returns 2 values, not 3"):
        parse_text(text)


def test_upstream_run_config_options_are_accepted_with_a_reason(tmp_path: Path):
    with pytest.warns(UpstreamOptionWarning) as caught:
        cfg = RunConfig(platform="a2a3", device_id=1, rtol=1e-3, save_kernels=True)
    said = [str(w.message) for w in caught]
    assert len(said) == 3 and cfg.platform == "a2a3" and all(w.filename == __file__ for w in caught)
    assert said[0].startswith("RunConfig(device_id=1) is an upstream PyPTO option that means nothing")
    assert "always kept in output_dir" in said[2]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # translated options warn about nothing
        lane = RunConfig(enable_l2_swimlane=True, save_kernels_dir=str(tmp_path / "swim"))
        chip = RunConfig(enable_chip_swimlane=True)
    assert (lane.trace, lane.timeline, lane.output_dir) == (True, True, str(tmp_path / "swim"))
    assert (chip.trace, chip.timeline) == (True, True)
    a = _input()
    run(ExpRows, a, np.zeros_like(a), config=lane)
    page = tmp_path / "swim" / "report" / "timeline.html"
    assert page.is_file() and "exp_rows" in page.read_text()
    with pytest.raises(TypeError, match="unexpected keyword argument 'bogus'"):
        RunConfig(bogus=1)


def test_the_one_optimization_strategy_is_accepted_and_another_refused():
    from pypto.ir.pass_manager import OptimizationStrategy, PassDumpLevel

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the pipeline there is: nothing to warn about
        cfg = RunConfig(strategy=OptimizationStrategy.Default, dump_passes=PassDumpLevel.CONCISE)
    assert cfg.dump_passes is PassDumpLevel.CONCISE
    with pytest.raises(ConfigError, match="one pass pipeline"):
        RunConfig(strategy="Fast")


def test_a_call_given_only_the_inputs_makes_the_outputs_and_returns_them():
    compiled = run(ExpRows, config=RunConfig(platform="a2a3sim"))  # compile only
    a = _input()
    out = compiled(a)  # upstream's return style: the pl.Out tensor is made here
    assert isinstance(out, np.ndarray) and out.shape == (256, 128) and out.dtype == np.float32
    np.testing.assert_allclose(out, np.exp(a), rtol=1e-6)
    torch = pytest.importorskip("torch")
    made = compiled(torch.from_numpy(a))  # torch in, torch out
    assert isinstance(made, torch.Tensor) and made.dtype == torch.float32
    np.testing.assert_allclose(made.numpy(), np.exp(a), rtol=1e-6)
    with pytest.raises(
        ArgumentError, match=r"takes 2 arguments \(a, out\), or 1 without its outputs \(out\); got 0"
    ):
        compiled()


def test_tensor_specs_make_the_tensors_a_model_script_passes():
    from pypto.runtime import TensorSpec

    ones = TensorSpec("x", [2, 3], np.float32, init_value=1.0).create_tensor()
    assert ones.dtype == np.float32 and (ones == 1).all()
    made = TensorSpec("y", [4], np.int32, init_value=lambda: [1, 2, 3, 4]).create_tensor()
    assert made.tolist() == [1, 2, 3, 4] and made.dtype == np.int32
    out = TensorSpec("out", [2, 2], np.float32, is_output=True)
    assert out.is_output and not out.create_tensor().any()
    torch = pytest.importorskip("torch")
    q = TensorSpec("q", [8, 16], torch.bfloat16, init_value=torch.randn).create_tensor()
    assert q.shape == (8, 16) and q.dtype == torch.bfloat16
    assert TensorSpec("c", [3], torch.int64, init_value=torch.tensor([1, 2, 3])).create_tensor().tolist() == [
        1,
        2,
        3,
    ]
