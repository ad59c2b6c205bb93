"""One decode step of one Qwen3-14B decoder layer at real size, on the whole simulated chip.

Batch 16, 256 tokens of context per sequence (``--context 4096`` for the long one), hidden 5120, 40
query heads and 8 KV heads of dim 128, intermediate 17408; bf16 weights and KV cache, fp32
accumulation and residual. The layer, in task order:

    input RMSNorm -> Q / K / V projections -> per-head q/k RMSNorm + RoPE + KV-cache write
    -> paged attention (block table, block 128, online softmax) -> output projection + residual
    -> post-attention RMSNorm -> gate/up projections with SiLU·up -> down projection + residual

Projections are multi-core GEMMs of the [16, K] activation against [K, N] weights, one task per
column block, so every weight byte streams from HBM once; the attention is one cluster task per
(sequence, KV head); the norms and RoPE run on the AIVs. Each kernel's tasks wait only for the
tasks that wrote what they read, so the three QKV projections run side by side and a kernel's
vector epilogue overlaps the next column block's matmuls.

Weights and cache come from a seeded generator; ``reference`` is the same layer in torch (fp32
math on the same bf16 inputs, rounding to bf16 where the kernels do).

    python examples/qwen3_decode_layer.py                  # context 256 (quick): check, report
    python examples/qwen3_decode_layer.py --context 4096   # the long context
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import qwen3_layer_kernels as kn  # noqa: E402
from qwen3_layer_kernels import LayerShape, Tiling  # noqa: E402
from qwen3_paged_attention import paged_attention  # noqa: E402
from qwen3_reference import layer_inputs, reference  # noqa: E402

import pypto.language as pl  # noqa: E402
from pypto.runtime import RunConfig  # noqa: E402

# Relative to the largest |update| the layer adds to its input: bf16 rounds at 2^-9, and where
# kernel and torch sum in another order a value can round to the neighbouring bf16 (2^-8).
TOLERANCE = 1e-2
REAL_SIZE, TILING = LayerShape(), Tiling()


def make_layer(s: LayerShape = REAL_SIZE, t: Tiling = TILING):
    """The layer as one ``@pl.jit`` program; its arguments are ``layer_inputs``' in order."""
    b, hid, kvh, inter = s.batch, s.hidden, s.kv_hidden, s.intermediate
    rms_in, rms_post = kn.rms_norm(s, "input_norm"), kn.rms_norm(s, "post_norm")
    q_proj, k_proj = kn.projection(s, t, hid, hid, "q_proj"), kn.projection(s, t, hid, kvh, "k_proj")
    v_proj, rope = kn.projection(s, t, hid, kvh, "v_proj"), kn.qk_norm_rope_cache(s, "qk_norm_rope")
    attention, gate_up = paged_attention(s), kn.gate_up_silu(s, t, "gate_up_silu")
    o_proj = kn.projection_residual(s, t, hid, hid, "o_proj")
    down = kn.projection_residual(s, t, inter, hid, "down_proj")

    @pl.jit
    def decode_layer(
        x: pl.Tensor, w_in: pl.Tensor, wq: pl.Tensor, wk: pl.Tensor, wv: pl.Tensor, q_w: pl.Tensor,
        k_w: pl.Tensor, cos: pl.Tensor, sin: pl.Tensor, slots: pl.Tensor, block_table: pl.Tensor,
        k_cache: pl.InOut[pl.Tensor], v_cache: pl.InOut[pl.Tensor], wo: pl.Tensor, w_post: pl.Tensor,
        wg: pl.Tensor, wu: pl.Tensor, wd: pl.Tensor, out: pl.Out[pl.Tensor],
    ):  # fmt: skip
        xn = rms_in(x, w_in, pl.create_tensor([b, hid], dtype=pl.BF16))
        q = q_proj(xn, wq, pl.create_tensor([b, hid], dtype=pl.FP32))
        k = k_proj(xn, wk, pl.create_tensor([b, kvh], dtype=pl.FP32))
        v = v_proj(xn, wv, pl.create_tensor([b, kvh], dtype=pl.FP32))
        q_pad = pl.create_tensor([b * s.kv_heads * kn.Q_PAD, s.head_dim], dtype=pl.BF16, init_value=0.0)
        q_heads, k_heads = (
            pl.reshape(q, [b * s.heads, s.head_dim]),
            pl.reshape(k, [b * s.kv_heads, s.head_dim]),
        )
        v_heads = pl.reshape(v, [b * s.kv_heads, s.head_dim])
        q_pad = rope(
            q_heads, k_heads, v_heads, q_w, k_w, cos, sin, slots, q_pad, k_cache, v_cache
        )  # + the caches
        attn = pl.create_tensor([b * s.heads, s.head_dim], dtype=pl.BF16)
        attn = attention(q_pad, k_cache, v_cache, block_table, attn)
        h1 = o_proj(pl.reshape(attn, [b, hid]), wo, x, pl.create_tensor([b, hid], dtype=pl.FP32))
        hn = rms_post(h1, w_post, pl.create_tensor([b, hid], dtype=pl.BF16))
        act = gate_up(hn, wg, wu, pl.create_tensor([b, inter], dtype=pl.BF16))
        out = down(act, wd, h1, out)
        return out

    return decode_layer


def run(
    s: LayerShape = REAL_SIZE, t: Tiling = TILING, args: dict | None = None, config: RunConfig | None = None
):
    """Runs the layer once on ``args`` (default: ``layer_inputs(s)``): (output, the run report,
    simulator wall seconds, the inputs after the run — the cache holds the new token)."""
    args = layer_inputs(s) if args is None else args
    kernel = make_layer(s, t)
    cfg = config or RunConfig(platform="a2a3sim")
    kernel.compile(*args.values(), config=cfg)
    t0 = time.perf_counter()
    kernel(*args.values(), config=cfg)
    return args["out"], kernel.last_report, time.perf_counter() - t0, args


def sweep_n_block(s: LayerShape, blocks: tuple[int, ...] = (128, 256, 512), args: dict | None = None):
    """``pypto.tune.sweep`` over the projections' column block (``Tiling.n_block``): the makespan
    of the whole layer per choice. In this process, one point at a time: each holds the layer's
    weights and a copy of its cache."""
    from pypto.tune import sweep

    def layer_with(n_block: int):
        return make_layer(s, Tiling(n_block=n_block))

    args = layer_inputs(s) if args is None else args
    return sweep(
        layer_with, {"n_block": list(blocks)}, tuple(args.values()), executor="serial", progress=False
    )


def layer_bytes(s: LayerShape) -> int:
    """The bytes one decode step must move at least: every weight once, every sequence's K and V
    (bf16), the new token's k and v written, the fp32 input read and output written."""
    hid, kvh = s.hidden, s.kv_hidden
    weights = hid * (2 * hid + 2 * kvh) + 3 * hid * s.intermediate
    cache = 2 * s.batch * s.context * kvh
    return 2 * (weights + cache + 2 * s.batch * kvh) + 4 * 2 * s.batch * hid


def roofline_line(s: LayerShape, report) -> str:
    """The makespan against the layer's compulsory bytes at the chip's achievable HBM bandwidth."""
    from pypto import platforms

    plat = platforms.get(report.platform)
    need = layer_bytes(s) / (plat.hbm_bytes_per_cycle * plat.hbm_efficiency)
    return (
        f"layer bytes {layer_bytes(s) / 1e6:.1f} MB -> HBM roofline {need:.0f} cycles; "
        f"makespan {report.cycles} cycles = {report.cycles / need:.2f} x the roofline"
    )


def error(out: np.ndarray, ref: np.ndarray, x: np.ndarray) -> float:
    """max |out - ref| over the largest |ref - x|: the error on what the layer adds."""
    return float(np.abs(out - ref).max() / np.abs(ref - x).max())


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--context", type=int, default=256, help="tokens per sequence, a multiple of 128 (default 256)"
    )
    ap.add_argument("--n-block", type=int, default=Tiling().n_block, help="projection columns per task")
    ap.add_argument("--json", help="write the run report (with the kernel table) here")
    a = ap.parse_args(argv)
    s, t = LayerShape(context=a.context), Tiling(n_block=a.n_block)
    out, report, wall, args = run(s, t)
    err = error(out, reference(s, args), args["x"])
    print(f"Qwen3-14B decode layer, batch {s.batch}, context {s.context}: error vs torch {err:.1e}")
    print(report)
    print(roofline_line(s, report))
    print(f"simulated in {wall:.1f} s")
    if a.json:
        report.save(a.json)
    assert err <= TOLERANCE, err


if __name__ == "__main__":
    main()
