"""What several benchmarks share: best-of timing and the tutorial's exp kernel."""

from __future__ import annotations

import time

import pypto.language as pl

NT, TR, TC = 8, 64, 128  # the tutorial kernel's input: NT row tiles of [TR, TC] fp32


def best_of(fn, n: int, *args) -> float:
    """The shortest of ``n`` timed calls of ``fn(*args)``, in seconds."""
    best = float("inf")
    for _ in range(n):
        t0 = time.perf_counter()
        fn(*args)
        best = min(best, time.perf_counter() - t0)
    return best


def seed_kernel(tiles: int = NT):
    """The tutorial's single_buffer kernel (exp, one row tile at a time) over ``tiles`` tiles; a
    new object on each call, so nothing is cached in-process."""

    @pl.jit
    def single_buffer(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            for i in pl.range(tiles):
                tile = pl.load(a, [i * TR, 0], [TR, TC])
                pl.store(pl.exp(tile), [i * TR, 0], out)
        return out

    return single_buffer
