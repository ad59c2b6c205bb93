"""Orchestrations with several tasks (imported by the scheduler tests)."""

import pypto.language as pl

BLOCKS, R, C = 4, 16, 64


@pl.jit
def atomic_block_sum(a: pl.Tensor, c: pl.Out[pl.Tensor]):
    """c = sum of the BLOCKS row blocks of a: zero-init, then one atomic-add task per block."""
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="zero_init"):
        t = pl.load(a, [0, 0], [R, C])
        pl.store(pl.sub(t, t), [0, 0], c)
    for k in pl.parallel(0, BLOCKS):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="accumulate"):
            x = pl.load(a, [k * R, 0], [R, C])
            pl.store(x, [0, 0], c, atomic=pl.AtomicType.Add)
    return c


@pl.jit
def chain(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    """Two dependent tasks through a GM intermediate: out = relu(-a)."""
    tmp = pl.create_tensor([R, C], pl.FP32)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="negate"):
        pl.store(pl.neg(pl.load(a, [0, 0], [R, C])), [0, 0], tmp)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="relu"):
        pl.store(pl.relu(pl.load(tmp, [0, 0], [R, C])), [0, 0], out)
    return out


@pl.jit
def explicit_deps(a: pl.Tensor, x: pl.Out[pl.Tensor], y: pl.Out[pl.Tensor], z: pl.Out[pl.Tensor]):
    """Three tasks that share no tensor: `second` waits for `first` only because deps= says so;
    `third` waits for nothing."""
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="first") as first:
        pl.store(pl.exp(pl.load(a, [0, 0], [R, C])), [0, 0], x)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="second", deps=[first]):
        pl.store(pl.neg(pl.load(a, [0, 0], [R, C])), [0, 0], y)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="third"):
        pl.store(pl.relu(pl.load(a, [0, 0], [R, C])), [0, 0], z)
    return x, y, z


@pl.jit
def deps_on_a_loop(a: pl.Tensor, x: pl.Out[pl.Tensor], y: pl.Out[pl.Tensor]):
    """deps= on a handle bound in a pl.parallel loop: after every iteration's task."""
    for k in pl.parallel(0, BLOCKS):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="rows") as rows:
            pl.store(pl.exp(pl.load(a, [k * R, 0], [R, C])), [k * R, 0], x)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="after", deps=[rows]):
        pl.store(pl.neg(pl.load(a, [0, 0], [R, C])), [0, 0], y)
    return x, y


@pl.jit
def parallel_then_read(a: pl.Tensor, x: pl.Out[pl.Tensor], y: pl.Out[pl.Tensor]):
    """Parallel iterations write disjoint row blocks of x (independent tasks); the last task
    reads all of x, so it follows every one of them."""
    for k in pl.parallel(0, BLOCKS):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="rows"):
            pl.store(pl.exp(pl.load(a, [k * R, 0], [R, C])), [k * R, 0], x)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="reader"):
        for k in pl.range(BLOCKS):
            pl.store(pl.neg(pl.load(x, [k * R, 0], [R, C])), [k * R, 0], y)
    return x, y


@pl.jit.incore
def scale_rows(x: pl.Tensor, out: pl.Out[pl.Tensor], n: pl.INDEX):
    """A helper kernel called from orchestration (loops of its own, ends with return)."""
    for r in pl.range(n):
        pl.store(pl.muls(pl.load(x, [r * R, 0], [R, C]), 2.0), [r * R, 0], out)
    return out


@pl.jit
def helper_chain(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    """out = 4 a over the first two row blocks and 2 a over the others: three helper tasks."""
    out = scale_rows(a, out, BLOCKS)
    out = scale_rows(out, out, 2)
    return out


@pl.jit
def deps_on_a_skipped_scope(a: pl.Tensor, x: pl.Out[pl.Tensor], y: pl.Out[pl.Tensor], n: pl.INDEX):
    """deps= naming a handle whose scope did not run (a loop of n == 0 trips): nothing to wait for."""
    for i in pl.range(n):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="maybe") as maybe:
            pl.store(pl.exp(pl.load(a, [i * R, 0], [R, C])), [i * R, 0], x)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="always", deps=[maybe]):
        pl.store(pl.neg(pl.load(a, [0, 0], [R, C])), [0, 0], y)
    return x, y


@pl.jit
def halves(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    """out = left half + right half of a's [R, 2C] rows: each load asks for half of every row."""
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="halves"):
        left = pl.load(a, [0, 0], [R, C])
        right = pl.load(a, [0, C], [R, C])
        pl.store(pl.add(left, right), [0, 0], out)
    return out
