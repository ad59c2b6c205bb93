"""Explicit cluster kernels end to end: numerics, the cores they run on, and misuse — a
compile error with the line where it can be seen, a typed run-time error or a deadlock
report naming both cores where it cannot."""

from __future__ import annotations

import numpy as np
import pytest
from cluster_kernels import BLOCKS, K, M, N

import pypto.language as pl
from pypto import errors
from pypto.runtime import RunConfig

CFG = RunConfig(platform="a2a3sim")


def operands(rows: int = M, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((rows, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    return a, b


def product(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return a.astype(np.float32) @ b.astype(np.float32)


def test_matmul_and_epilogue_run_on_one_cluster():
    from cluster_kernels import matmul_relu

    a, b = operands()
    c = np.zeros((M, N), np.float32)
    matmul_relu(a, b, c, config=CFG)
    np.testing.assert_allclose(c, np.maximum(product(a, b), 0), rtol=1e-5, atol=1e-5)
    rep = matmul_relu.last_report
    cores = {t.core_name: t for t in rep.tasks}
    assert set(cores) == {"AIC0", "AIV0", "AIV1"}  # one cluster task: the AIC and both AIVs
    assert cores["AIV1"].end == cores["AIV1"].start  # no split: the second AIV idles
    assert cores["AIV0"].end > cores["AIC0"].start  # the AIV waited for the AIC's tile
    assert len({t.start for t in rep.tasks}) == 1  # launched together


def test_up_down_split_gives_each_aiv_half_of_every_tile():
    from cluster_kernels import matmul_relu_up_down

    a, b = operands(BLOCKS * M)
    c = np.zeros((BLOCKS * M, N), np.float32)
    matmul_relu_up_down(a, b, c, config=CFG)
    np.testing.assert_allclose(c, np.maximum(product(a, b), 0), rtol=1e-5, atol=1e-5)
    busy = {t.core_name: t.cycles for t in matmul_relu_up_down.last_report.tasks}
    assert busy["AIV0"] > 0 and busy["AIV1"] > 0


def test_both_directions_through_a_two_slot_ring():
    from cluster_kernels import round_trip

    rng = np.random.default_rng(3)
    x = rng.standard_normal((BLOCKS * M, K)).astype(np.float32)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c = np.zeros((BLOCKS * M, N), np.float32)
    round_trip(x, b, c, config=CFG)
    h = (x * 0.5).astype(np.float16).astype(np.float32)
    np.testing.assert_allclose(c, h @ b.astype(np.float32) + 1, rtol=1e-4, atol=1e-3)


def test_a_ring_nobody_frees_is_a_deadlock_naming_both_cores_and_lines():
    from cluster_kernels import never_freed

    a, b = operands(BLOCKS * M)
    with pytest.raises(errors.DeadlockError) as e:
        never_freed(a, b, np.zeros((BLOCKS * M, N), np.float32), config=CFG)
    msg = str(e.value)
    assert "AIC0 waits for TPUSH to AIV 0 (ring full" in msg and "cluster_kernels.py:76:" in msg
    assert "on AIV0 has ended, last at" in msg and "cluster_kernels.py:78:" in msg


def test_a_pop_with_no_push_left_is_reported_at_run_time():
    from cluster_kernels import pops_more_than_pushed

    a, b = operands()
    with pytest.raises(errors.DeadlockError, match=r"AIV0 waits for TPOP from the AIC \(ring empty"):
        pops_more_than_pushed(a, b, np.zeros((M, N), np.float32), M, config=CFG)
    c = np.zeros((M, N), np.float32)
    pops_more_than_pushed(a, b, c, 2 * M, config=CFG)  # two pushes: fine
    np.testing.assert_allclose(c, product(a, b), rtol=1e-5, atol=1e-5)


# --- compile errors: what the source shows is wrong is refused with its line --------------------
def _compile(fn, *args):
    fn.compile(*args, config=CFG)


def _args() -> tuple:
    a, b = operands()
    return a, b, np.zeros((M, N), np.float32)


@pl.jit
def uses_acc_on_the_aiv(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.cluster():
        acc = pl.matmul(
            pl.move(pl.load(a, [0, 0], [M, K], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left),
            pl.move(pl.load(b, [0, 0], [K, N], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right),
        )
        pl.store(pl.relu(pl.move(acc, target_memory=pl.Mem.Vec)), [0, 0], c)
    return c


@pl.jit
def pop_without_push(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.cluster():
        x = pl.tpop_from_aic(shape=[M, N], dtype=pl.FP32)
        pl.store(x, [0, 0], c)
        pl.tfree_to_aic(x)
    return c


@pl.jit
def split_mismatch(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.cluster():
        acc = pl.matmul(
            pl.move(pl.load(a, [0, 0], [M, K], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left),
            pl.move(pl.load(b, [0, 0], [K, N], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right),
        )
        pl.tpush_to_aiv(acc, split=pl.SplitMode.UP_DOWN)
        x = pl.tpop_from_aic(shape=[M // 2, N], dtype=pl.FP32, split=pl.SplitMode.LEFT_RIGHT)
        pl.store(x, [0, 0], c)
        pl.tfree_to_aic(x)
    return c


@pl.jit
def shape_mismatch(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.cluster():
        acc = pl.matmul(
            pl.move(pl.load(a, [0, 0], [M, K], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left),
            pl.move(pl.load(b, [0, 0], [K, N], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right),
        )
        pl.tpush_to_aiv(acc, split=pl.SplitMode.UP_DOWN)
        x = pl.tpop_from_aic(shape=[M, N], dtype=pl.FP32, split=pl.SplitMode.UP_DOWN)
        pl.store(x, [0, 0], c)
        pl.tfree_to_aic(x)
    return c


@pl.jit
def freed_twice(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.cluster():
        acc = pl.matmul(
            pl.move(pl.load(a, [0, 0], [M, K], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left),
            pl.move(pl.load(b, [0, 0], [K, N], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right),
        )
        pl.tpush_to_aiv(acc)
        x = pl.tpop_from_aic(shape=[M, N], dtype=pl.FP32)
        pl.store(x, [0, 0], c)
        pl.tfree_to_aic(x)
        pl.tfree_to_aic(x)
    return c


@pl.jit
def frees_a_loaded_tile(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.cluster():
        x = pl.load(c, [0, 0], [M, N])
        pl.tfree_to_aic(x)
    return c


@pl.jit
def pipe_id_out_of_range(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.cluster():
        x = pl.load(c, [0, 0], [M, N])
        pl.tpush_to_aic(x, id=8)
    return c


@pl.jit
def cluster_with_a_scope_split(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.cluster(optimizations=[pl.split(pl.SplitMode.UP_DOWN)]):
        x = pl.load(c, [0, 0], [M, N])
        pl.store(x, [0, 0], c)
    return c


@pytest.mark.parametrize(
    ("kernel", "message"),
    [
        (uses_acc_on_the_aiv, r"needs both the AIC .* and an AIV .*pl\.tpush_to_aiv / pl\.tpop_from_aic"),
        (pop_without_push, r"tpop_from_aic \(pipe id 0\) has no producer: .* pl\.tpush_to_aiv with id=0"),
        (split_mismatch,
         r"this pop has split=2 but the push it receives \(at .*test_cluster_kernels\.py:1\d\d:\d+\)"),
        (shape_mismatch,
         r"this pop receives FP32 \[64, 64\], but the push at .* sends FP32 \[64, 64\] \(split=1"),
        (freed_twice, r"`x` is freed twice \(first at .*test_cluster_kernels\.py:\d+:\d+\)"),
        (frees_a_loaded_tile, r"tfree_to_aic frees `x`, which no pl\.tpop_from_aic produced"),
        (cluster_with_a_scope_split, r"pl\.cluster takes no pl\.split"),
        (pipe_id_out_of_range, r"pipe id 8 is out of range: this platform has 8 \(0\.\.7\)"),
    ],
)  # fmt: skip
def test_misuse_seen_in_the_source_is_a_compile_error_with_its_line(kernel, message):
    with pytest.raises(errors.CompileError, match=message) as e:
        _compile(kernel, *_args())
    assert "test_cluster_kernels.py:" in str(e.value)


def test_a_mismatch_only_the_run_sees_is_a_typed_error_naming_both_cores():
    from cluster_kernels import ragged_push

    a, b = operands()
    with pytest.raises(errors.CrossCoreError) as e:
        ragged_push(a, b, np.zeros((M, N), np.float32), config=CFG)
    msg = str(e.value)
    assert "AIV0 pops a fp32 [64, 64] tile, but the AIC pushed a fp32 [48, 64] tile" in msg
    assert "cluster_kernels.py:" in msg


@pytest.mark.parametrize(
    "overrides", [{"aiv_cores": 1}, {"aic_cores": 4, "aiv_cores": np.int64(7)}], ids=["one-aiv", "numpy-int"]
)
def test_a_platform_without_whole_clusters_is_a_config_error_before_anything_runs(overrides):
    from cluster_kernels import matmul_relu_up_down

    a, b = operands(rows=BLOCKS * M)
    c = np.full((BLOCKS * M, N), 7.0, np.float32)
    with pytest.raises(errors.ConfigError, match=r"needs aiv_cores >= 2 \* aic_cores") as e:
        matmul_relu_up_down(a, b, c, config=RunConfig(platform="a2a3sim", platform_overrides=overrides))
    assert f"aiv_cores={int(overrides['aiv_cores'])}" in str(e.value)
    assert (c == 7.0).all()  # no task ran
