"""``for aiv_id in pl.split_aiv(2, mode=...)``: a region whose vector work the cluster's two
AIVs share, lowered onto the scope's ``pl.split``; misuse refused with its line."""

from __future__ import annotations

import fused_kernels as fk
import numpy as np
import pytest

import pypto.language as pl
from pypto import ir
from pypto.errors import MisplacedOpError, TypeCheckError
from pypto.frontend.parser import parse_jit
from pypto.runtime import RunConfig

CFG = RunConfig(platform="a2a3sim")
BLOCKS, M, K, N = fk.BLOCKS, fk.M, fk.K, fk.N


@pl.jit
def epilogue_region(a: pl.Tensor, b: pl.Tensor, bias: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="fused"):
        for i in pl.range(BLOCKS):
            acc = pl.matmul(
                pl.move(pl.load(a, [i * M, 0], [M, K], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left),
                pl.move(pl.load(b, [0, 0], [K, N], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right),
            )
            for aiv_id in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN):  # noqa: B007 - the lane
                x = pl.move(acc, target_memory=pl.Mem.Vec)
                pl.store(pl.relu(pl.add(x, pl.load(bias, [i * M, 0], [M, N]))), [i * M, 0], c)
    return c


@pytest.fixture(scope="module")
def data() -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(0)
    a = rng.standard_normal((BLOCKS * M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    bias = rng.standard_normal((BLOCKS * M, N)).astype(np.float32)
    return a, b, bias, np.maximum(a.astype(np.float32) @ b.astype(np.float32) + bias, 0)


def run(kernel, data):
    a, b, bias, want = data
    c = np.zeros_like(want)
    kernel(a, b, bias, c, config=CFG)
    np.testing.assert_allclose(c, want, rtol=1e-5, atol=1e-5)
    return kernel.last_report


def test_a_region_runs_as_the_whole_scope_split(data):
    """The region is the scope's pl.split(UP_DOWN): the same kernels, so the same timeline to
    the cycle (13811: the AIC's four products, each pushed as two halves, one per AIV)."""
    region, whole = run(epilogue_region, data), run(fk.fused_up_down, data)
    assert [(t.core_name, t.start, t.end) for t in region.tasks] == [
        (t.core_name, t.start, t.end) for t in whole.tasks
    ]
    assert region.cycles == 13811
    assert all(t.cycles > 0 for t in region.tasks)  # both AIVs take half of every tile


def test_the_lane_is_the_subblock_index_and_the_scope_takes_the_mode(data):
    a, b, bias, want = data
    program = parse_jit(epilogue_region, (a, b, bias, np.zeros_like(want)))
    scope = next(s for s in ir.walk(program.functions[0].body) if isinstance(s, ir.Scope))
    assert scope.split is pl.SplitMode.UP_DOWN
    lanes = [s for s in ir.walk(scope.body) if isinstance(s, ir.Assign) and s.var.name.startswith("aiv_id")]
    assert [s.value.op for s in lanes if isinstance(s.value, ir.Call)] == ["tile.get_subblock_idx"]


S, D = 64, 128


@pl.jit
def alone(
    x: pl.Tensor[[S, D], pl.FP32], w: pl.Tensor[[D, D], pl.FP16], o: pl.Out[pl.Tensor[[S, D], pl.FP32]]
):
    for _lane in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN):
        o[:, :] = pl.matmul(pl.cast(pl.relu(x), target_type=pl.FP16), w, out_dtype=pl.FP32)
    return o


def test_a_region_outside_a_scope_is_a_scope_of_its_own():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((S, D)).astype(np.float32)
    w = rng.standard_normal((D, D)).astype(np.float16)
    o = np.zeros((S, D), np.float32)
    alone(x, w, o, config=CFG)
    want = np.maximum(x, 0).astype(np.float16).astype(np.float32) @ w.astype(np.float32)
    np.testing.assert_allclose(o, want, rtol=1e-3, atol=1e-3)
    tasks = alone.last_report.tasks
    assert len({t.name for t in tasks}) == 1 and {t.core_name for t in tasks} == {"AIC0", "AIV0", "AIV1"}
    assert all(t.cycles > 0 for t in tasks)  # each AIV: relu and cast of half the rows


@pl.jit
def task_parallel(x: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for _lane in pl.split_aiv(2, mode=pl.SplitMode.NONE):
            o[:, :] = pl.relu(x)
    return o


@pl.jit
def three_lanes(x: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for _lane in pl.split_aiv(3, mode=pl.SplitMode.UP_DOWN):
            o[:, :] = pl.relu(x)
    return o


@pl.jit
def two_modes(x: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for _lane in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN):
            y = pl.relu(x)
        for _lane in pl.split_aiv(2, mode=pl.SplitMode.LEFT_RIGHT):
            o[:, :] = pl.exp(y)
    return o


@pl.jit
def in_spmd(x: pl.Tensor, o: pl.Out[pl.Tensor]):
    for _b in pl.spmd(2):
        for _lane in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN):
            o[:, :] = pl.relu(x)
    return o


@pytest.mark.parametrize(
    ("kernel", "error", "message", "line"),
    [
        (task_parallel, TypeCheckError, "mode=pl.SplitMode.NONE) (both lanes running the whole body)", 99),
        (three_lanes, TypeCheckError, "over the cluster's 2 AIVs, got 3 lanes", 107),
        (two_modes, TypeCheckError, "splits LEFT_RIGHT, but its scope's AIVs already split UP_DOWN", 117),
        (in_spmd, MisplacedOpError, "a pl.split_aiv region belongs in a pl.at scope", 125),
    ],
)
def test_misuse_is_a_typed_error_with_its_line(kernel, error, message, line):
    x, o = np.ones((16, 16), np.float32), np.zeros((16, 16), np.float32)
    with pytest.raises(error) as e:
        kernel(x, o, config=CFG)
    assert message in str(e.value) and f"test_split_aiv.py:{line}:" in str(e.value)
    assert not o.any()
