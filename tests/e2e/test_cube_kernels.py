"""@pl.jit kernels on the cube: numerics against numpy, pipes and syncs in the report."""

from __future__ import annotations

import cube_kernels as ck
import ml_dtypes
import numpy as np
import pytest
from cube_numerics import k_order

from pypto import ir, platforms
from pypto.errors import CompileError
from pypto.frontend import parse_text
from pypto.runtime import RunConfig

CFG = RunConfig(platform="a2a3sim")


def operands(dtype, b_shape=(ck.K, ck.N), seed=0):
    rng = np.random.default_rng(seed)
    a = rng.uniform(-1, 1, (ck.M, ck.K)).astype(np.float32).astype(dtype)
    return a, rng.uniform(-1, 1, b_shape).astype(np.float32).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, ml_dtypes.bfloat16], ids=["fp32", "fp16", "bf16"])
def test_tile_matmul(dtype):
    a, b = operands(dtype)
    c = np.zeros((ck.M, ck.N), np.float32)
    ck.tile_matmul(a, b, c, config=CFG)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c, ref, rtol=1e-3, atol=1e-3 * np.abs(ref).max())
    rep = ck.tile_matmul.last_report
    assert rep.pipe_busy["CUBE"] > 0 and rep.pipe_busy["MTE1"] > 0 and rep.pipe_busy["FIXPIPE"] > 0
    assert rep.tasks[0].name.startswith("tile_matmul") and rep.hazards == []


def test_b_trans_and_matmul_acc():
    a, bt = operands(np.float16, b_shape=(ck.N, ck.K), seed=3)
    c = np.zeros((ck.M, ck.N), np.float32)
    ck.tile_matmul_bt_acc(a, bt, c, config=CFG)
    ref = a.astype(np.float64) @ bt.astype(np.float64).T
    np.testing.assert_allclose(c, ref, rtol=1e-3, atol=1e-3 * np.abs(ref).max())


@pytest.mark.parametrize("dtype", [np.float32, np.float16, ml_dtypes.bfloat16], ids=["fp32", "fp16", "bf16"])
def test_tile_matmul_bits_are_the_k_order_fp32_sums(dtype):
    a, b = operands(dtype, seed=7)
    c = np.zeros((ck.M, ck.N), np.float32)
    ck.tile_matmul(a, b, c, config=CFG)
    np.testing.assert_array_equal(c, k_order(a, b))


def test_matmul_acc_adds_each_half_sum_to_the_first():
    a, bt = operands(np.float16, b_shape=(ck.N, ck.K), seed=8)
    c = np.zeros((ck.M, ck.N), np.float32)
    ck.tile_matmul_bt_acc(a, bt, c, config=CFG)
    b = bt.T
    np.testing.assert_array_equal(c, k_order(a[:, :64], b[:64]) + k_order(a[:, 64:], b[64:]))


def test_acc_to_mat_feeds_a_second_matmul():
    rng = np.random.default_rng(4)
    a, b, w = (rng.uniform(-1, 1, (ck.M, ck.M)).astype(np.float32) for _ in range(3))
    out = np.zeros((ck.M, ck.M), np.float32)
    ck.chained_matmul(a, b, w, out, config=CFG)
    np.testing.assert_array_equal(out, k_order(k_order(a, b), w))
    busy = ck.chained_matmul.last_report.pipe_busy
    assert busy["FIXPIPE"] > 0 and busy["MTE3"] == 0 and busy["VECTOR"] == 0  # Acc -> Mat, Acc -> GM


def test_cube_kernel_is_outlined_as_aic():
    a, b = operands(np.float16)
    program = ck.tile_matmul.lower(a, b, np.zeros((ck.M, ck.N), np.float32), config=CFG)
    assert [f.kind.name for f in program.functions] == ["Orchestration", "AIC"]


def test_a_mixed_tile_scope_splits_into_a_cube_then_a_vector_task():
    import mixed_scope as ms

    a, b = operands(np.float16)
    c = np.zeros((ms.M, ms.N), np.float32)
    compiled = ms.matmul_relu.compile(a, b, c, config=CFG)
    assert [f.kind.name for f in compiled.program.functions] == ["Orchestration", "AIC", "AIV"]
    cube, vector = compiled.run(a, b, c).tasks
    np.testing.assert_array_equal(c, np.maximum(k_order(a, b), 0))
    assert (cube.core_type, vector.core_type) == ("AIC", "AIV")
    plat = platforms.get("a2a3sim")  # the vector task is the first on its (cold) AIV core
    assert vector.start == cube.end + int(plat.task_dispatch_cycles + plat.task_cold_head_cycles)


def test_a_mixed_tensor_scope_crosses_through_gm_and_keeps_handle_and_deps():
    import mixed_scope as ms

    a, b = operands(np.float16)
    c = np.zeros((ms.M, ms.N), np.float32)
    ms.scaled_matmul(a, b, c, 0.5, config=CFG)
    ref = np.maximum(k_order(a, b), 0) * np.float32(0.5) + np.float32(1.0)
    np.testing.assert_array_equal(c, ref)
    tasks = ms.scaled_matmul.last_report.tasks
    assert [t.name for t in tasks] == ["epilogue_cube", "epilogue_vector"] * 2 + ["after"]
    assert [t.core_type for t in tasks] == ["AIC", "AIV", "AIC", "AIV", "AIV"]
    after = tasks[-1]
    assert after.start > max(t.end for t in tasks[:-1])  # deps=[ep]: both sides of both blocks
    program = ms.scaled_matmul.lower(a, b, c, 0.5, config=CFG)  # the split reads back as written
    ir.assert_structural_equal(program, parse_text(ir.print_program(program)), names=True)


def test_a_mixed_scope_that_cannot_be_split_is_refused_with_the_fix():
    import mixed_scope as ms

    a, b = operands(np.float32)
    with pytest.raises(CompileError, match="cannot be split") as err:
        ms.vector_then_cube(a, b, np.zeros((ms.M, ms.N), np.float32), config=CFG)
    assert "two pl.at scopes" in str(err.value) and "mixed_scope.py:" in str(err.value)
