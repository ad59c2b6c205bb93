"""The Artifact's two stored forms round-trip: bytes (the program cache's payload) and a folder
(a compile's output_dir) each decode to the Artifact that was encoded, and it runs the same."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest

import pypto.language as pl
from pypto.compile import CompiledDirError, CompileOptions, KernelCall, RunOptions, codecs, compile
from pypto.ir import PassDumpLevel
from pypto.ir.printer import print_program
from pypto.runtime import CompiledProgram, RunConfig


@pl.jit
def row_sum_scaled(a: pl.Tensor, k: pl.Scalar[pl.FP32], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(2):
            t = pl.load(a, [i * 8, 0], [8, 64])
            pl.store(pl.muls(t, k), [i * 8, 0], out)
    return out


A = np.arange(16 * 64, dtype=np.float32).reshape(16, 64) / 5


@pytest.fixture
def artifact(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "cache"))  # its kernels are deleted below
    options = CompileOptions(platform_overrides=(("ub_bytes", 128 * 1024),), dump_level=PassDumpLevel.CONCISE)
    return compile(KernelCall(row_sum_scaled, (A, 2.0, np.zeros_like(A)), {}), options, tmp_path / "built")


def same(a, b) -> None:
    """Field by field; the lazily loaded parts compared by what they hold."""
    for name in type(a).__slots__:
        x, y = getattr(a, name), getattr(b, name)
        if name == "program":
            assert print_program(x.get()) == print_program(y.get())
        elif name == "plan":
            assert x.get() == y.get()
        else:
            assert x == y, name


def runs(artifact, folder: Path) -> np.ndarray:
    out = np.zeros_like(A)
    CompiledProgram(artifact, RunConfig(), folder).run(A, 2.0, out)
    return out


def test_bytes_round_trip(artifact, tmp_path):
    back = codecs.from_bytes(codecs.to_bytes(artifact))
    assert back is not None and not back.program.loaded and not back.plan.loaded  # read when used
    same(artifact, back)
    np.testing.assert_array_equal(runs(back, tmp_path), A * 2)


def test_bytes_whose_kernel_left_the_cache_decode_to_nothing(artifact):
    data = codecs.to_bytes(artifact)
    for so in artifact.kernels.values():
        so.unlink()
    assert codecs.from_bytes(data) is None


def test_folder_round_trip(artifact, tmp_path):
    folder = tmp_path / "kept"
    run = RunOptions(trace=True, cost_profile="pto-isa", seed=3)
    codecs.to_folder(artifact, folder, run)
    back, back_run = codecs.from_folder(folder)
    assert len(back.dumps) > 5 and (folder / "passes_dump" / "00_frontend.py").is_file()
    same(artifact, back)
    assert (back_run.trace, back_run.cost_profile, back_run.seed) == (True, "pto-isa", 3)
    np.testing.assert_array_equal(runs(back, folder), A * 2)


def test_a_folder_without_a_program_is_refused(tmp_path):
    with pytest.raises(CompiledDirError, match="holds no compiled_meta.json"):
        codecs.from_folder(tmp_path)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda m: m.pop("seed"), r"is damaged \(no 'seed'\)"),
        (lambda m: m.update(memory_planner="NO_SUCH"), r"is damaged \(no 'NO_SUCH'\)"),
        (lambda m: m.update(platform_overrides=5), "is damaged"),
        (lambda m: m.update(kernels={"../../x": "y"}), "No such file or directory"),
        (lambda m: m.update(external=[{"name": "a/b", "path": "k.cpp", "include_dirs": []}]), "is damaged"),
    ],
    ids=["missing-key", "unknown-planner", "bad-overrides", "kernel-outside", "bad-kernel-name"],
)
def test_a_folder_with_damaged_metadata_is_a_compiled_dir_error(artifact, tmp_path, edit, message):
    import json

    folder = tmp_path / "kept"
    codecs.to_folder(artifact, folder, RunOptions())
    meta_path = folder / codecs.META
    meta = json.loads(meta_path.read_text())
    edit(meta)
    meta_path.write_text(json.dumps(meta))
    with pytest.raises(CompiledDirError, match=message) as e:
        CompiledProgram.from_dir(folder)
    assert "recompile to refresh it" in str(e.value)


def test_a_compiled_program_refuses_a_config_it_cannot_run_with(tmp_path):
    from pypto.errors import ConfigError

    out = np.zeros_like(A)
    program = row_sum_scaled.compile(A, 2.0, out)
    with pytest.raises(ConfigError, match="config must be a pypto.runtime.RunConfig, got str 'a5sim'"):
        program(A, 2.0, out, config="a5sim")
    with pytest.raises(ConfigError, match="was compiled for 'a2a3sim'.*a call may not change them"):
        program(A, 2.0, out, config=RunConfig(platform="a5sim"))
    assert (out == 0).all()


def test_an_artifact_is_a_frozen_value_that_pickles_and_replaces_fields(artifact):
    back = pickle.loads(pickle.dumps(artifact))
    same(artifact, back)
    dumped = artifact.replace(dumps=(("00_parsed", "text"),))
    assert dumped.dumps == (("00_parsed", "text"),) and dumped.name == artifact.name
    assert artifact.dumps != dumped.dumps  # the original is unchanged
    with pytest.raises(AttributeError, match="frozen"):
        artifact.name = "other"
