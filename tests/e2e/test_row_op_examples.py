"""examples/softmax.py and examples/rmsnorm.py run as shipped and match float64 numpy."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def load(name: str):
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # inspect finds kernel sources through the module
    spec.loader.exec_module(module)
    return module


def test_softmax_example_matches_float64_within_fp16_rounding():
    err, report = load("softmax").run()
    assert err < 1e-3  # fp16 output: half an ulp of values <= 1 is 2.4e-4
    assert report.pipe_busy["VECTOR"] > report.pipe_busy["MTE2"]  # the row ops dominate


def test_rmsnorm_example_matches_float64():
    err, report = load("rmsnorm").run()
    assert err < 1e-6
    assert report.pipe_busy["VECTOR"] > 0 and report.pipe_busy["CUBE"] == 0
