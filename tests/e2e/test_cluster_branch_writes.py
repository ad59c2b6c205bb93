"""A GM tensor written from both cores of one cluster kernel, in the two arms of a branch.

Each block of ``branch_store`` is either a product (the AIC stores the matmul result, the AIV
stores its row sums, popped through the pipe) or empty (the AIV fills both tensors with
``pl.full`` / ``pl.write``). The AIC's program keeps the branch with an empty else arm that
hands on the tensor it already had: one GM buffer, each core carrying its own last version.
The two cores write disjoint row windows, and the later scope reads the whole tensor.
"""

from __future__ import annotations

import numpy as np
import pytest

import pypto.language as pl
from pypto import ir
from pypto.runtime import RunConfig

M, K, N, BLOCKS, SUB = 32, 32, 16, 4, 16


@pl.jit
def branch_store(a: pl.Tensor, b: pl.Tensor, flags: pl.Tensor, out: pl.Out[pl.Tensor]):
    h = pl.create_tensor([BLOCKS * M, N], dtype=pl.FP32)
    r = pl.create_tensor([BLOCKS * M, 1], dtype=pl.FP32)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="blocks") as blocks:
        for i in pl.range(BLOCKS):
            if pl.read(flags, [i]) > 0:
                acc = pl.matmul(a[i * M : (i + 1) * M, 0:K], b[0:K, 0:N], out_dtype=pl.FP32)
                rs = pl.row_sum(acc)
                for j in pl.range(M // SUB):
                    h[i * M + j * SUB : i * M + (j + 1) * SUB, 0:N] = acc[j * SUB : (j + 1) * SUB, 0:N]
                    r[i * M + j * SUB : i * M + (j + 1) * SUB, 0:1] = rs[j * SUB : (j + 1) * SUB, 0:1]
            else:
                z = pl.full([SUB, N], dtype=pl.FP32, value=-1.0)
                for j in pl.range(M // SUB):
                    for q in pl.range(SUB):
                        pl.write(r, [i * M + j * SUB + q, 0], 0.0)
                    h[i * M + j * SUB : i * M + (j + 1) * SUB, 0:N] = z
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="after", deps=[blocks]):
        out[0 : BLOCKS * M, 0:N] = pl.row_expand_add(h[0 : BLOCKS * M, 0:N], r[0 : BLOCKS * M, 0:1])
    return out


def expected(a: np.ndarray, b: np.ndarray, flags: np.ndarray) -> np.ndarray:
    want = np.empty((BLOCKS * M, N), np.float32)
    for i in range(BLOCKS):
        if flags[i]:
            blk = a[i * M : (i + 1) * M].astype(np.float32) @ b.astype(np.float32)
            want[i * M : (i + 1) * M] = blk + blk.sum(1, keepdims=True)
        else:
            want[i * M : (i + 1) * M] = -1.0
    return want


# flags -> (run cycles, end of the AIC's part). The AIC's part is its products alone; the AIV
# pops each product's tile and sums its rows, and per empty block does 32 scalar GM writes and
# two stores of the filled tile. Two empty blocks make the AIV's part the longer one (it ends
# at 18212); with one, the AIV ends right after the pop and row sum of the AIC's last product
# (12049). "after" starts when both cores are done.
PINS = {(1, 0, 1, 0): (20769, 6667), (0, 1, 1, 1): (14606, 11945)}


@pytest.mark.parametrize("flags", sorted(PINS))
def test_both_arms_write_one_tensor_from_their_own_core(flags):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((BLOCKS * M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    f = np.array(flags, dtype=np.int32)
    out = np.zeros((BLOCKS * M, N), np.float32)
    branch_store(a, b, f, out, config=RunConfig(platform="a2a3sim"))
    np.testing.assert_allclose(out, expected(a, b, f), rtol=1e-3, atol=1e-3)
    rep = branch_store.last_report
    cores = {(t.core_name, t.name) for t in rep.tasks}
    assert {("AIC0", "blocks"), ("AIV0", "blocks")} <= cores  # one cluster task, both cores
    aic = next(t for t in rep.tasks if t.core_name == "AIC0")
    assert (rep.cycles, aic.end) == PINS[flags]


def test_the_aic_else_arm_hands_on_the_tensor_it_already_had():
    a = np.zeros((BLOCKS * M, K), np.float16)
    b = np.zeros((K, N), np.float16)
    program = branch_store.lower(a, b, np.zeros(BLOCKS, np.int32), np.zeros((BLOCKS * M, N), np.float32))
    aic = program.get("blocks_aic")
    loop = next(s for s in ir.walk(aic.body) if isinstance(s, ir.For) and s.iter_args)
    branch = next(s for s in loop.body if isinstance(s, ir.If))
    assert not [c for c in ir.nodes_of(branch.else_body, ir.Call) if c.op == "tile.store"]
    carried = {it.var.name for it in loop.iter_args}
    assert {v.name for v in branch.else_body[-1].values} <= carried  # the versions entering the branch
