"""AutoTileMatmulL0 alone, and end to end: a tile-level matmul whose whole Mat operand
overflows L0B runs in K chunks (numbers against numpy); one that fits is left as written."""

from __future__ import annotations

import numpy as np
from pass_util import apply, kernel

import pypto.language as pl
from pypto import ir
from pypto.passes.auto_tile_matmul_l0 import auto_tile_matmul_l0
from pypto.runtime import RunConfig

PARAMS = (
    "q: pl.Tensor[[32, 512], pl.FP16], kv: pl.Tensor[[{n}, 512], pl.FP16], "
    "out: pl.Out[pl.Tensor[[32, {n}], pl.FP32]]"
)
BODY = """
        qm = pl.load(q, [0, 0], [32, 512], target_memory=pl.Mem.Mat)
        km = pl.load(kv, [0, 0], [{n}, 512], target_memory=pl.Mem.Mat)
        a = pl.move(qm, target_memory=pl.Mem.Left)
        b = pl.move(km, target_memory=pl.Mem.Right)
        s = pl.matmul(a, b, out_dtype=pl.FP32, b_trans=True)
        pl.store(s, [0, 0], out)
        """


def _ops(n: int) -> list[str]:
    before = kernel(PARAMS.format(n=n), BODY.format(n=n), "AIC")
    fn = apply(auto_tile_matmul_l0, before).get("k")
    return [s.value.op for s in fn.body if isinstance(s, ir.Assign)]


def test_an_operand_over_l0b_is_multiplied_in_k_chunks():
    # kv^T [512, 128] fp16 is 128 KiB against 64 KiB of L0B: two chunks of K = 256
    assert _ops(128) == [
        "tile.load", "tile.load",
        "tile.extract", "tile.extract", "tile.matmul",
        "tile.extract", "tile.extract", "tile.matmul_acc",
    ]  # fmt: skip


def test_operands_that_fit_are_left_as_written():
    assert _ops(32) == ["tile.load", "tile.load", "tile.move", "tile.move", "tile.matmul"]


@pl.jit
def scores(
    q: pl.Tensor[[32, 512], pl.FP16],
    kv: pl.Tensor[[128, 512], pl.FP16],
    out: pl.Out[pl.Tensor[[32, 128], pl.FP32]],
):
    with pl.at(level=pl.Level.CORE_GROUP):
        qm = pl.load(q, [0, 0], [32, 512], target_memory=pl.Mem.Mat)
        km = pl.load(kv, [0, 0], [128, 512], target_memory=pl.Mem.Mat)
        pl.store(pl.matmul(qm, pl.tile.transpose_view(km), out_dtype=pl.FP32), [0, 0], out)
    return out


def test_scores_against_a_panel_too_big_for_l0b_match_numpy():
    rng = np.random.default_rng(0)
    q = rng.uniform(-1, 1, (32, 512)).astype(np.float16)
    kv = rng.uniform(-1, 1, (128, 512)).astype(np.float16)
    out = np.zeros((32, 128), np.float32)
    scores(q, kv, out, config=RunConfig(platform="a2a3sim"))
    np.testing.assert_allclose(out, q.astype(np.float32) @ kv.astype(np.float32).T, rtol=1e-4, atol=1e-3)
