"""Paged decode attention with grouped queries, one fused cluster task per (sequence, KV head).

The cache is a pool of pages, each ``kv_block`` tokens of every KV head: rows
``(page * kv_heads + head) * kv_block + token`` of a [rows, head_dim] bf16 tensor, so one
head's block is one contiguous [kv_block, head_dim] window. A sequence's block table lists its
pages in order; the kernel reads each page number at run time (``pl.read``) and loads that
window.

Written at tile level: the cube computes S = Q·Kᵀ and P·V, an AIV the online softmax, and the
compiler inserts the tile pipes where a tile crosses. The query group (5 heads) is padded to 16
rows, the cube's fractal height; the padding rows are zero and never stored.
"""

from __future__ import annotations

import math

from qwen3_layer_kernels import NEG, Q_PAD, LayerShape

import pypto.language as pl


def paged_attention(s: LayerShape, name: str = "attention"):
    """out[b * heads + h, :] (bf16) = softmax(q_h · K_bᵀ / √d) · V_b for every sequence b and
    query head h, K_b / V_b the sequence's pages of h's KV head."""
    d, bs, kvh, grp, nblk = s.head_dim, s.kv_block, s.kv_heads, s.group, s.blocks_per_seq
    scale = 1.0 / math.sqrt(d)

    @pl.jit.inline
    def attention(q_pad, k_cache, v_cache, block_table, out):
        for t in pl.parallel(s.batch * kvh):
            with pl.at(level=pl.Level.CORE_GROUP, name_hint=name):
                b, g = t // kvh, t % kvh
                q_mat = pl.load(q_pad, [t * Q_PAD, 0], [Q_PAD, d], target_memory=pl.Mem.Mat)
                q_l = pl.move(q_mat, target_memory=pl.Mem.Left)
                m0 = pl.expands(pl.create_tile([Q_PAD, 1], pl.FP32), NEG)
                l0 = pl.expands(pl.create_tile([Q_PAD, 1], pl.FP32), 0.0)
                o0 = pl.expands(pl.create_tile([Q_PAD, d], pl.FP32), 0.0)
                for j, (m, row_sum, o) in pl.range(nblk, init_values=(m0, l0, o0)):
                    page = pl.cast(pl.read(block_table, [b, j]), pl.INDEX)
                    r0 = (page * kvh + g) * bs
                    k_mat = pl.load(k_cache, [r0, 0], [bs, d], target_memory=pl.Mem.Mat)
                    sc = pl.matmul(q_l, pl.move(k_mat, target_memory=pl.Mem.Right), b_trans=True)
                    sv = pl.muls(pl.move(sc, target_memory=pl.Mem.Vec), scale)
                    tmp = pl.create_tile([Q_PAD, bs], pl.FP32)
                    m_new = pl.maximum(m, pl.row_max(sv, tmp))
                    p = pl.exp(pl.row_expand_sub(sv, m_new))
                    alpha = pl.exp(pl.sub(m, m_new))
                    l_new = pl.add(pl.mul(alpha, row_sum), pl.row_sum(p, tmp))
                    p_mat = pl.move(pl.cast(p, target_type=pl.BF16, mode="round"), target_memory=pl.Mem.Mat)
                    v_mat = pl.load(v_cache, [r0, 0], [bs, d], target_memory=pl.Mem.Mat)
                    pv = pl.matmul(
                        pl.move(p_mat, target_memory=pl.Mem.Left), pl.move(v_mat, target_memory=pl.Mem.Right)
                    )
                    o_new = pl.add(pl.row_expand_mul(o, alpha), pl.move(pv, target_memory=pl.Mem.Vec))
                    m_out, l_out, o_out = pl.yield_(m_new, l_new, o_new)
                res = pl.cast(pl.row_expand_div(o_out, l_out), target_type=pl.BF16, mode="round")
                pl.store(res[0:grp, :], [b * s.heads + g * grp, 0], out)
        return out

    return attention


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(
        prog="qwen3_paged_attention.py",
        description="The paged decode attention of the Qwen3 layer (imported by qwen3_decode_layer.py, "
        "which runs it); run alone, prints the pages one sequence reads at a context.",
    )
    ap.add_argument("--context", type=int, default=256, help="tokens per sequence (default 256)")
    shape = LayerShape(context=ap.parse_args().context)
    print(f"{shape.blocks_per_seq} pages of {shape.kv_block} tokens per sequence and KV head")
