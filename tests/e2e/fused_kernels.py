"""A matmul with a vector epilogue (bias add, relu) written two ways: one mixed `pl.at` scope
the compiler turns into a cluster kernel (the product crosses to the AIVs through a tile
pipe), and the same work as two tasks joined through a GM intermediate."""

import pypto.language as pl

M, K, N = 128, 128, 128
BLOCKS = 4


@pl.jit
def fused(a: pl.Tensor, b: pl.Tensor, bias: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="fused"):
        for i in pl.range(BLOCKS):
            acc = pl.matmul(
                pl.move(pl.load(a, [i * M, 0], [M, K], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left),
                pl.move(pl.load(b, [0, 0], [K, N], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right),
            )
            x = pl.move(acc, target_memory=pl.Mem.Vec)  # crosses cores: a push, a pop, a free
            pl.store(pl.relu(pl.add(x, pl.load(bias, [i * M, 0], [M, N]))), [i * M, 0], c)
    return c


@pl.jit.inline
def block_product(a, b, i):
    """Row block ``i`` of a x b on the cube, moved to the vector cores."""
    acc = pl.matmul(
        pl.move(pl.load(a, [i * M, 0], [M, K], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left),
        pl.move(pl.load(b, [0, 0], [K, N], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right),
    )
    return pl.move(acc, target_memory=pl.Mem.Vec)


def split_epilogue(mode: pl.SplitMode):
    """``fused`` with each block's epilogue split between the two AIVs by ``mode``."""

    @pl.jit
    def fused_split(a: pl.Tensor, b: pl.Tensor, bias: pl.Tensor, c: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(mode)]):
            for i in pl.range(BLOCKS):
                x = block_product(a, b, i)
                pl.store(pl.relu(pl.add(x, pl.load(bias, [i * M, 0], [M, N]))), [i * M, 0], c)
        return c

    return fused_split


def deep_ring(slots: int):
    """``fused`` with its pipe's ring ``slots`` deep (``pl.cross_core_slot``)."""

    @pl.jit
    def fused_ring(a: pl.Tensor, b: pl.Tensor, bias: pl.Tensor, c: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.cross_core_slot(slot_num=slots)]):
            for i in pl.range(BLOCKS):
                x = block_product(a, b, i)
                pl.store(pl.relu(pl.add(x, pl.load(bias, [i * M, 0], [M, N]))), [i * M, 0], c)
        return c

    return fused_ring


fused_up_down = split_epilogue(pl.SplitMode.UP_DOWN)


@pl.jit
def fused_twice(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    """``fused_up_down``'s product launched twice, one launch after the other, each adding
    into ``c`` (no bias, no relu)."""
    for _r in pl.range(2):
        with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(pl.SplitMode.UP_DOWN)]):
            for i in pl.range(BLOCKS):
                pl.store(pl.add(block_product(a, b, i), pl.load(c, [i * M, 0], [M, N])), [i * M, 0], c)
    return c


fused_left_right = split_epilogue(pl.SplitMode.LEFT_RIGHT)


@pl.jit
def through_gm(a: pl.Tensor, b: pl.Tensor, bias: pl.Tensor, c: pl.Out[pl.Tensor]):
    """The same work as two tasks: the AIC writes the products to GM, the AIV reads them back."""
    h = pl.create_tensor([BLOCKS * M, N], dtype=pl.FP32)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="products") as cube:
        for i in pl.range(BLOCKS):
            acc = pl.matmul(
                pl.move(pl.load(a, [i * M, 0], [M, K], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left),
                pl.move(pl.load(b, [0, 0], [K, N], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right),
            )
            h = pl.store(acc, [i * M, 0], h)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="epilogue", deps=[cube]):
        for i in pl.range(BLOCKS):
            x = pl.load(h, [i * M, 0], [M, N])
            pl.store(pl.relu(pl.add(x, pl.load(bias, [i * M, 0], [M, N]))), [i * M, 0], c)
    return c
