"""A tile operand in a space its op does not read is moved there by the compiler: a matmul
operand in Vec or Mat (a tile loaded or computed by vector code) to the L0 buffer the cube
reads (Mat → Left/Right; a Vec tile first crosses to the cube's Mat on the cluster's pipe),
and a product in Acc to Vec for vector work (across the pipe to an AIV). Numbers against
numpy; the moves in the dump."""

from __future__ import annotations

import numpy as np
import pytest

import pypto.language as pl
from pypto.errors import TypeCheckError
from pypto.runtime import RunConfig

CFG = RunConfig(platform="a2a3sim")
M, K, N = 16, 64, 32
BLOCKS, H, D, S = 2, 16, 128, 32  # per block: q [H, D] @ kv_t [D, S] in two K halves


@pl.jit
def squared_lhs(
    a: pl.Tensor[[M, K], pl.FP16], b: pl.Tensor[[K, N], pl.FP16], out: pl.Out[pl.Tensor[[M, N], pl.FP32]]
):
    with pl.at(level=pl.Level.CORE_GROUP):
        x = pl.load(a, [0, 0], [M, K], target_memory=pl.Mem.Vec)
        w = pl.load(b, [0, 0], [K, N], target_memory=pl.Mem.Mat)
        pl.store(pl.matmul(pl.mul(x, x), w, out_dtype=pl.FP32), [0, 0], out)
    return out


@pl.jit
def mat_operands(
    a: pl.Tensor[[M, K], pl.FP16], b: pl.Tensor[[K, N], pl.FP16], out: pl.Out[pl.Tensor[[M, N], pl.FP32]]
):
    with pl.at(level=pl.Level.CORE_GROUP):
        x = pl.load(a, [0, 0], [M, K], target_memory=pl.Mem.Mat)
        w = pl.load(b, [0, 0], [K, N], target_memory=pl.Mem.Mat)
        pl.store(pl.matmul(x, w, out_dtype=pl.FP32), [0, 0], out)
    return out


@pl.jit
def split_k_from_vec(
    q: pl.Tensor[[BLOCKS * H, D], pl.FP16],
    kv_t: pl.Tensor[[BLOCKS * D, S], pl.FP16],
    out: pl.Out[pl.Tensor[[BLOCKS * H, S], pl.FP32]],
):
    """Both operands are Vec tiles, the lhs a column window of one: as attention kernels
    written with explicit Vec loads multiply them."""
    with pl.spmd(BLOCKS, name_hint="scores"):
        b = pl.get_block_idx()
        qt = pl.load(q, [b * H, 0], [H, D], target_memory=pl.Mem.Vec)
        left = pl.load(kv_t, [b * D, 0], [D // 2, S], target_memory=pl.Mem.Vec)
        right = pl.load(kv_t, [b * D + D // 2, 0], [D // 2, S], target_memory=pl.Mem.Vec)
        acc = pl.matmul(qt[:, 0 : D // 2], left, out_dtype=pl.FP32)
        acc = pl.matmul_acc(acc, qt[:, D // 2 : D], right)
        pl.store(acc, [b * H, 0], out)
    return out


@pl.jit
def scaled_product(
    a: pl.Tensor[[M, K], pl.FP16], b: pl.Tensor[[K, N], pl.FP16], out: pl.Out[pl.Tensor[[M, N], pl.FP32]]
):
    with pl.at(level=pl.Level.CORE_GROUP):
        x = pl.load(a, [0, 0], [M, K], target_memory=pl.Mem.Mat)
        w = pl.load(b, [0, 0], [K, N], target_memory=pl.Mem.Mat)
        scores = pl.matmul(x, w, out_dtype=pl.FP32)
        pl.store(pl.exp(pl.mul(scores, 0.125)), [0, 0], out)
    return out


def _f16(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return rng.standard_normal(shape).astype(np.float16)


def test_a_vec_lhs_crosses_to_the_cube_and_multiplies():
    rng = np.random.default_rng(0)
    a, b = _f16(rng, M, K), _f16(rng, K, N)
    out = np.zeros((M, N), np.float32)
    squared_lhs(a, b, out, config=CFG)
    sq = (a.astype(np.float32) ** 2).astype(np.float16).astype(np.float32)  # pl.mul rounds to FP16
    np.testing.assert_allclose(out, sq @ b.astype(np.float32), rtol=1e-5, atol=1e-4)
    text = squared_lhs.lower(a, b, out, config=CFG).as_python()
    assert "pl.tile.tpush_to_aic(" in text and "pl.tile.tpop_from_aiv(" in text
    assert "pl.Mem.Left] = pl.tile.move(" in text


def test_mat_operands_are_moved_to_left_and_right():
    rng = np.random.default_rng(1)
    a, b = _f16(rng, M, K), _f16(rng, K, N)
    out = np.zeros((M, N), np.float32)
    mat_operands(a, b, out, config=CFG)
    np.testing.assert_allclose(out, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-5, atol=1e-4)
    assert [t.core_type for t in mat_operands.last_report.tasks] == ["AIC"]  # no vector side


def test_vec_operands_of_a_split_k_product_per_block():
    rng = np.random.default_rng(2)
    q, kv_t = _f16(rng, BLOCKS * H, D), _f16(rng, BLOCKS * D, S)
    out = np.zeros((BLOCKS * H, S), np.float32)
    split_k_from_vec(q, kv_t, out, config=CFG)
    q32, kv32 = q.astype(np.float32), kv_t.astype(np.float32)
    want = np.concatenate([q32[i * H : (i + 1) * H] @ kv32[i * D : (i + 1) * D] for i in range(BLOCKS)])
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-3)
    assert all(t.hazards == [] for t in split_k_from_vec.last_report.tasks)


def test_an_acc_product_crosses_to_the_vector_side_for_vector_work():
    rng = np.random.default_rng(3)
    a, b = _f16(rng, M, K), _f16(rng, K, N)
    out = np.zeros((M, N), np.float32)
    scaled_product(a, b, out, config=CFG)
    want = np.exp(0.125 * (a.astype(np.float32) @ b.astype(np.float32)))
    np.testing.assert_allclose(out, want, rtol=1e-5)
    text = scaled_product.lower(a, b, out, config=CFG).as_python()
    assert "pl.tile.tpush_to_aiv(" in text and "pl.tile.tpop_from_aic(" in text


@pl.jit
def shared_panel(
    q: pl.Tensor[[M, K], pl.FP16],
    kv: pl.Tensor[[N, K], pl.FP16],
    p: pl.Tensor[[M, N], pl.FP16],
    scores: pl.Out[pl.Tensor[[M, N], pl.FP32]],
    ctx: pl.Out[pl.Tensor[[M, K], pl.FP32]],
):
    """One Mat load of kv feeds q @ kv^T (through its transposed view) and p @ kv (as loaded)."""
    with pl.at(level=pl.Level.CORE_GROUP):
        kv_m = pl.load(kv, [0, 0], [N, K], target_memory=pl.Mem.Mat)
        kv_t = pl.tile.transpose_view(kv_m)
        q_m = pl.load(q, [0, 0], [M, K], target_memory=pl.Mem.Mat)
        pl.store(pl.matmul(q_m, kv_t, out_dtype=pl.FP32), [0, 0], scores)
        p_m = pl.load(p, [0, 0], [M, N], target_memory=pl.Mem.Mat)
        pl.store(pl.matmul(p_m, kv_m, out_dtype=pl.FP32), [0, 0], ctx)
    return scores, ctx


@pl.jit
def transposed_lhs(
    a_t: pl.Tensor[[K, M], pl.FP16], b: pl.Tensor[[K, N], pl.FP16], out: pl.Out[pl.Tensor[[M, N], pl.FP32]]
):
    with pl.at(level=pl.Level.CORE_GROUP):
        a = pl.tile.transpose_view(pl.load(a_t, [0, 0], [K, M], target_memory=pl.Mem.Mat))
        w = pl.load(b, [0, 0], [K, N], target_memory=pl.Mem.Mat)
        pl.store(pl.matmul(a, w, out_dtype=pl.FP32), [0, 0], out)
    return out


def test_a_transposed_view_feeds_a_matmul_and_its_panel_another():
    rng = np.random.default_rng(4)
    q, kv, p = _f16(rng, M, K), _f16(rng, N, K), _f16(rng, M, N)
    scores, ctx = np.zeros((M, N), np.float32), np.zeros((M, K), np.float32)
    shared_panel(q, kv, p, scores, ctx, config=CFG)
    q32, kv32, p32 = (x.astype(np.float32) for x in (q, kv, p))
    np.testing.assert_allclose(scores, q32 @ kv32.T, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(ctx, p32 @ kv32, rtol=1e-5, atol=1e-4)
    text = shared_panel.lower(q, kv, p, scores, ctx, config=CFG).as_python()
    assert "transpose_view" not in text and "b_trans=True" in text
    assert text.count("pl.tile.load(kv,") == 1


def test_a_transposed_view_as_the_lhs_is_read_with_a_trans():
    rng = np.random.default_rng(5)
    a_t, b = _f16(rng, K, M), _f16(rng, K, N)
    out = np.zeros((M, N), np.float32)
    transposed_lhs(a_t, b, out, config=CFG)
    np.testing.assert_allclose(out, a_t.astype(np.float32).T @ b.astype(np.float32), rtol=1e-5, atol=1e-4)


@pl.jit
def moved_views(
    q: pl.Tensor[[M, K], pl.FP16], kv: pl.Tensor[[N, K], pl.FP16], a_t: pl.Tensor[[K, M], pl.FP16],
    scores: pl.Out[pl.Tensor[[M, N], pl.FP32]], gram: pl.Out[pl.Tensor[[M, M], pl.FP32]],
):  # fmt: skip
    """Transposed views moved to L0 by hand, as upstream's kernels write them: the tile itself
    is moved, and the matmul reads it with b_trans / a_trans."""
    with pl.at(level=pl.Level.CORE_GROUP):
        q0 = pl.move(pl.load(q, [0, 0], [M, K], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
        kv_t = pl.tile.transpose_view(pl.load(kv, [0, 0], [N, K], target_memory=pl.Mem.Mat))
        kv0 = pl.move(kv_t, target_memory=pl.Mem.Right)
        pl.store(pl.matmul(q0, kv0, out_dtype=pl.FP32), [0, 0], scores)
        a_m = pl.load(a_t, [0, 0], [K, M], target_memory=pl.Mem.Mat)
        a0 = pl.move(pl.tile.transpose_view(a_m), target_memory=pl.Mem.Left)
        pl.store(pl.matmul(a0, pl.move(a_m, target_memory=pl.Mem.Right), out_dtype=pl.FP32), [0, 0], gram)
    return scores, gram


def test_a_transposed_view_moved_to_l0_is_the_tile_moved_and_read_transposed():
    rng = np.random.default_rng(6)
    q, kv, a_t = _f16(rng, M, K), _f16(rng, N, K), _f16(rng, K, M)
    scores, gram = np.zeros((M, N), np.float32), np.zeros((M, M), np.float32)
    moved_views(q, kv, a_t, scores, gram, config=CFG)
    q32, kv32, a32 = (x.astype(np.float32) for x in (q, kv, a_t))
    np.testing.assert_allclose(scores, q32 @ kv32.T, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(gram, a32.T @ a32, rtol=1e-5, atol=1e-4)
    text = moved_views.lower(q, kv, a_t, scores, gram, config=CFG).as_python()
    assert "transpose_view" not in text and "b_trans=True" in text and "a_trans=True" in text
    assert moved_views.last_report.hazards == []


def test_a_transposed_view_read_by_another_op_is_refused_at_that_read(tmp_path):
    src = tmp_path / "bad_view.py"
    src.write_text(
        "import pypto.language as pl\n"
        "@pl.jit\n"
        "def bad(a: pl.Tensor[[16, 64], pl.FP16], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):\n"
        "    with pl.at(level=pl.Level.CORE_GROUP):\n"
        "        t = pl.tile.transpose_view(pl.load(a, [0, 0], [16, 64], target_memory=pl.Mem.Mat))\n"
        "        left = pl.tile.extract(t, 0, 0, [64, 16], target_memory=pl.Mem.Left)\n"
        "        pl.store(pl.matmul(left, pl.move(pl.load(a, [0, 0], [16, 64], target_memory=pl.Mem.Mat),"
        " target_memory=pl.Mem.Right), out_dtype=pl.FP32), [0, 0], out)\n"
        "    return out\n"
    )
    import importlib.util

    spec = importlib.util.spec_from_file_location("bad_view", src)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    a = np.zeros((16, 64), np.float16)
    with pytest.raises(
        TypeCheckError, match=r"`t` is a pl.tile.transpose_view, read only as a matmul operand"
    ) as e:
        mod.bad.compile(a, np.zeros((64, 64), np.float32))
    assert "bad_view.py:6" in str(e.value)


@pl.jit
def product_and_fill(
    a: pl.Tensor[[2 * M, K], pl.FP16],
    b: pl.Tensor[[K, N], pl.FP16],
    h: pl.Out[pl.Tensor[[2 * M, N], pl.FP32]],
    r: pl.Out[pl.Tensor[[2 * M, N], pl.FP32]],
):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(2):
            h[i * M : (i + 1) * M, :] = pl.matmul(a[i * M : (i + 1) * M, :], b, out_dtype=pl.FP32)
            r[i * M : (i + 1) * M, :] = pl.full([M, N], dtype=pl.FP32, value=-1.0)
    return h, r


def test_a_fill_next_to_a_product_runs_on_the_vector_core():
    """``pl.full`` fills a Vec tile, which only an AIV has: a scope holding it and a matmul is
    a cluster kernel, not an AIC kernel holding a Vec tile."""
    rng = np.random.default_rng(3)
    a = rng.standard_normal((2 * M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    h, r = np.zeros((2 * M, N), np.float32), np.zeros((2 * M, N), np.float32)
    product_and_fill(a, b, h, r, config=CFG)
    np.testing.assert_allclose(h, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-3, atol=1e-3)
    assert (r == -1.0).all()
    assert {t.core_name for t in product_and_fill.last_report.tasks} == {"AIC0", "AIV0", "AIV1"}
