"""A scope that mixes a matmul with a vector epilogue: refused at compile time."""

import pypto.language as pl


@pl.jit
def matmul_relu(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        acc = pl.matmul(
            pl.move(pl.load(a, [0, 0], [64, 128], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left),
            pl.move(pl.load(b, [0, 0], [128, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right),
        )
        pl.store(acc, [0, 0], c)
        x = pl.load(c, [0, 0], [64, 64])
        pl.store(pl.relu(x), [0, 0], c)
    return c
