"""The kernels of one Qwen3 decoder layer in decode, as ``@pl.jit.inline`` helpers the layer's
orchestration calls (``examples/qwen3_decode_layer.py``). Each helper holds its ``pl.at`` scopes:
a call places one kernel's tasks in the layer's task graph, and the tensors it reads and writes
give the dependencies.

Tensor level where the compiler places the data (the norms, RoPE, the projections and their
epilogues); tile level for the attention, one fused cluster kernel whose cube and vector halves
hand score and probability tiles to each other through tile pipes (``docs/fused_kernels.md``).

Shapes: the batch is the GEMMs' M (16 rows, one cube fractal); activations feeding the cube are
bf16, everything accumulated or carried between layers is fp32.
"""

from __future__ import annotations

from dataclasses import dataclass

import pypto.language as pl

NEG = -1.0e30  # the running max before any key: exp(NEG - m) is exactly 0
Q_PAD = 16  # query rows per attention task: a query group padded to one cube fractal


@dataclass(frozen=True)
class LayerShape:
    """Qwen3-14B's layer at a batch and context length (context: tokens per sequence,
    the new one included, a multiple of the KV block)."""

    batch: int = 16
    context: int = 4096
    hidden: int = 5120
    heads: int = 40
    kv_heads: int = 8
    head_dim: int = 128
    intermediate: int = 17408
    kv_block: int = 128
    eps: float = 1e-6
    rope_theta: float = 1_000_000.0

    @property
    def group(self) -> int:
        """Query heads per KV head."""
        return self.heads // self.kv_heads

    @property
    def kv_hidden(self) -> int:
        return self.kv_heads * self.head_dim

    @property
    def blocks_per_seq(self) -> int:
        return self.context // self.kv_block

    @property
    def pages(self) -> int:
        """KV-cache pages in the pool: every sequence's blocks."""
        return self.batch * self.blocks_per_seq


@dataclass(frozen=True)
class Tiling:
    """The layer's tiling choices: columns of a projection's output per task (``n_block``),
    rows of weight per matmul step (``k_tile``) and the K loop's pipeline depth. 256 columns:
    the projections are bound by HBM whichever of 128, 256 or 512 (within 0.2%,
    docs/decode_layer.md); 256-byte-wide rows would be half L2 lines, and q_proj's 20 tasks
    leave k_proj's 4 their own cores."""

    n_block: int = 256
    k_tile: int = 256
    stage: int = 2


def rms_norm(s: LayerShape, name: str):
    """RMSNorm of fp32 rows [batch, hidden] into bf16, one task per row on the AIVs."""
    inv_n = 1.0 / s.hidden

    @pl.jit.inline
    def norm(x, gamma, out):
        for b in pl.parallel(s.batch):
            with pl.at(level=pl.Level.CORE_GROUP, name_hint=name):
                row = x[b : b + 1, :]
                ms = pl.adds(pl.muls(pl.row_sum(pl.mul(row, row)), inv_n), s.eps)
                normed = pl.col_expand_mul(pl.row_expand_mul(row, pl.rsqrt(ms)), gamma)
                out[b : b + 1, :] = pl.cast(normed, target_type=pl.BF16, mode="round")
        return out

    return norm


def k_walk(s: LayerShape, t: Tiling, k: int, nb: int):
    """x[batch, k] @ w[k, n0 : n0 + nb] into a kernel-local fp32 accumulator: the K walk is
    pipelined so the next weight tile loads while the cube multiplies this one."""
    tk = t.k_tile

    @pl.jit.inline
    def walk(x, w, n0):
        acc = pl.create_tensor([s.batch, nb], dtype=pl.FP32)
        for kb in pl.pipeline(k // tk, stage=t.stage):
            xa, wb = x[:, kb * tk : kb * tk + tk], w[kb * tk : kb * tk + tk, n0 : n0 + nb]
            if kb == 0:  # noqa: SIM108 - a kernel branch, not a value
                acc = pl.matmul(xa, wb, out_dtype=pl.FP32)
            else:
                acc = pl.matmul_acc(acc, xa, wb)
        return acc

    return walk


def projection(s: LayerShape, t: Tiling, k: int, n: int, name: str):
    """y[batch, n] (fp32) = x[batch, k] (bf16) @ w[k, n] (bf16): one task per ``n_block``
    columns, so each weight byte is read from HBM once (see ``k_walk``)."""
    nb = min(t.n_block, n)
    walk = k_walk(s, t, k, nb)

    @pl.jit.inline
    def proj(x, w, y):
        for j in pl.parallel(n // nb):
            with pl.at(level=pl.Level.CORE_GROUP, name_hint=name):
                n0 = j * nb
                acc = walk(x, w, n0)
                y[:, n0 : n0 + nb] = acc
        return y

    return proj


def projection_residual(s: LayerShape, t: Tiling, k: int, n: int, name: str):
    """y = res + x @ w (fp32 out): the projection with the residual add as its epilogue. The
    compiler splits each scope into a cube task and a vector task joined through GM."""
    nb = min(t.n_block, n)
    walk = k_walk(s, t, k, nb)

    @pl.jit.inline
    def proj_res(x, w, res, y):
        for j in pl.parallel(n // nb):
            with pl.at(level=pl.Level.CORE_GROUP, name_hint=name):
                n0 = j * nb
                acc = walk(x, w, n0)
                y[:, n0 : n0 + nb] = pl.add(acc, res[:, n0 : n0 + nb])
        return y

    return proj_res


def gate_up_silu(s: LayerShape, t: Tiling, name: str):
    """act = silu(x @ w_gate) * (x @ w_up) in bf16: both products of one column block in one
    task (two accumulators), the SiLU·up epilogue on the vector side."""
    nb, tk, k = t.n_block, t.k_tile, s.hidden

    @pl.jit.inline
    def gate_up(x, wg, wu, act):
        for j in pl.parallel(s.intermediate // nb):
            with pl.at(level=pl.Level.CORE_GROUP, name_hint=name):
                n0 = j * nb
                g = pl.create_tensor([s.batch, nb], dtype=pl.FP32)
                u = pl.create_tensor([s.batch, nb], dtype=pl.FP32)
                for kb in pl.pipeline(k // tk, stage=t.stage):
                    xa = x[:, kb * tk : kb * tk + tk]
                    wgb, wub = (
                        wg[kb * tk : kb * tk + tk, n0 : n0 + nb],
                        wu[kb * tk : kb * tk + tk, n0 : n0 + nb],
                    )
                    if kb == 0:
                        g = pl.matmul(xa, wgb, out_dtype=pl.FP32)
                        u = pl.matmul(xa, wub, out_dtype=pl.FP32)
                    else:
                        g = pl.matmul_acc(g, xa, wgb)
                        u = pl.matmul_acc(u, xa, wub)
                silu = pl.div(g, pl.adds(pl.exp(pl.neg(g)), 1.0))
                act[:, n0 : n0 + nb] = pl.cast(pl.mul(silu, u), target_type=pl.BF16, mode="round")
        return act

    return gate_up


@pl.jit.inline
def _inv_rms(lo, hi, inv_d, eps):
    """1 / RMS of each row of a head given as its two halves ([rows, 1])."""
    ms = pl.add(pl.row_sum(pl.mul(lo, lo)), pl.row_sum(pl.mul(hi, hi)))
    return pl.rsqrt(pl.adds(pl.muls(ms, inv_d), eps))


@pl.jit.inline
def _store_normed_rotated(lo, hi, inv, w_lo, w_hi, cos, sin, dst, r0, rows, half):
    """The halves RMS-normed (``inv``, gains ``w_*``), rotated (rotate-half RoPE) and stored as
    bf16 into rows r0.. of ``dst``."""
    n_lo = pl.col_expand_mul(pl.row_expand_mul(lo, inv), w_lo)
    n_hi = pl.col_expand_mul(pl.row_expand_mul(hi, inv), w_hi)
    r_lo = pl.sub(pl.col_expand_mul(n_lo, cos), pl.col_expand_mul(n_hi, sin))
    r_hi = pl.add(pl.col_expand_mul(n_hi, cos), pl.col_expand_mul(n_lo, sin))
    dst[r0 : r0 + rows, 0:half] = pl.cast(r_lo, target_type=pl.BF16, mode="round")
    dst[r0 : r0 + rows, half : 2 * half] = pl.cast(r_hi, target_type=pl.BF16, mode="round")


def qk_norm_rope_cache(s: LayerShape, name: str):
    """Per sequence (one AIV task each): q and k heads RMS-normed and rotated; q (bf16) into its
    attention task's padded row group, the new token's k and v (bf16) into the paged cache at
    the slot the host assigned (``slots[b]``: the row of KV head 0 in the cache)."""
    d, h = s.head_dim, s.head_dim // 2
    inv_d, eps, grp, kvh = 1.0 / s.head_dim, s.eps, s.group, s.kv_heads

    @pl.jit.inline
    def rope(q, k, v, q_w, k_w, cos, sin, slots, q_pad, k_cache, v_cache):
        for b in pl.parallel(s.batch):
            with pl.at(level=pl.Level.CORE_GROUP, name_hint=name):
                c, sn = cos[b : b + 1, :], sin[b : b + 1, :]
                for g in pl.range(kvh):
                    r0 = b * s.heads + g * grp
                    lo, hi = q[r0 : r0 + grp, 0:h], q[r0 : r0 + grp, h:d]
                    inv = _inv_rms(lo, hi, inv_d, eps)
                    _store_normed_rotated(
                        lo, hi, inv, q_w[:, 0:h], q_w[:, h:d], c, sn, q_pad, (b * kvh + g) * Q_PAD, grp, h
                    )
                slot = pl.cast(pl.read(slots, [b, 0]), pl.INDEX)
                for g in pl.range(kvh):
                    kr, row = b * kvh + g, slot + g * s.kv_block
                    lo, hi = k[kr : kr + 1, 0:h], k[kr : kr + 1, h:d]
                    inv = _inv_rms(lo, hi, inv_d, eps)
                    _store_normed_rotated(lo, hi, inv, k_w[:, 0:h], k_w[:, h:d], c, sn, k_cache, row, 1, h)
                    v_cache[row : row + 1, :] = pl.cast(v[kr : kr + 1, :], target_type=pl.BF16, mode="round")
        return q_pad

    return rope


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(
        prog="qwen3_layer_kernels.py",
        description="The Qwen3 decode layer's kernels (imported by qwen3_decode_layer.py, which runs "
        "them); run alone, prints the layer's shape at a context.",
    )
    ap.add_argument("--context", type=int, default=256, help="tokens per sequence (default 256)")
    print(LayerShape(context=ap.parse_args().context))
