"""Windowed moves and layout ops cost what cost_model.cpp says for their route, pinned
cycle-exactly on traced runs: the L1 -> L0 extract is an MTE1 transfer of its window,
an Acc window into L1 a FIXPIPE drain, a Vec window a VECTOR copy, a transpose two copy
passes plus a repeat per row, a reshape no instruction at all."""

from __future__ import annotations

import math

import numpy as np

import pypto.language as pl
from pypto import platforms

P = platforms.get("a2a3sim")


def local(bw: float, nbytes: int) -> int:
    return math.ceil(nbytes / bw - 1e-9)  # on-chip moves have no lead


def vector_copy(nbytes: int, warm: bool = False) -> int:
    """A unary copy; ``warm``: it continues a run of vector instructions (no start-up)."""
    base = 0 if warm else P.vec_unary_base
    return math.ceil(base + P.vec_unary_per_repeat * math.ceil(nbytes / P.vector_repeat_bytes))


def fixpipe(rows: int, acc_row_bytes: int) -> int:
    """The FIXPIPE drain of `rows` L0C rows (a power-of-two C0-block count: no misalignment)."""
    per_row = max(P.fixpipe_per_row_cycles, acc_row_bytes / P.fixpipe_drain_bytes_per_cycle)
    return math.ceil(P.fixpipe_base_cycles + rows * per_row)


def rows_of(report, name: str) -> list[dict]:
    return [r for r in report.tasks[0].trace.rows() if r["name"] == name]


@pl.jit
def cube_windows(a: pl.Tensor, b: pl.Tensor, w: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        a_l1 = pl.load(a, [0, 0], [128, 256], target_memory=pl.Mem.Mat)
        b_l1 = pl.load(b, [0, 0], [256, 256], target_memory=pl.Mem.Mat)
        acc = pl.matmul(
            pl.move(a_l1[:, 64:128], target_memory=pl.Mem.Left),
            pl.move(b_l1[64:128, :], target_memory=pl.Mem.Right),
        )
        h = pl.move(acc[16:48, :], target_memory=pl.Mem.Mat)
        pl.store(
            pl.matmul(
                pl.move(h, target_memory=pl.Mem.Left),
                pl.move(pl.load(w, [0, 0], [256, 32], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right),
            ),
            [0, 0],
            c,
        )
    return c


def test_l1_to_l0_extract_and_acc_window_costs():
    a = np.ones((128, 256), np.float16)
    b = np.ones((256, 256), np.float16)
    w = np.ones((256, 32), np.float32)
    c = np.zeros((32, 32), np.float32)
    rep = cube_windows.compile(a, b, w, c).run(a, b, w, c, trace=True)
    ext = rows_of(rep, "TEXTRACT")
    by_pipe = {(r["pipe_name"], r["end"] - r["start"]) for r in ext}
    assert ("MTE1", local(P.bw_l1_to_l0a, 128 * 64 * 2)) in by_pipe  # A window -> L0A
    assert ("MTE1", local(P.bw_l1_to_l0b, 64 * 256 * 2)) in by_pipe  # B window -> L0B
    assert ("FIXPIPE", fixpipe(32, 256 * 4)) in by_pipe  # Acc rows 16..48 (256 fp32 each) -> L1
    assert np.all(c == 64.0 * 256)  # each h element is 64, summed over K = 256


@pl.jit
def vec_layouts(a: pl.Tensor, t: pl.Out[pl.Tensor], r: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        x = pl.load(a, [0, 0], [32, 64])
        pl.store(pl.transpose(pl.slice(x, [16, 64], [8, 0]), 0, 1), [0, 0], t)
        pl.store(pl.reshape(x, [64, 32]), [0, 0], r)
    return t, r


def test_vec_window_transpose_and_reshape_costs():
    a = np.arange(32 * 64, dtype=np.float32).reshape(32, 64)
    t, r = np.zeros((64, 16), np.float32), np.zeros((64, 32), np.float32)
    rep = vec_layouts.compile(a, t, r).run(a, t, r, trace=True)
    np.testing.assert_array_equal(t, a[8:24].T)
    np.testing.assert_array_equal(r, a.reshape(64, 32))
    (ext,) = rows_of(rep, "TEXTRACT")
    assert (ext["pipe_name"], ext["end"] - ext["start"]) == ("VECTOR", vector_copy(16 * 64 * 4))
    (tr,) = rows_of(rep, "TTRANS")
    # right behind the extract on the vector pipe: both passes continue its run (no start-up)
    want = 2 * vector_copy(16 * 64 * 4, warm=True) + math.ceil(P.vec_unary_per_repeat * 16)
    assert (tr["pipe_name"], tr["end"] - tr["start"]) == ("VECTOR", want)
    assert rows_of(rep, "TRESHAPE") == []  # a view: checked, never issued
