"""Scopes that mix a matmul with a vector epilogue: split into an AIC and an AIV kernel
joined through GM when the cube work comes first, else one cluster kernel whose cores hand
values over through pipes."""

import pypto.language as pl

M, K, N = 64, 128, 64


@pl.jit
def matmul_relu(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    """Tile level: the cube part writes c, the vector part reads it back."""
    with pl.at(level=pl.Level.CORE_GROUP):
        acc = pl.matmul(
            pl.move(pl.load(a, [0, 0], [M, K], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left),
            pl.move(pl.load(b, [0, 0], [K, N], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right),
        )
        pl.store(acc, [0, 0], c)
        x = pl.load(c, [0, 0], [M, N])
        pl.store(pl.relu(x), [0, 0], c)
    return c


@pl.jit
def scaled_matmul(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor], s: pl.FP32):
    """Tensor level: the matmul's result crosses to the vector side through a GM intermediate;
    the index math both sides need is recomputed."""
    for blk in pl.parallel(0, 2):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="epilogue") as ep:
            r = blk * (M // 2)
            h = pl.matmul(a[r : r + M // 2, :], b, out_dtype=pl.FP32)
            c[r : r + M // 2, :] = pl.muls(pl.relu(h), s)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="after", deps=[ep]):
        c[0:M, :] = pl.adds(c[0:M, :], 1.0)
    return c


@pl.jit
def vector_then_cube(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    """relu(a) crosses to the cube side (Vec → Mat) to be multiplied."""
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.relu(a)
        c[:] = pl.matmul(t, b, out_dtype=pl.FP32)
    return c


@pl.jit
def blocks_in_a_loop(a: pl.Tensor, b: pl.Tensor, bias: pl.Tensor, c: pl.Out[pl.Tensor]):
    """A matmul and its epilogue in each trip: cube work after vector work of the last trip."""
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="blocks"):
        for h in pl.range(2):
            r = h * (M // 2)
            acc = pl.matmul(a[r : r + M // 2, :], b, out_dtype=pl.FP32)
            c[r : r + M // 2, :] = pl.relu(pl.add(acc, bias))
    return c


@pl.jit
def attention(q: pl.Tensor, k: pl.Tensor, v: pl.Tensor, o: pl.Out[pl.Tensor]):
    """softmax(q kᵀ) v: the scores cross to the vector side, the probabilities back."""
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="attn"):
        s = pl.matmul(q, k, b_trans=True, out_dtype=pl.FP32)
        p = pl.exp(pl.row_expand_sub(s, pl.row_max(s)))
        pv = pl.matmul(pl.cast(p, target_type=pl.FP16), v, out_dtype=pl.FP32)
        o[:] = pl.row_expand_div(pv, pl.row_sum(p))
    return o


@pl.jit
def reread_product(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    """The cube side stores c and the vector side of the same task reads it back: a race."""
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.relu(a)
        c[:] = pl.matmul(t, b, out_dtype=pl.FP32)
        c[:] = pl.adds(c, 1.0)
    return c


@pl.jit
def window_mat_to_vec(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor], d: pl.Out[pl.Tensor]):
    """The Mat copy of a's window also feeds the vector side: loaded again, GM → UB."""
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="window"):
        am = pl.load(a, [0, 0], [M, K], target_memory=pl.Mem.Mat)
        bm = pl.load(b, [0, 0], [K, N], target_memory=pl.Mem.Mat)
        acc = pl.matmul(pl.move(am, target_memory=pl.Mem.Left), pl.move(bm, target_memory=pl.Mem.Right))
        pl.store(acc, [0, 0], c)
        pl.store(pl.relu(pl.move(am, target_memory=pl.Mem.Vec)), [0, 0], d)
    return c, d


@pl.jit
def product_mat_to_vec(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    """A product moved to Mat, then to Vec: the product itself crosses (Acc → Vec)."""
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="product"):
        am = pl.load(a, [0, 0], [M, K], target_memory=pl.Mem.Mat)
        bm = pl.load(b, [0, 0], [K, N], target_memory=pl.Mem.Mat)
        acc = pl.matmul(pl.move(am, target_memory=pl.Mem.Left), pl.move(bm, target_memory=pl.Mem.Right))
        pm = pl.move(acc, target_memory=pl.Mem.Mat)
        pl.store(pl.relu(pl.move(pm, target_memory=pl.Mem.Vec)), [0, 0], c)
    return c


@pl.jit
def rewritten_window_to_vec(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    """The window's tensor is stored into by the kernel: loading it again could see new data."""
    with pl.at(level=pl.Level.CORE_GROUP):
        am = pl.load(a, [0, 0], [M, K], target_memory=pl.Mem.Mat)
        bm = pl.load(b, [0, 0], [K, N], target_memory=pl.Mem.Mat)
        acc = pl.matmul(pl.move(am, target_memory=pl.Mem.Left), pl.move(bm, target_memory=pl.Mem.Right))
        pl.store(acc, [0, 0], c)
        cm = pl.load(c, [0, 0], [M, N], target_memory=pl.Mem.Mat)
        pl.store(pl.relu(pl.move(cm, target_memory=pl.Mem.Vec)), [0, 0], c)
    return c


@pl.jit
def inserted_mat_to_vec(x: pl.Tensor, a: pl.Tensor, b: pl.Tensor, y: pl.Out[pl.Tensor]):
    """A product inserted into a Mat tile loaded from x (narrowed by FIXPIPE when x is fp16),
    then moved to Vec: x's window is loaded into Vec, the product crosses, and the insert is
    made again in Vec (with the same rounding)."""
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="inserted"):
        xm = pl.load(x, [0, 0], [M, 2 * N], target_memory=pl.Mem.Mat)
        am = pl.load(a, [0, 0], [M, K], target_memory=pl.Mem.Mat)
        bm = pl.load(b, [0, 0], [K, N], target_memory=pl.Mem.Mat)
        acc = pl.matmul(pl.move(am, target_memory=pl.Mem.Left), pl.move(bm, target_memory=pl.Mem.Right))
        both = pl.tile.assemble(xm, acc, [0, N])
        pl.store(pl.move(both, target_memory=pl.Mem.Vec), [0, 0], y)
    return y
