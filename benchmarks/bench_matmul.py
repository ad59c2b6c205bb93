"""Cube benchmarks: how fast the simulator computes matmuls (functional speed, wall time),
against numpy and torch on the same shapes and dtypes.

Run: python benchmarks/bench_matmul.py [--quick]      (prints tables; never asserts on time)
Targets: fp16/bf16 matmuls (computed through an fp32 path) >= 50x faster than numpy's native
fp16 matmul on the same shapes; the 24-core fp16 GEMM of 1536^3 (tests/fixtures/gemm_kernels.py)
simulates in <= 2 x the time of torch's CPU matmul of the same shape and dtype, in the same
process (same bits as ever: fixed k order, no FMA contraction). ``--quick`` times numpy's fp16 GEMM at
768^3 and scales it by 8 instead of waiting ~30 s for the real one.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # torch's idle threads would spin on our cores
os.environ.setdefault("PYPTO_CACHE_DIR", tempfile.mkdtemp(prefix="pypto-bench-"))

import ml_dtypes  # noqa: E402
import numpy as np  # noqa: E402

try:
    import torch  # noqa: E402
except ImportError:  # the reference falls back to numpy's fp32 matmul (said in the output)
    torch = None

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "fixtures"))
import gemm_kernels as gk  # noqa: E402
from _common import best_of  # noqa: E402

import pypto.language as pl  # noqa: E402

M, K, N = 128, 128, 128  # one L0-sized tile matmul: fp32 A fills L0A (64 KiB)
DTYPES = {"fp32": (np.float32, "float32"), "fp16": (np.float16, "float16"),
          "bf16": (ml_dtypes.bfloat16, "bfloat16")}  # fmt: skip
REFERENCE = "torch" if torch is not None else "numpy fp32 (torch not installed)"


@pl.jit
def tile_matmul(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        la = pl.move(pl.load(a, [0, 0], [M, K], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
        rb = pl.move(pl.load(b, [0, 0], [K, N], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
        pl.store(pl.matmul(la, rb), [0, 0], c)
    return c


def operands(m: int, k: int, n: int, dtype) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    return rng.uniform(-1, 1, (m, k)).astype(dtype), rng.uniform(-1, 1, (k, n)).astype(dtype)


def torch_matmul(a: np.ndarray, b: np.ndarray, dtype: str) -> float:
    """torch's CPU matmul of the same shape and dtype; without torch, numpy's fp32 matmul."""
    if torch is None:
        return best_of(np.matmul, 5, a.astype(np.float32), b.astype(np.float32))
    ta, tb = (torch.from_numpy(x.astype(np.float32)).to(getattr(torch, dtype)) for x in (a, b))
    return best_of(torch.matmul, 5, ta, tb)


def tile_rows() -> None:
    native16 = best_of(np.matmul, 5, *operands(M, K, N, np.float16))
    print(f"tile matmul [{M}, {K}] x [{K}, {N}] on one core (pypto: a whole run, traced off)")
    print(f"numpy's native fp16 matmul: {native16 * 1e3:.2f} ms")
    print(
        f"{'dtype':<6}{'pypto ms':>10}{'numpy ms':>10}{'torch ms':>10}{'vs numpy fp16':>15}  (target >= 50x)"
    )  # noqa: E501
    for name, (np_dtype, torch_dtype) in DTYPES.items():
        a, b = operands(M, K, N, np_dtype)
        c = np.zeros((M, N), np.float32)
        ours = best_of(tile_matmul.compile(a, b, c).run, 20, a, b, c)
        same, theirs = best_of(np.matmul, 5, a, b), torch_matmul(a, b, torch_dtype)
        print(
            f"{name:<6}{ours * 1e3:>10.3f}{same * 1e3:>10.3f}{theirs * 1e3:>10.3f}{native16 / ours:>14.1f}x"
        )  # noqa: E501


def numpy_fp16_gemm(quick: bool) -> tuple[float, str]:
    if not quick:
        return best_of(np.matmul, 1, *operands(gk.S, gk.S, gk.S, np.float16)), "measured"
    half = gk.S // 2
    return best_of(np.matmul, 1, *operands(half, half, half, np.float16)) * 8, f"{half}^3 x 8"


def gemm_rows(quick: bool) -> None:
    tasks = (gk.S // gk.BM) * gk.BLOCKS_N
    print(f"\n{gk.S}^3 GEMM, {tasks} tasks on the AIC cores (target: fp16 run <= 2x the reference matmul)")
    print(f"reference: {REFERENCE}")
    print(f"{'dtype':<6}{'compile s':>10}{'run s':>8}{'cycles':>10}{'torch s':>9}{'pypto/torch':>13}")
    runs = {}
    for name, (np_dtype, torch_dtype) in DTYPES.items():
        a, b = operands(gk.S, gk.S, gk.S, np_dtype)
        c = np.zeros((gk.S, gk.S), np.float32)
        t0 = time.perf_counter()
        compiled = gk.gemm.compile(a, b, c)
        build = time.perf_counter() - t0
        runs[name] = best_of(compiled.run, 3, a, b, c)
        cycles = compiled.run(a, b, c).cycles
        theirs = torch_matmul(a, b, torch_dtype)
        target = "   target <= 2.0" if name == "fp16" else ""
        ratio = runs[name] / theirs
        print(f"{name:<6}{build:>10.2f}{runs[name]:>8.2f}{cycles:>10}{theirs:>9.3f}{ratio:>13.2f}{target}")
    ref, how = numpy_fp16_gemm(quick)
    print(f"numpy native fp16 GEMM: {ref:.1f} s ({how}); pypto fp16 is {ref / runs['fp16']:.0f}x faster")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="estimate numpy's fp16 GEMM from a quarter size")
    args = parser.parse_args()
    tile_rows()
    gemm_rows(args.quick)


if __name__ == "__main__":
    main()
