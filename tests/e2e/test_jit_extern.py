"""@pl.jit.extern: a model's orchestration calls a hand-written C++ kernel (with its own header
folder and pto_isa_include_dir) through the same build as external_source."""

from __future__ import annotations

import importlib.util
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import pypto.language as pl
from pypto.runtime import RunConfig, execute_compiled

HEADER = """
#pragma once
constexpr float kScale = 0.5f;  // the vendor kernel's tuning constant
"""

KERNEL = """
#include <pypto/kernel.hpp>
#include "scale_params.h"
using namespace pypto;
extern "C" void kernel_entry(__gm__ int64_t* args) {
  Tensor x = arg_tensor(args, 0), out = arg_tensor(args, 1);
  VecTile<float, 16, 64> t(0);
  for (int r = 0; r < 32; r += 16) {
    PYPTO_LOC("vendor_scale.cpp:9");
    TLOAD(t, x, r, 0);
    set_flag(PIPE_MTE2, PIPE_V, EVENT_ID0);
    wait_flag(PIPE_MTE2, PIPE_V, EVENT_ID0);
    TMULS(t, t, kScale);
    set_flag(PIPE_V, PIPE_MTE3, EVENT_ID0);
    wait_flag(PIPE_V, PIPE_MTE3, EVENT_ID0);
    TSTORE(out, r, 0, t);
    set_flag(PIPE_MTE3, PIPE_MTE2, EVENT_ID0);
    wait_flag(PIPE_MTE3, PIPE_MTE2, EVENT_ID0);
  }
}
"""

MODEL = """
import pypto.language as pl
from pypto.runtime import pto_isa_include_dir

@pl.jit.extern(source="vendor/vendor_scale.cpp", core_type="aiv",
               include_dirs=["vendor/include", pto_isa_include_dir()])
def vendor_scale(x: pl.Tensor[[32, 64], pl.FP32], out: pl.Out[pl.Tensor[[32, 64], pl.FP32]]): ...

@pl.jit(auto_scope=False)
def model(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    tmp = pl.create_tensor([32, 64], pl.FP32)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="exp"):
        t = pl.load(x, [0, 0], [32, 64])
        pl.store(pl.exp(t), [0, 0], tmp)
    vendor_scale(tmp, out)
    return out
"""


def _model(folder: Path, name: str):
    (folder / "vendor" / "include").mkdir(parents=True)
    (folder / "vendor" / "include" / "scale_params.h").write_text(textwrap.dedent(HEADER))
    (folder / "vendor" / "vendor_scale.cpp").write_text(textwrap.dedent(KERNEL))
    (folder / f"{name}.py").write_text(textwrap.dedent(MODEL))
    spec = importlib.util.spec_from_file_location(name, folder / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "cache"))


def test_model_calls_a_hand_written_kernel_after_a_generated_one(tmp_path: Path):
    m = _model(tmp_path, "extern_model")
    x = np.random.default_rng(0).uniform(-2, 2, (32, 64)).astype(np.float32)
    out = np.zeros_like(x)
    m.model(x, out, config=RunConfig(platform="a2a3sim"))
    np.testing.assert_allclose(out, np.exp(x) * 0.5, rtol=1e-6)
    first, second = m.model.last_report.tasks
    assert (first.name, second.name) == ("exp", "vendor_scale") and second.start >= first.end
    assert m.model.auto_scope is False and m.vendor_scale.external_source.endswith("vendor_scale.cpp")
    compiled = m.model.compile(x, out, config=RunConfig(output_dir=tmp_path / "build"))
    again = np.zeros_like(x)
    execute_compiled(tmp_path / "build", [x, again], platform="a2a3sim")  # the folder form too
    np.testing.assert_array_equal(again, out)
    assert compiled.external and compiled.external[0].name == "vendor_scale"


def test_declaration_errors_name_the_problem(tmp_path: Path):
    def stub(x: pl.Tensor, out: pl.Out[pl.Tensor]): ...

    with pytest.raises(ValueError, match="source file not found: .*missing.cpp"):
        pl.jit.extern(source=str(tmp_path / "missing.cpp"))(stub)
    (tmp_path / "k.cpp").write_text("")
    with pytest.raises(ValueError, match="include directory not found"):
        pl.jit.extern(source=str(tmp_path / "k.cpp"), include_dirs=[str(tmp_path / "nope")])(stub)
    with pytest.raises(ValueError, match="core_type must be 'aic', 'aiv' or 'mixed'"):
        pl.jit.extern(source="k.cpp", core_type="cube")
    with pytest.raises(ValueError, match="hand-written AIC \\+ AIV pair is not supported"):
        pl.jit.extern(core_type="mixed", aic_source="a.cpp", aiv_source="b.cpp")
    with pytest.raises(ValueError, match="requires source="):
        pl.jit.extern(core_type="aic")(stub)
    with pytest.raises(TypeError, match="auto_scope must be True or False"):
        pl.jit(auto_scope="no")
    kernel = pl.jit.extern(source=str(tmp_path / "k.cpp"), core_type="aic")(stub)
    assert kernel.type is pl.FunctionType.AIC
