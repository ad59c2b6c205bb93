"""A 24-core fp16 -> fp32 GEMM the way Ascend kernels are tuned: C = A @ B.

Each AIC core computes [128, 256] blocks of C. Per block it walks K in L1 loads of
[128, 256] of A and [256, 256] of B (four K-blocks of 64 cached per load) and feeds the cube
from slices of those L1 tiles — ``pl.move(a_l1[:, k:k + 64], target_memory=pl.Mem.Left)`` is
the L1 -> L0 extract on MTE1 — so one matmul is the [128, 256, 64] base block. Both loops
are ``pl.pipeline(stage=2)``: the L1 tiles and the L0 tiles are double-buffered, so the next
loads overlap the current matmuls. The accumulator stays in L0C for the whole K walk and is
stored once through FIXPIPE. ``make_gemm_peeled`` is the same GEMM with the first K block
peeled out of the loops; benchmarks/bench_gemm.py runs both forms.

Run: python examples/gemm.py [sizes...]      (default: 768; 1536 3072 for the full sizes)
"""

from __future__ import annotations

import argparse
import math

import numpy as np

import pypto.language as pl
from pypto import platforms

BM, BN, BK = 128, 256, 64  # the base block: one matmul is [BM, BK] x [BK, BN]
K_PER_LOAD = 4  # K-blocks cached in L1 per load
KL1 = K_PER_LOAD * BK
CORES = 24  # AIC cores of a2a3


def split(m: int, n: int, k: int) -> tuple[int, int, int, int]:
    """(C blocks per row of blocks, cores, blocks per core, L1 loads along K) for C[m, n]."""
    if m % BM or n % BN or k % KL1:
        raise ValueError(f"sizes must be multiples of [{BM}, {BN}] and K of {KL1}, got {m}x{n}x{k}")
    blocks_n = n // BN
    blocks = (m // BM) * blocks_n
    cores = min(CORES, blocks)
    while blocks % cores:  # an equal share of blocks per core
        cores -= 1
    return blocks_n, cores, blocks // cores, k // KL1


def make_gemm(m: int, n: int, k: int):
    """The GEMM kernel for C[m, n] = A[m, k] @ B[k, n] (block multiples only)."""
    blocks_n, cores, per_core, k_loads = split(m, n, k)

    @pl.jit
    def gemm(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
        for core in pl.parallel(0, cores):
            with pl.at(level=pl.Level.CORE_GROUP, name_hint="gemm_blocks"):
                for j in pl.range(per_core):
                    blk = core * per_core + j
                    m0 = (blk // blocks_n) * BM
                    n0 = (blk % blocks_n) * BN
                    acc = pl.create_tile([BM, BN], pl.FP32, target_memory=pl.Mem.Acc)
                    for ko in pl.pipeline(k_loads, stage=2):
                        a_l1 = pl.load(a, [m0, ko * KL1], [BM, KL1], target_memory=pl.Mem.Mat)
                        b_l1 = pl.load(b, [ko * KL1, n0], [KL1, BN], target_memory=pl.Mem.Mat)
                        for ki in pl.pipeline(K_PER_LOAD, stage=2):
                            k0 = ki * BK
                            a_l0 = pl.move(a_l1[:, k0 : k0 + BK], target_memory=pl.Mem.Left)
                            b_l0 = pl.move(b_l1[k0 : k0 + BK, :], target_memory=pl.Mem.Right)
                            if ko + ki == 0:  # noqa: SIM108 - a kernel branch, not a value
                                acc = pl.matmul(a_l0, b_l0)
                            else:
                                acc = pl.matmul_acc(acc, a_l0, b_l0)
                    pl.store(acc, [m0, n0], c)
        return c

    return gemm


def make_gemm_peeled(m: int, n: int, k: int):
    """The same GEMM with the first K block peeled out of the pipelined loops: one ``matmul``
    starts the accumulator before them, and inside them every step is ``matmul_acc``. Same
    blocks, same loads, same matmuls as ``make_gemm``; only the form differs."""
    blocks_n, cores, per_core, k_loads = split(m, n, k)

    @pl.jit
    def gemm_peeled(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
        for core in pl.parallel(0, cores):
            with pl.at(level=pl.Level.CORE_GROUP, name_hint="gemm_blocks"):
                for j in pl.range(per_core):
                    blk = core * per_core + j
                    m0 = (blk // blocks_n) * BM
                    n0 = (blk % blocks_n) * BN
                    a_first = pl.load(a, [m0, 0], [BM, KL1], target_memory=pl.Mem.Mat)
                    b_first = pl.load(b, [0, n0], [KL1, BN], target_memory=pl.Mem.Mat)
                    a_f0 = pl.move(a_first[:, 0:BK], target_memory=pl.Mem.Left)
                    b_f0 = pl.move(b_first[0:BK, :], target_memory=pl.Mem.Right)
                    acc = pl.matmul(a_f0, b_f0)
                    for kf in pl.pipeline(1, K_PER_LOAD, stage=2):
                        k0 = kf * BK
                        a_f = pl.move(a_first[:, k0 : k0 + BK], target_memory=pl.Mem.Left)
                        b_f = pl.move(b_first[k0 : k0 + BK, :], target_memory=pl.Mem.Right)
                        acc = pl.matmul_acc(acc, a_f, b_f)
                    for ko in pl.pipeline(1, k_loads, stage=2):
                        a_l1 = pl.load(a, [m0, ko * KL1], [BM, KL1], target_memory=pl.Mem.Mat)
                        b_l1 = pl.load(b, [ko * KL1, n0], [KL1, BN], target_memory=pl.Mem.Mat)
                        for ki in pl.pipeline(K_PER_LOAD, stage=2):
                            k0 = ki * BK
                            a_l0 = pl.move(a_l1[:, k0 : k0 + BK], target_memory=pl.Mem.Left)
                            b_l0 = pl.move(b_l1[k0 : k0 + BK, :], target_memory=pl.Mem.Right)
                            acc = pl.matmul_acc(acc, a_l0, b_l0)
                    pl.store(acc, [m0, n0], c)
        return c

    return gemm_peeled


def k_block_cycles() -> int:
    """One L1 K block's latency on a2a3, from the platform table: its two GM -> L1 loads (lead
    and bytes at the GM -> L1 bandwidth), the first L1 -> L0 feed of its A and B slices, and its
    K_PER_LOAD matmuls of [BM, BK] x [BK, BN] fp16 (k0 = 16)."""
    p = platforms.get("a2a3sim")
    loads = 2 * p.transfer_setup_cycles + 2 * (BM * KL1 + KL1 * BN) / p.bw_gm_to_l1
    feed = 2 * BM * BK / p.bw_l1_to_l0a + 2 * BK * BN / p.bw_l1_to_l0b
    fractals = math.ceil(BM / 16) * math.ceil(BK / 16) * math.ceil(BN / 16)
    matmuls = K_PER_LOAD * (p.cube_base_cycles + p.cube_cpr_16bit * fractals)
    return math.ceil(loads + feed + matmuls)


def reference(a: np.ndarray, b: np.ndarray):
    """A @ B in fp32 by torch (numpy when torch is not installed), and the library's name."""
    try:
        import torch
    except ImportError:
        return a.astype(np.float32) @ b.astype(np.float32), "numpy"
    return (torch.from_numpy(a).float() @ torch.from_numpy(b).float()).numpy(), "torch"


def run(size: int, seed: int = 0):
    """Runs the size^3 GEMM; returns (C, the fp32 reference, its library, the run report)."""
    rng = np.random.default_rng(seed)
    a = rng.uniform(-1, 1, (size, size)).astype(np.float16)
    b = rng.uniform(-1, 1, (size, size)).astype(np.float16)
    c = np.zeros((size, size), np.float32)
    kernel = make_gemm(size, size, size)
    kernel(a, b, c)
    ref, lib = reference(a, b)
    return c, ref, lib, kernel.last_report


def relative_error(c: np.ndarray, ref: np.ndarray) -> float:
    return float(np.abs(c - ref).max() / np.abs(ref).max())


def main(sizes: list[int]) -> None:
    for size in sizes:
        c, ref, lib, report = run(size)
        err = relative_error(c, ref)
        print(
            f"GEMM {size}^3 fp16 -> fp32 on {len(report.tasks)} AIC cores: relative error vs {lib} {err:.2e}"
        )
        print(report)
        assert err <= 1e-3, err


def _options(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="gemm.py", description=__doc__.split("\n\n")[0])
    p.add_argument(
        "sizes", nargs="*", type=int, default=[768],
        help=f"square sizes to run, multiples of {BN} (and of {KL1} for K); default 768",
    )  # fmt: skip
    return p.parse_args(argv)


if __name__ == "__main__":
    main(_options().sizes)
