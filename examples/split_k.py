"""Split-K: a matmul with small M/N and a long K wins by splitting the reduction across cores.

Each pl.parallel iteration is a task on its own AIC core; partial products are atomically
added into the zero-initialised output. Compared with the same tiles accumulated on one core.

    python examples/split_k.py [K] [SPLIT]
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

import pypto.language as pl
from pypto.runtime import RunConfig


def _options() -> argparse.Namespace:
    """K and SPLIT are module constants the kernels fold in, so they are read at import."""
    p = argparse.ArgumentParser(prog="split_k.py", description=__doc__.split("\n\n")[0])
    p.add_argument("k", nargs="?", type=int, default=512, help="the reduction length K (default 512)")
    p.add_argument("split", nargs="?", type=int, default=4, help="cores to split K over (default 4)")
    return p.parse_args(sys.argv[1:])


M = N = 64
_OPTS = _options()
K, SPLIT = _OPTS.k, _OPTS.split
KS = K // SPLIT


@pl.jit
def matmul_split_k(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="zero_init"):
        c = pl.assemble(c, pl.full([M, N], dtype=pl.FP32, value=0.0), [0, 0])
    for ks in pl.parallel(0, SPLIT):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="split_k"):
            k0 = ks * KS
            partial = pl.matmul(a[:, k0 : k0 + KS], b[k0 : k0 + KS, :], out_dtype=pl.FP32)
            c = pl.assemble(c, partial, [0, 0], atomic=pl.AtomicType.Add)
    return c


@pl.jit
def matmul_one_core(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    """The same K tiles, one after another in a single task."""
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="zero_init"):
        c = pl.assemble(c, pl.full([M, N], dtype=pl.FP32, value=0.0), [0, 0])
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="one_core"):
        for ks in pl.range(0, SPLIT):
            k0 = ks * KS
            partial = pl.matmul(a[:, k0 : k0 + KS], b[k0 : k0 + KS, :], out_dtype=pl.FP32)
            c = pl.assemble(c, partial, [0, 0], atomic=pl.AtomicType.Add)
    return c


def run(kernel, a, b):
    c = np.zeros((M, N), np.float32)
    kernel(a, b, c, config=RunConfig(platform="a2a3sim"))
    return c, kernel.last_report


def main() -> None:
    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, (M, K)).astype(np.float16)
    b = rng.uniform(-1, 1, (K, N)).astype(np.float16)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    split, split_rep = run(matmul_split_k, a, b)
    single, single_rep = run(matmul_one_core, a, b)
    for name, c in (("split-K", split), ("one core", single)):
        np.testing.assert_allclose(c, ref, rtol=1e-3, atol=1e-3 * np.abs(ref).max())
        print(f"{name}: OK")
    print(f"\nsplit-K (M=N={M}, K={K}, SPLIT={SPLIT}):\n{split_rep}")
    for t in split_rep.tasks:
        print(f"  {t.name:<10} on {t.core_name:<6} [{t.start}, {t.end})")
    print(f"\none core, same tiles:\n{single_rep}")
    print(f"\nsplit-K / one core = {split_rep.cycles / single_rep.cycles:.2f}")


if __name__ == "__main__":
    main()
