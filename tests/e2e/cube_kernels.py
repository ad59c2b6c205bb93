"""Tile-level cube kernels (imported by the e2e tests)."""

import pypto.language as pl

M, K, N = 64, 128, 64


@pl.jit
def tile_matmul(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ma = pl.load(a, [0, 0], [M, K], target_memory=pl.Mem.Mat)
        mb = pl.load(b, [0, 0], [K, N], target_memory=pl.Mem.Mat)
        acc = pl.matmul(pl.move(ma, target_memory=pl.Mem.Left), pl.move(mb, target_memory=pl.Mem.Right))
        pl.store(acc, [0, 0], c)
    return c


@pl.jit
def tile_matmul_bt_acc(a: pl.Tensor, bt: pl.Tensor, c: pl.Out[pl.Tensor]):
    """c = a @ bt.T, accumulated over two K halves (matmul then matmul_acc)."""
    with pl.at(level=pl.Level.CORE_GROUP):
        acc = pl.matmul(
            pl.move(pl.load(a, [0, 0], [M, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left),
            pl.move(pl.load(bt, [0, 0], [N, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right),
            b_trans=True,
        )
        la = pl.move(pl.load(a, [0, 64], [M, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
        rb = pl.move(pl.load(bt, [0, 64], [N, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
        acc = pl.matmul_acc(acc, la, rb, b_trans=True)
        pl.store(acc, [0, 0], c)
    return c


@pl.jit
def chained_matmul(a: pl.Tensor, b: pl.Tensor, w: pl.Tensor, out: pl.Out[pl.Tensor]):
    """out = (a @ b) @ w: the first product goes Acc -> Mat through FIXPIPE, then into Left."""
    with pl.at(level=pl.Level.CORE_GROUP):
        la = pl.move(pl.load(a, [0, 0], [M, M], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
        rb = pl.move(pl.load(b, [0, 0], [M, M], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
        h = pl.move(pl.matmul(la, rb), target_memory=pl.Mem.Mat)
        rw = pl.move(pl.load(w, [0, 0], [M, M], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
        pl.store(pl.matmul(pl.move(h, target_memory=pl.Mem.Left), rw), [0, 0], out)
    return out
