"""Seeded inputs for the Qwen3 decode layer and the same layer in torch.

The weights are of magnitude about 1/sqrt(fan-in), so every activation stays of order one; the
norms' gains are near one. The KV cache holds random keys and values for the
tokens before the new one; the pages of the pool are handed to the sequences in a shuffled
order, as a serving engine's allocator would after some churn.
"""

from __future__ import annotations

import numpy as np
from qwen3_layer_kernels import LayerShape

try:
    from ml_dtypes import bfloat16
except ImportError:  # torch's bf16 is not a numpy dtype; pypto needs ml_dtypes for bf16 arrays
    bfloat16 = None


def _random_bf16(rng: np.random.Generator, shape: tuple[int, int], top: int) -> np.ndarray:
    """bf16 values of random sign and mantissa whose exponent is drawn from the four binades
    below 2**top: random bits straight into bf16, ten times faster than drawing normals (the
    layer's weights are 330 M values)."""
    bits = rng.integers(0, 1 << 16, shape, dtype=np.uint16)
    exp = bits >> 7  # two random bits (7 and 8) pick the binade; the field is then rewritten
    exp &= 3
    np.subtract(np.uint16(126 + top), exp, out=exp)
    exp <<= 7
    bits &= 0x807F  # sign and mantissa
    bits |= exp
    return bits.view(bfloat16)


def _weight(rng: np.random.Generator, k: int, n: int) -> np.ndarray:
    """A [k, n] weight of magnitude about 1/sqrt(k): each output sums k products of order one."""
    return _random_bf16(rng, (k, n), int(np.ceil(-0.5 * np.log2(k))) + 1)


def _rope_tables(s: LayerShape, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """cos and sin [batch, head_dim / 2] of each sequence's position (rotate-half RoPE)."""
    inv_freq = s.rope_theta ** (-np.arange(0, s.head_dim, 2, dtype=np.float64) / s.head_dim)
    angle = positions[:, None].astype(np.float64) * inv_freq[None, :]
    return np.cos(angle).astype(np.float32), np.sin(angle).astype(np.float32)


def layer_inputs(s: LayerShape, seed: int = 0) -> dict[str, np.ndarray]:
    """Every argument of the layer program, in its order (``out`` last, zeroed)."""
    rng = np.random.default_rng(seed)
    hid, kvh, d = s.hidden, s.kv_hidden, s.head_dim
    gain = lambda n: (1.0 + 0.1 * rng.standard_normal((1, n))).astype(np.float32)  # noqa: E731
    block_table = rng.permutation(s.pages).astype(np.int32).reshape(s.batch, s.blocks_per_seq)
    pos = s.context - 1  # the new token's position
    slots = (block_table[:, pos // s.kv_block] * s.kv_heads * s.kv_block + pos % s.kv_block).astype(np.int32)
    cos, sin = _rope_tables(s, np.full(s.batch, pos))
    rows = s.pages * s.kv_heads * s.kv_block
    args = {"x": rng.standard_normal((s.batch, hid), dtype=np.float32), "w_in": gain(hid)}
    args |= {"wq": _weight(rng, hid, hid), "wk": _weight(rng, hid, kvh), "wv": _weight(rng, hid, kvh)}
    args |= {"q_w": gain(d), "k_w": gain(d), "cos": cos, "sin": sin, "slots": slots[:, None].copy()}
    args |= {"block_table": block_table}
    args["k_cache"], args["v_cache"] = _random_bf16(rng, (rows, d), 1), _random_bf16(rng, (rows, d), 1)
    args |= {"wo": _weight(rng, hid, hid), "w_post": gain(hid)}
    args |= {"wg": _weight(rng, hid, s.intermediate), "wu": _weight(rng, hid, s.intermediate)}
    args |= {"wd": _weight(rng, s.intermediate, hid), "out": np.zeros((s.batch, hid), np.float32)}
    return args


def _t(a: np.ndarray):
    """A torch view of a numpy array; bf16 arrays are reinterpreted through int16."""
    import torch

    if a.dtype == bfloat16:
        return torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(a)


def _bf16(x):
    """Rounds an fp32 tensor to bf16 and back, where the kernels store bf16."""
    import torch

    return x.to(torch.bfloat16).float()


def _mm(x, w: np.ndarray):
    return x @ _t(w).float()  # fp32 products of the bf16 weight, summed in fp32


def _rms(x, gain, eps):
    import torch

    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * gain


def _rope(x, cos, sin):
    import torch

    lo, hi = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2 :]
    return torch.cat([lo * cos - hi * sin, hi * cos + lo * sin], dim=-1)


def _attention(s: LayerShape, args: dict, q, k_new, v_new):
    """Paged GQA attention of each sequence over its pages, with the new token's k and v."""
    import torch

    d, kvh, bs = s.head_dim, s.kv_heads, s.kv_block
    out = torch.empty(s.batch, s.heads, d)
    pos = s.context - 1
    for b in range(s.batch):
        pages = torch.from_numpy(args["block_table"][b]).long()
        kb, vb = (_t(args[c]).float().view(s.pages, kvh, bs, d)[pages] for c in ("k_cache", "v_cache"))
        kb[pos // bs, :, pos % bs], vb[pos // bs, :, pos % bs] = k_new[b], v_new[b]  # gathered copies
        kb, vb = (c.permute(1, 0, 2, 3).reshape(kvh, s.context, d) for c in (kb, vb))
        qb = q[b].view(kvh, s.group, d)
        out[b] = torch.nn.functional.scaled_dot_product_attention(qb, kb, vb).reshape(s.heads, d)
    return _bf16(out).reshape(s.batch, s.hidden)


def reference(s: LayerShape, args: dict[str, np.ndarray]) -> np.ndarray:
    """The layer's output [batch, hidden] (fp32) in torch, from ``layer_inputs``' arrays."""
    import torch

    with torch.no_grad():
        x, d = _t(args["x"]), s.head_dim
        cos, sin = _t(args["cos"])[:, None, :], _t(args["sin"])[:, None, :]
        xn = _bf16(_rms(x, _t(args["w_in"]), s.eps))
        q = _mm(xn, args["wq"]).view(s.batch, s.heads, d)
        k = _mm(xn, args["wk"]).view(s.batch, s.kv_heads, d)
        v = _bf16(_mm(xn, args["wv"]).view(s.batch, s.kv_heads, d))
        q = _bf16(_rope(_rms(q, _t(args["q_w"]), s.eps), cos, sin))
        k = _bf16(_rope(_rms(k, _t(args["k_w"]), s.eps), cos, sin))
        h1 = x + _mm(_attention(s, args, q, k, v), args["wo"])
        hn = _bf16(_rms(h1, _t(args["w_post"]), s.eps))
        g, u = _mm(hn, args["wg"]), _mm(hn, args["wu"])
        act = _bf16(torch.nn.functional.silu(g) * u)
        return (h1 + _mm(act, args["wd"])).numpy()


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(
        prog="qwen3_reference.py",
        description="Seeded inputs and the torch reference of the Qwen3 decode layer (imported by "
        "qwen3_decode_layer.py); run alone, prints the inputs' shapes and bytes at a context.",
    )
    ap.add_argument("--context", type=int, default=256, help="tokens per sequence (default 256)")
    for key, value in layer_inputs(LayerShape(context=ap.parse_args().context)).items():
        print(f"{key:14} {getattr(value, 'shape', value)!s:18} {getattr(value, 'nbytes', 0):>12,} bytes")
