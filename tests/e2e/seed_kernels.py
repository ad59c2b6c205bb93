"""The seed document's kernels, verbatim (shared by the e2e tests; not a test module)."""

import pypto.language as pl

NT, TR, TC = 8, 64, 128  # tiles in the loop, tile rows, tile cols
ROWS = NT * TR


@pl.jit
def single_buffer(a: pl.Tensor, out: pl.Out[pl.Tensor]):  # the baseline
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(NT):
            tile = pl.load(a, [i * TR, 0], [TR, TC])
            pl.store(pl.exp(tile), [i * TR, 0], out)
    return out


@pl.jit
def tile_add(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        x = pl.load(a, [0, 0], [128, 128])
        y = pl.load(b, [0, 0], [128, 128])
        pl.store(pl.add(x, y), [0, 0], c)
    return c


@pl.jit
def big_add(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):  # 3 x 128 KiB tiles: too big for Vec
    with pl.at(level=pl.Level.CORE_GROUP):
        x = pl.load(a, [0, 0], [256, 128])
        y = pl.load(b, [0, 0], [256, 128])
        pl.store(pl.add(x, y), [0, 0], c)
    return c
