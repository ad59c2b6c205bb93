"""Cluster kernels in the explicit form: one `with pl.cluster():` body whose cube-side part
runs on the AIC and whose vector-side part runs on the AIVs, joined by tile pipes."""

import pypto.language as pl

M, K, N = 64, 128, 64
BLOCKS = 4


@pl.jit
def matmul_relu(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    """AIC: c_tile = a @ b, pushed whole to AIV 0; AIV 0: relu, store."""
    with pl.cluster(name_hint="mm_relu"):
        acc = pl.matmul(
            pl.move(pl.load(a, [0, 0], [M, K], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left),
            pl.move(pl.load(b, [0, 0], [K, N], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right),
        )
        pl.tpush_to_aiv(acc, split=0)
        x = pl.tpop_from_aic(shape=[M, N], dtype=pl.FP32, split=0)
        y = pl.relu(x)
        pl.tfree_to_aic(x)
        pl.store(y, [0, 0], c)
    return c


@pl.jit
def matmul_relu_up_down(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    """Split rows: each AIV gets half of every product block and stores its half."""
    with pl.cluster():
        for i in pl.range(BLOCKS):
            acc = pl.matmul(
                pl.move(pl.load(a, [i * M, 0], [M, K], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left),
                pl.move(pl.load(b, [0, 0], [K, N], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right),
            )
            pl.tpush_to_aiv(acc, split=pl.SplitMode.UP_DOWN)
            x = pl.tpop_from_aic(shape=[M // 2, N], dtype=pl.FP32, split=pl.SplitMode.UP_DOWN)
            y = pl.relu(x)
            pl.tfree_to_aic(x)
            half = pl.get_subblock_idx()
            pl.store(y, [i * M + half * (M // 2), 0], c)
    return c


@pl.jit
def round_trip(x: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    """AIV → AIC → AIV per block: the AIV scales and narrows x, the AIC multiplies it by b,
    the AIV adds 1 and stores. Both directions of the pipe, BLOCKS trips through a 2-slot ring."""
    with pl.cluster():
        for i in pl.range(BLOCKS):
            xv = pl.load(x, [i * M, 0], [M, K])
            h = pl.cast(pl.muls(xv, 0.5), target_type=pl.FP16)
            pl.tpush_to_aic(h)
            hm = pl.tpop_from_aiv(shape=[M, K], dtype=pl.FP16)
            acc = pl.matmul(
                pl.move(hm, target_memory=pl.Mem.Left),
                pl.move(pl.load(b, [0, 0], [K, N], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right),
            )
            pl.tfree_to_aiv(hm)
            pl.tpush_to_aiv(acc)
            r = pl.tpop_from_aic(shape=[M, N], dtype=pl.FP32)
            pl.store(pl.adds(r, 1.0), [i * M, 0], c)
            pl.tfree_to_aic(r)
    return c


@pl.jit
def never_freed(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    """The AIV pops every block but never frees: the 2-slot ring fills and the AIC's third
    push waits for ever — a deadlock the simulator reports, naming both cores."""
    with pl.cluster():
        for i in pl.range(BLOCKS):
            acc = pl.matmul(
                pl.move(pl.load(a, [i * M, 0], [M, K], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left),
                pl.move(pl.load(b, [0, 0], [K, N], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right),
            )
            pl.tpush_to_aiv(acc)
        for i in pl.range(2):
            x = pl.tpop_from_aic(shape=[M, N], dtype=pl.FP32)
            pl.store(x, [i * M, 0], c)
    return c


@pl.jit
def pops_more_than_pushed(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor], n: pl.INDEX):
    """Two pops, n // M pushes: with n == M the second pop waits for a tile that never
    comes — reported at run time (trip counts are not compared statically)."""
    with pl.cluster():
        acc = pl.matmul(
            pl.move(pl.load(a, [0, 0], [M, K], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left),
            pl.move(pl.load(b, [0, 0], [K, N], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right),
        )
        for _i in pl.range(n // M):
            pl.tpush_to_aiv(acc)
        for _j in pl.range(2):
            x = pl.tpop_from_aic(shape=[M, N], dtype=pl.FP32)
            pl.store(x, [0, 0], c)
            pl.tfree_to_aic(x)
    return c


@pl.jit
def ragged_push(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    """The AIC pushes fewer valid rows each trip; the AIV pops whole tiles: the mismatch is
    only known at run time (valid rows depend on the trip)."""
    with pl.cluster():
        for i in pl.range(2):
            acc = pl.matmul(
                pl.move(pl.load(a, [0, 0], [M, K], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left),
                pl.move(pl.load(b, [0, 0], [K, N], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right),
            )
            pl.tpush_to_aiv(pl.set_validshape(acc, M - 16 * i, N))
            x = pl.tpop_from_aic(shape=[M, N], dtype=pl.FP32)
            pl.store(x, [0, 0], c)
            pl.tfree_to_aic(x)
    return c
