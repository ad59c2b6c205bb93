"""A model-repository-style golden harness (model_harness.py) drives three kernels through
upstream's run-time API — tile-level, tensor-level and fused cube+vector — and validates them."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from model_harness import ScalarSpec, TensorSpec, run

import pypto.language as pl
from pypto.runtime.runner import load_compiled

ROWS, COLS = 256, 128


@pl.program
class ScaleBias:
    @pl.function(type=pl.FunctionType.Orchestration)
    def scale_bias(
        self,
        x: pl.Tensor[[ROWS, COLS], pl.FP32],
        bias: pl.Tensor[[64, COLS], pl.FP32],
        out: pl.Out[pl.Tensor[[ROWS, COLS], pl.FP32]],
    ) -> pl.Tensor[[ROWS, COLS], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP):
            b: pl.Tile[[64, COLS], pl.FP32] = pl.tile.load(bias, [0, 0], [64, COLS])
            for i in pl.range(0, 4, 1):
                t: pl.Tile[[64, COLS], pl.FP32] = pl.tile.load(x, [i * 64, 0], [64, COLS])
                pl.tile.store(pl.tile.add(pl.tile.muls(t, 0.5), b), [i * 64, 0], out)
        return out


@pl.jit
def tensor_add(
    a: pl.Tensor[[128, 128], pl.FP32],
    b: pl.Tensor[[128, 128], pl.FP32],
    out: pl.Out[pl.Tensor[[128, 128], pl.FP32]],
):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(a, b)
    return out


@pl.jit
def matmul_relu(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="mm_relu"):
        la = pl.move(pl.load(a, [0, 0], [64, 128], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
        rb = pl.move(pl.load(b, [0, 0], [128, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
        x = pl.move(pl.matmul(la, rb), target_memory=pl.Mem.Vec)  # the product crosses to the vector core
        pl.store(pl.relu(x), [0, 0], c)
    return c


def randn(seed: int):
    def init(shape: list[int], dtype: torch.dtype) -> torch.Tensor:
        return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)).to(dtype)

    return init


def test_tile_level_program(tmp_path: Path):
    specs = [
        TensorSpec("x", [ROWS, COLS], torch.float32, init_value=randn(0)),
        TensorSpec("bias", [64, COLS], torch.float32, init_value=randn(1)),
        TensorSpec("out", [ROWS, COLS], torch.float32, is_output=True),
    ]

    def golden(t: dict) -> None:
        t["out"][:] = t["x"] * 0.5 + t["bias"].repeat(4, 1)

    result = run(ScaleBias, specs, golden, tmp_path / "scale_bias", bench_rounds=3)
    assert result.passed, result.error
    assert (
        result.bench is not None
        and result.bench.cycles[0] == load_compiled(result.work_dir).last_report.cycles
    )
    assert (result.work_dir / "compiled_meta.json").is_file()


def test_tensor_level_kernel(tmp_path: Path):
    specs = [
        TensorSpec("a", [128, 128], torch.float32, init_value=randn(2)),
        TensorSpec("b", [128, 128], torch.float32, init_value=randn(3)),
        TensorSpec("out", [128, 128], torch.float32, is_output=True),
    ]

    def golden(t: dict) -> None:
        t["out"][:] = t["a"] + t["b"]

    result = run(tensor_add, specs, golden, tmp_path / "tensor_add")
    assert result.passed, result.error
    assert torch.count_nonzero(result.outputs["out"]) > 0


def test_fused_cube_and_vector_kernel(tmp_path: Path):
    specs = [
        TensorSpec("a", [64, 128], torch.float16, init_value=randn(4)),
        TensorSpec("b", [128, 64], torch.float16, init_value=randn(5)),
        TensorSpec("c", [64, 64], torch.float32, init_value=-1.0, is_output=True),
    ]

    def golden(t: dict) -> None:
        t["c"][:] = torch.relu(t["a"].float() @ t["b"].float())

    result = run(matmul_relu, specs, golden, tmp_path / "mm_relu", rtol=1e-3, atol=1e-3)
    assert result.passed, result.error
    kinds = {t.core_type for t in load_compiled(result.work_dir).last_report.tasks}
    assert kinds == {"AIC", "AIV"}  # the cube and the vector cores both ran


def test_the_harness_catches_a_wrong_result(tmp_path: Path):
    specs = [
        TensorSpec("a", [128, 128], torch.float32, init_value=1.0),
        TensorSpec("b", [128, 128], torch.float32, init_value=2.0),
        TensorSpec("out", [128, 128], torch.float32, is_output=True),
    ]

    def wrong(t: dict) -> None:
        t["out"][:] = t["a"] - t["b"]

    result = run(tensor_add, specs, wrong, tmp_path / "wrong")
    assert not result.passed and result.error == "output 'out' differs from the golden: max |diff| 4"
    assert ScalarSpec("k", value=3).to_ctypes().value == 3


@pytest.mark.parametrize("platform", ["a5sim"])
def test_the_backend_follows_the_platform(tmp_path: Path, platform: str):
    specs = [
        TensorSpec("x", [ROWS, COLS], torch.float32, init_value=randn(6)),
        TensorSpec("bias", [64, COLS], torch.float32, init_value=randn(7)),
        TensorSpec("out", [ROWS, COLS], torch.float32, is_output=True),
    ]

    def golden(t: dict) -> None:
        t["out"][:] = t["x"] * 0.5 + t["bias"].repeat(4, 1)

    result = run(
        ScaleBias, specs, golden, tmp_path / "a5", runtime_cfg={"platform": platform, "device_id": 0}
    )
    assert result.passed and load_compiled(result.work_dir).platform == platform
