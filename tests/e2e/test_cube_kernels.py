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


def test_vector_work_then_a_matmul_is_one_cluster_task():
    import mixed_scope as ms

    a, b = operands(np.float32)
    c = np.zeros((ms.M, ms.N), np.float32)
    ms.vector_then_cube(a, b, c, config=CFG)
    ref = np.maximum(a.astype(np.float64), 0) @ b.astype(np.float64)
    np.testing.assert_allclose(c, ref, rtol=1e-3, atol=1e-3 * np.abs(ref).max())
    tasks = ms.vector_then_cube.last_report.tasks
    assert {t.core_name for t in tasks} == {"AIC0", "AIV0", "AIV1"}  # both cores, one task
    assert len({t.start for t in tasks}) == 1


def test_a_matmul_and_its_epilogue_in_every_trip_is_one_cluster_task():
    import mixed_scope as ms

    a, b = operands(np.float16)
    bias = np.random.default_rng(1).uniform(-1, 1, (ms.M // 2, ms.N)).astype(np.float32)
    c = np.zeros((ms.M, ms.N), np.float32)
    ms.blocks_in_a_loop(a, b, bias, c, config=CFG)
    ref = np.maximum(k_order(a, b) + np.tile(bias, (2, 1)), 0)
    np.testing.assert_allclose(c, ref, rtol=1e-5, atol=1e-5)
    program = ms.blocks_in_a_loop.lower(a, b, bias, c, config=CFG)
    aic, aiv = program.get("blocks_aic"), program.get("blocks_aiv")
    pushes = [x.op for x in ir.nodes_of(aic.body, ir.Call) if x.op.startswith("tile.tpush")]
    pops = [x.op for x in ir.nodes_of(aiv.body, ir.Call) if x.op.startswith("tile.tpop")]
    assert pushes == ["tile.tpush_to_aiv"] and pops == ["tile.tpop_from_aic"]  # in the loop, once


def test_attention_hands_scores_over_and_probabilities_back():
    import mixed_scope as ms

    rng = np.random.default_rng(2)
    q = (rng.standard_normal((ms.M, ms.K)) * 0.1).astype(np.float16)
    k, v = (rng.standard_normal((ms.N, ms.K)).astype(np.float16) for _ in range(2))
    o = np.zeros((ms.M, ms.K), np.float32)
    ms.attention(q, k, v, o, config=CFG)
    s = q.astype(np.float32) @ k.astype(np.float32).T
    p = np.exp(s - s.max(1, keepdims=True))
    want = (p.astype(np.float16).astype(np.float32) @ v.astype(np.float32)) / p.sum(1, keepdims=True)
    np.testing.assert_allclose(o, want, rtol=2e-3, atol=2e-3)
    program = ms.attention.lower(q, k, v, o, config=CFG)
    aic = program.get("attn_aic")
    ops = [x.op for x in ir.nodes_of(aic.body, ir.Call) if x.op.startswith(("tile.tpush", "tile.tpop"))]
    assert ops == ["tile.tpush_to_aiv", "tile.tpop_from_aiv", "tile.tpush_to_aiv"]


def test_a_mat_tile_moved_to_vec_is_routed_from_its_window_or_its_product():
    import mixed_scope as ms

    a, b = operands(np.float16)
    c, d = np.zeros((ms.M, ms.N), np.float32), np.zeros((ms.M, ms.K), np.float16)
    ms.window_mat_to_vec(a, b, c, d, config=CFG)
    np.testing.assert_array_equal(c, k_order(a, b))
    np.testing.assert_array_equal(d, np.maximum(a, 0))
    aiv = ms.window_mat_to_vec.lower(a, b, c, d, config=CFG).get("window_aiv")
    assert [x.op for x in ir.nodes_of(aiv.body, ir.Call)][0] == "tile.load"  # GM → UB again
    ms.product_mat_to_vec(a, b, c, config=CFG)
    np.testing.assert_array_equal(c, np.maximum(k_order(a, b), 0))
    aic = ms.product_mat_to_vec.lower(a, b, c, config=CFG).get("product_aic")
    assert "tile.tpush_to_aiv" in [x.op for x in ir.nodes_of(aic.body, ir.Call)]  # Acc → Vec


@pytest.mark.parametrize("dtype", [np.float32, np.float16], ids=["fp32", "fp16-narrowed"])
def test_a_mat_tile_a_product_was_inserted_into_is_routed_to_vec_from_both(dtype):
    import mixed_scope as ms

    a, b = operands(np.float16)
    x = np.random.default_rng(3).uniform(-1, 1, (ms.M, 2 * ms.N)).astype(dtype)
    y = np.zeros_like(x)
    ms.inserted_mat_to_vec(x, a, b, y, config=CFG)
    want = x.copy()
    want[:, ms.N :] = k_order(a, b).astype(dtype)  # numpy narrows with ties to even, as FIXPIPE
    np.testing.assert_array_equal(y, want)
    aiv = ms.inserted_mat_to_vec.lower(x, a, b, y, config=CFG).get("inserted_aiv")
    ops = [c.op for c in ir.nodes_of(aiv.body, ir.Call)]
    assert ops[0] == "tile.load" and "tile.tpop_from_aic" in ops and "tile.assemble" in ops
    assert ("tile.cast" in ops) is (dtype == np.float16)
    assert ms.inserted_mat_to_vec.last_report.hazards == []


def test_a_mat_tile_with_no_route_to_vec_is_refused_with_its_line():
    import mixed_scope as ms

    a, b = operands(np.float16)
    with pytest.raises(CompileError, match="moves from Mat to Vec, which has no path") as err:
        ms.rewritten_window_to_vec(a, b, np.zeros((ms.M, ms.N), np.float32), config=CFG)
    assert "mixed_scope.py:" in str(err.value)


def test_a_tensor_stored_by_one_core_and_loaded_by_the_other_is_refused():
    import mixed_scope as ms

    a, b = operands(np.float32)
    c = np.zeros((ms.M, ms.N), np.float32)
    with pytest.raises(CompileError, match="stored by the AIC and loaded by the AIV") as err:
        ms.reread_product(a, b, c, config=CFG)
    assert "mixed_scope.py:" in str(err.value)
    assert not c.any()  # nothing ran
