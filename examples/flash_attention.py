"""Forward FlashAttention as one fused cluster kernel per head: Q·Kᵀ on the cube, the online
softmax on the vector cores, P·V on the cube, in one pass over K/V.

One mixed ``pl.at`` scope per head: the compiler splits it into an AIC kernel and an AIV
kernel and inserts the tile pipes where a tile crosses (``pl.move(s, target_memory=
pl.Mem.Vec)`` hands a score block to the AIVs, ``pl.move(p, target_memory=pl.Mem.Mat)``
hands the fp16 probabilities back). With ``pl.split(pl.SplitMode.UP_DOWN)`` the two AIVs of
the cluster each take half of the query rows. Inputs are fp16, the softmax state (running
row max ``m``, row sum ``l``, output accumulator ``o``) is fp32. ``pl.parallel`` over heads
gives one cluster task per head: 24 heads fill the 24 clusters of a2a3.

Variants: ``causal=True`` (key block ``j`` only up to query block ``i``, the diagonal block
masked) and a decode shape (one query row block against a long K/V). Checked against
``torch.nn.functional.scaled_dot_product_attention`` (numpy in float64 without torch).

    python examples/flash_attention.py                 # quick: [4 heads, 512, 128] forward
    python examples/flash_attention.py --causal --decode --heads 24 --seq 2048  # the full set
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

import pypto.language as pl
from pypto.runtime import RunConfig

NEG = -1.0e30  # the running max before any key: exp(NEG - m) is exactly 0


def make_attention(
    heads: int, sq: int, skv: int, d: int, br: int = 64, bc: int = 128, causal: bool = False,
    split: pl.SplitMode = pl.SplitMode.UP_DOWN, stage: int = 1,
):  # fmt: skip
    """The attention kernel for q [heads * sq, d], k and v [heads * skv, d] (fp16, heads
    stacked along rows), out [heads * sq, d] fp32. ``br`` query rows and ``bc`` keys per block.
    ``causal`` needs sq == skv and br == bc; ``mask`` is then the [br, bc] diagonal-block mask
    (0 on and below the diagonal, NEG above); otherwise pass any [br, bc] fp32 tensor.
    ``split``: how the cluster's two AIVs share the softmax (NONE: one AIV does it all).
    ``stage``: the key loop as ``pl.pipeline(stage=)``; 1 is a plain loop, 2 takes two key
    blocks a trip and issues the second block's loads before the first block's compute
    (docs/double_buffering.md)."""
    assert sq % br == 0 and skv % bc == 0 and br % 2 == 0
    assert not causal or (sq == skv and br == bc)
    scale = 1.0 / math.sqrt(d)
    q_blocks, kv_blocks = sq // br, skv // bc
    diag = int(causal)  # causal: key blocks 0..qb, else all of them

    @pl.jit
    def attention(q: pl.Tensor, k: pl.Tensor, v: pl.Tensor, mask: pl.Tensor, out: pl.Out[pl.Tensor]):
        for h in pl.parallel(heads):
            with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(split)]):
                for qb in pl.range(q_blocks):
                    q0 = h * sq + qb * br
                    q_l = pl.move(
                        pl.load(q, [q0, 0], [br, d], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left
                    )
                    m0 = pl.expands(pl.create_tile([br, 1], pl.FP32), NEG)
                    l0 = pl.expands(pl.create_tile([br, 1], pl.FP32), 0.0)
                    o0 = pl.expands(pl.create_tile([br, d], pl.FP32), 0.0)
                    stop = diag * (qb + 1) + (1 - diag) * kv_blocks
                    # S for key block 0 before the loop; in the loop the cube computes the next
                    # block's S first, so it overlaps this block's softmax on the AIVs
                    k_first = pl.load(k, [h * skv, 0], [bc, d], target_memory=pl.Mem.Mat)
                    s_first = pl.matmul(q_l, pl.move(k_first, target_memory=pl.Mem.Right), b_trans=True)
                    s_init = pl.muls(pl.move(s_first, target_memory=pl.Mem.Vec), scale)
                    for kb, (m, row_sum, o, s_v) in pl.pipeline(
                        stop, stage=stage, init_values=(m0, l0, o0, s_init)
                    ):
                        k0 = h * skv + kb * bc
                        if kb + 1 < stop:
                            k_next = pl.load(k, [k0 + bc, 0], [bc, d], target_memory=pl.Mem.Mat)
                            s = pl.matmul(q_l, pl.move(k_next, target_memory=pl.Mem.Right), b_trans=True)
                            s_next = pl.yield_(pl.muls(pl.move(s, target_memory=pl.Mem.Vec), scale))
                        else:
                            s_next = pl.yield_(s_v)
                        if diag == 1 and kb == qb:
                            masked = pl.add(s_v, pl.load(mask, [0, 0], [br, bc]))
                            sc = pl.yield_(masked)
                        else:
                            sc = pl.yield_(s_v)
                        tmp = pl.create_tile([br, bc], pl.FP32)
                        m_new = pl.maximum(m, pl.row_max(sc, tmp))
                        p = pl.exp(pl.row_expand_sub(sc, m_new))
                        alpha = pl.exp(pl.sub(m, m_new))
                        l_new = pl.add(pl.mul(alpha, row_sum), pl.row_sum(p, tmp))
                        p_m = pl.move(pl.cast(p, target_type=pl.FP16, mode="round"), target_memory=pl.Mem.Mat)
                        v_r = pl.move(
                            pl.load(v, [k0, 0], [bc, d], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right
                        )
                        pv = pl.matmul(pl.move(p_m, target_memory=pl.Mem.Left), v_r)  # cube: P·V
                        o_new = pl.add(pl.row_expand_mul(o, alpha), pl.move(pv, target_memory=pl.Mem.Vec))
                        m_out, l_out, o_out, s_last = pl.yield_(m_new, l_new, o_new, s_next)
                    pl.store(pl.row_expand_div(o_out, l_out), [q0, 0], out)
        return out

    return attention


def causal_mask(br: int, bc: int) -> np.ndarray:
    """The diagonal block's mask: key j > query i is NEG."""
    return np.where(np.arange(bc)[None, :] > np.arange(br)[:, None], NEG, 0.0).astype(np.float32)


def reference(q: np.ndarray, k: np.ndarray, v: np.ndarray, heads: int, causal: bool = False) -> np.ndarray:
    """SDPA over [heads * s, d] inputs stacked by head: torch's when installed, else float64."""
    sq, skv, d = q.shape[0] // heads, k.shape[0] // heads, q.shape[1]
    qh, kh, vh = (x.reshape(heads, -1, d) for x in (q, k, v))
    try:
        import torch

        t = [torch.from_numpy(x.astype(np.float32)) for x in (qh, kh, vh)]
        o = torch.nn.functional.scaled_dot_product_attention(*t, is_causal=causal).numpy()
    except ImportError:
        s = np.einsum("hqd,hkd->hqk", qh.astype(np.float64), kh.astype(np.float64)) / math.sqrt(d)
        if causal:
            s = np.where(np.arange(skv)[None, None, :] > np.arange(sq)[None, :, None], -np.inf, s)
        e = np.exp(s - s.max(-1, keepdims=True))
        o = np.einsum("hqk,hkd->hqd", e / e.sum(-1, keepdims=True), vh.astype(np.float64))
    return o.reshape(heads * sq, d)


def inputs(heads: int, sq: int, skv: int, d: int, seed: int = 0) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((heads * sq, d)).astype(np.float16)
    k = rng.standard_normal((heads * skv, d)).astype(np.float16)
    v = rng.standard_normal((heads * skv, d)).astype(np.float16)
    return q, k, v


def run(heads: int, sq: int, skv: int, d: int, causal: bool = False, br: int = 64, bc: int = 128,
        platform: str = "a2a3sim"):  # fmt: skip
    """(max |error| vs SDPA, the run report, simulator wall seconds) of one forward pass."""
    if causal:
        br = bc = min(br, bc)
    kernel = make_attention(heads, sq, skv, d, br, bc, causal)
    q, k, v = inputs(heads, sq, skv, d)
    out = np.zeros((heads * sq, d), np.float32)
    mask = causal_mask(br, bc)
    cfg = RunConfig(platform=platform)
    kernel.compile(q, k, v, mask, out, config=cfg)
    t0 = time.perf_counter()
    kernel(q, k, v, mask, out, config=cfg)
    wall = time.perf_counter() - t0
    err = float(np.abs(out - reference(q, k, v, heads, causal)).max())
    return err, kernel.last_report, wall


def _options(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="flash_attention.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--heads", type=int, default=4, help="heads, one cluster task each (default 4)")
    ap.add_argument(
        "--seq", type=int, default=512, help="query and key length, a multiple of 128 (default 512)"
    )
    ap.add_argument("--dim", type=int, default=128, help="head dimension (default 128)")
    ap.add_argument("--causal", action="store_true", help="also run the causal variant")
    ap.add_argument("--decode", action="store_true", help="also run decode: 64 queries against 4 x seq keys")
    return ap.parse_args(argv)


if __name__ == "__main__":
    opts = _options()
    h, n, d = opts.heads, opts.seq, opts.dim
    runs = [("forward", (h, n, n, d), False)]
    runs += [("causal", (h, n, n, d), True)] if opts.causal else []
    runs += [("decode", (h, 64, 4 * n, d), False)] if opts.decode else []
    for label, shape, causal in runs:
        err, report, wall = run(*shape, causal=causal)
        print(
            f"{label} {list(shape)}: max |error| vs SDPA {err:.1e}, {report.cycles} cycles, "
            f"{wall:.2f} s to simulate"
        )
