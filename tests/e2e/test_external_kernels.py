"""external_source kernels: hand-written C++ behind a @pl.function, through the same build
path, protected by the same simulator checks."""

from __future__ import annotations

import importlib.util
import sys
import textwrap
from pathlib import Path

import external_kernels as ek
import numpy as np
import pytest

from pypto.errors import (
    CompileError,
    DeadlockError,
    HazardError,
    KernelBuildError,
    KernelLoadError,
    OutOfBoundsError,
    PyptoError,
)
from pypto.runtime import RunConfig

CFG = RunConfig(platform="a2a3sim")
X16 = np.random.default_rng(0).uniform(-4, 4, (128, 128)).astype(np.float16)


def expected_my_kernel(x: np.ndarray) -> np.ndarray:
    return ((x.astype(np.float32) * 2).astype(np.float16).astype(np.float32) + 1).astype(np.float16)


def test_seed_declaration_backed_by_cpp():
    out = np.zeros_like(X16)
    ek.call_my_kernel(X16, out, config=RunConfig(trace=True))
    np.testing.assert_array_equal(out, expected_my_kernel(X16))
    (task,) = ek.call_my_kernel.last_report.tasks
    assert task.name == "my_kernel" and task.trace is not None
    assert {r["loc"] for r in task.trace.rows()} >= {"my_kernel.cpp:14"}
    traces = ek.call_my_kernel.last_report.trace_paths
    assert any("my_kernel" in str(p) and str(p).endswith("visualize_data.bin") for p in traces)


def test_two_file_kernel_with_relative_include_and_include_dirs():
    x = np.random.default_rng(1).standard_normal((32, 64)).astype(np.float32)
    out = np.zeros_like(x)
    ek.call_two_file(x, out, config=CFG)
    np.testing.assert_allclose(out, x * 3 + 0.5, rtol=1e-6)


def test_generated_kernel_feeds_external_through_gm():
    out = np.zeros_like(X16)
    ek.generated_then_external(X16, out, config=CFG)
    np.testing.assert_array_equal(out, expected_my_kernel(-X16))
    first, second = ek.generated_then_external.last_report.tasks
    assert (first.name, second.name) == ("negate", "my_kernel")
    assert second.start >= first.end  # the consumer starts after its producer ends


def test_same_computation_by_hand_and_in_the_dsl():
    by_hand, dsl = np.zeros_like(X16), np.zeros_like(X16)
    ek.call_my_kernel(X16, by_hand, config=CFG)
    ek.dsl_version(X16, dsl, config=CFG)
    np.testing.assert_array_equal(by_hand, dsl)
    hand_rep, dsl_rep = ek.call_my_kernel.last_report, ek.dsl_version.last_report
    print("hand-written:", hand_rep, "DSL:", dsl_rep, sep="\n")
    assert 0.5 < dsl_rep.cycles / hand_rep.cycles < 2.0
    for pipe in ("MTE2", "MTE3"):
        assert hand_rep.pipe_busy[pipe] == pytest.approx(dsl_rep.pipe_busy[pipe], rel=0.05)


def test_call_is_checked_against_the_declared_signature():
    small = np.zeros((64, 128), np.float16)
    with pytest.raises(PyptoError, match=r"128, 128"):
        ek.call_my_kernel(small, np.zeros_like(small), config=CFG)


# --- kernels written into a temporary folder, to edit them and to break them --------------
MODULE = """
import pypto.language as pl

@pl.function(type=pl.FunctionType.AIV, external_source="{cpp}")
def k(x: pl.Tensor[[8, 64], pl.FP32], out: pl.Out[pl.Tensor[[8, 64], pl.FP32]]):
    ...

@pl.jit
def run(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    k(x, out)
    return out
"""

KERNEL = """
#include <pypto/kernel.hpp>
using namespace pypto;
extern "C" void kernel_entry(__gm__ int64_t* args) {{
  Tensor x = arg_tensor(args, 0), out = arg_tensor(args, 1);
  VecTile<float, 8, 64> t(0);
  PYPTO_LOC("k.cpp:7");
  TLOAD(t, x, {row}, 0);
  {sync}
  PYPTO_LOC("k.cpp:10");
  TADDS(t, t, {value});
  set_flag(PIPE_V, PIPE_MTE3, EVENT_ID0);
  wait_flag(PIPE_V, PIPE_MTE3, EVENT_ID0);
  TSTORE(out, 0, 0, t);
}}
"""
SYNC = "set_flag(PIPE_MTE2, PIPE_V, EVENT_ID0); wait_flag(PIPE_MTE2, PIPE_V, EVENT_ID0);"


def load_module(folder: Path, cpp_text: str | None, name: str, cpp: str = "k.cpp"):
    folder.mkdir(parents=True, exist_ok=True)
    if cpp_text is not None:
        (folder / cpp).write_text(textwrap.dedent(cpp_text))
    path = folder / f"{name}.py"
    path.write_text(MODULE.format(cpp=cpp))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def run(module, x=None):
    x = np.ones((8, 64), np.float32) if x is None else x
    out = np.zeros_like(x)
    module.run(x, out, config=CFG)
    return out


def test_editing_the_cpp_rebuilds_and_unchanged_is_a_hit(tmp_path):
    mod = load_module(tmp_path, KERNEL.format(row=0, sync=SYNC, value=1.0), "edit_me")
    assert (run(mod) == 2.0).all()
    so_first = mod.run.compile(
        np.ones((8, 64), np.float32), np.zeros((8, 64), np.float32), config=CFG
    ).kernels["k"]
    assert (run(mod) == 2.0).all()
    assert (
        mod.run.compile(np.ones((8, 64), np.float32), np.zeros((8, 64), np.float32), config=CFG).kernels["k"]
        == so_first
    )  # unchanged: the same entry
    (tmp_path / "k.cpp").write_text(KERNEL.format(row=0, sync=SYNC, value=5.0))
    assert (run(mod) == 6.0).all()  # the next call picked up the edit


def test_missing_file_names_the_resolved_path(tmp_path):
    mod = load_module(tmp_path, None, "missing_file", cpp="nowhere/k.cpp")
    with pytest.raises(CompileError, match=str(tmp_path / "nowhere" / "k.cpp")):
        run(mod)


def test_compile_error_carries_the_compiler_diagnostics(tmp_path):
    mod = load_module(tmp_path, "#include <pypto/kernel.hpp>\nint broken( {\n", "broken")
    with pytest.raises(KernelBuildError) as err:
        run(mod)
    assert f"{tmp_path / 'k.cpp'}:2:" in str(err.value) and "error" in str(err.value)


def test_missing_kernel_entry_names_the_file(tmp_path):
    mod = load_module(
        tmp_path, '#include <pypto/kernel.hpp>\nextern "C" void other(int64_t*) {}\n', "no_entry"
    )
    with pytest.raises(KernelLoadError, match=rf"{tmp_path / 'k.cpp'}.*kernel_entry"):
        run(mod)


def test_out_of_bounds_access_at_run_time_then_the_next_call_works(tmp_path):
    mod = load_module(tmp_path / "oob", KERNEL.format(row=4, sync=SYNC, value=1.0), "oob")
    with pytest.raises(OutOfBoundsError, match=r"kernel 'k'.*TLOAD: GM window rows \[4, 12\).* at k.cpp:7"):
        run(mod)
    good = load_module(tmp_path / "good", KERNEL.format(row=0, sync=SYNC, value=1.0), "good")
    assert (run(good) == 2.0).all()


def test_missing_wait_is_reported_as_a_race(tmp_path):
    mod = load_module(tmp_path, KERNEL.format(row=0, sync="", value=1.0), "racy")
    with pytest.raises(HazardError, match=r"RAW race: TADDS #1 on VECTOR .* at k.cpp:10 overlaps TLOAD #0"):
        run(mod)


def test_wait_never_set_is_a_deadlock(tmp_path):
    never = "wait_flag(PIPE_MTE2, PIPE_V, EVENT_ID5);"
    mod = load_module(tmp_path, KERNEL.format(row=0, sync=never, value=1.0), "deadlock")
    with pytest.raises(DeadlockError, match=r"WAIT_FLAG #1 at k.cpp:7 \(MTE2 -> VECTOR, event 5\)"):
        run(mod)
