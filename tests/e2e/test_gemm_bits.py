"""The functional GEMM's bits are fixed: each output is the fp32 sum of rounded fp32 products
in k order within every L0 chunk of K, and the chunks are added to the accumulator in order —
whatever blocking or layout shortcuts the simulator takes to get there."""

from __future__ import annotations

import gemm_kernels as gk
import numpy as np

KT = 256  # the K chunk the lowering puts on L0A/L0B for this GEMM (fp16, 128-row tiles)


def k_order_chunks(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    out = None
    for k0 in range(0, a.shape[1], KT):
        part = np.zeros((a.shape[0], b.shape[1]), np.float32)
        for kk in range(k0, k0 + KT):
            part += np.outer(a[:, kk], b[kk])  # product rounded to fp32, then one fp32 add
        out = part if out is None else out + part
    return out


def test_gemm_tiles_have_the_k_order_bits():
    rng = np.random.default_rng(7)
    a = rng.uniform(-1, 1, (gk.S, gk.S)).astype(np.float16)
    b = rng.uniform(-1, 1, (gk.S, gk.S)).astype(np.float16)
    c = np.zeros((gk.S, gk.S), np.float32)
    gk.gemm(a, b, c)
    a32, b32 = a.astype(np.float32), b.astype(np.float32)
    for r, q in ((0, 0), (gk.S - gk.T, gk.S - gk.T), (gk.BM + gk.T, gk.BN)):
        want = k_order_chunks(a32[r : r + gk.T], b32[:, q : q + gk.T])
        np.testing.assert_array_equal(c[r : r + gk.T, q : q + gk.T], want)
