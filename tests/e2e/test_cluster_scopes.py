"""``pl.at`` scopes inside ``with pl.cluster():``: the cluster's one task, its cores handing
values over through pipes the compiler inserts; misuse refused with its line."""

from __future__ import annotations

import numpy as np
import pytest

import pypto.language as pl
from pypto import errors, ir
from pypto.frontend import parse_text
from pypto.runtime import RunConfig

CFG = RunConfig(platform="a2a3sim")
M, K, N = 64, 128, 64


@pl.jit
def product_then_epilogue(
    x: pl.Tensor[[M, K], pl.FP16],
    w: pl.Tensor[[K, N], pl.FP16],
    bias: pl.Tensor[[M, N], pl.FP32],
    out: pl.Out[pl.Tensor[[M, N], pl.FP32]],
):
    with pl.cluster(name_hint="fused"):
        with pl.at(level=pl.Level.CORE_GROUP):
            acc = pl.matmul(x, w, out_dtype=pl.FP32)
        with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(pl.SplitMode.UP_DOWN)]):
            out[:, :] = pl.relu(pl.add(acc, bias))
    return out


def operands(seed: int = 0) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((M, K)).astype(np.float16)
    w = rng.standard_normal((K, N)).astype(np.float16)
    bias = rng.standard_normal((M, N)).astype(np.float32)
    return x, w, bias


def test_the_scopes_of_a_cluster_are_one_task_on_its_cores():
    x, w, bias = operands()
    out = np.zeros((M, N), np.float32)
    product_then_epilogue(x, w, bias, out, config=CFG)
    want = np.maximum(x.astype(np.float32) @ w.astype(np.float32) + bias, 0)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)
    tasks = product_then_epilogue.last_report.tasks
    assert {t.name for t in tasks} == {"fused"}  # one task, not a cube task then a vector one
    assert {t.core_name for t in tasks} == {"AIC0", "AIV0", "AIV1"}
    assert all(t.cycles > 0 for t in tasks)  # UP_DOWN: both AIVs take half of the product
    program = product_then_epilogue.lower(x, w, bias, out, config=CFG)
    calls = [c.op for c in ir.nodes_of(program.get("fused_aic").body, ir.Call)]
    assert "tile.tpush_to_aiv" in calls  # the product crosses through the compiler's pipe


def test_the_cluster_prints_as_one_mixed_scope_and_parses_back():
    from pypto.frontend.parser import parse_jit

    x, w, bias = operands()
    program = parse_jit(product_then_epilogue, (x, w, bias, np.zeros((M, N), np.float32)))
    text = ir.print_program(program)
    assert "pl.split(pl.SplitMode.UP_DOWN)" in text and "pl.cluster" not in text
    ir.assert_structural_equal(program, parse_text(text), names=True)


@pl.jit
def two_splits(x: pl.Tensor, w: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.cluster():
        with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(pl.SplitMode.UP_DOWN)]):
            acc = pl.matmul(x, w, out_dtype=pl.FP32)
        with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(pl.SplitMode.LEFT_RIGHT)]):
            out[:, :] = pl.relu(acc)
    return out


@pl.jit
def deps_inside(x: pl.Tensor, w: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.cluster():  # noqa: SIM117 - a DSL scope in a DSL scope, not two context managers
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="inner"):
            out[:, :] = pl.matmul(x, w, out_dtype=pl.FP32)
    return out


@pl.jit
def nested_outside_a_cluster(x: pl.Tensor, w: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):  # noqa: SIM117 - as above
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:, :] = pl.matmul(x, w, out_dtype=pl.FP32)
    return out


@pytest.mark.parametrize(
    ("kernel", "error", "message"),
    [
        (two_splits, errors.TypeCheckError, r"share its AIVs: give them one pl\.split mode"),
        (deps_inside, errors.TypeCheckError, r"give name_hint=, deps= and `as` to pl\.cluster"),
        (nested_outside_a_cluster, errors.MisplacedOpError, r"pl\.at scopes cannot be nested"),
    ],
)
def test_misuse_is_a_typed_error_with_its_line(kernel, error, message):
    x, w, _ = operands()
    out = np.zeros((M, N), np.float32)
    with pytest.raises(error, match=message) as e:
        kernel(x, w, out, config=CFG)
    assert "test_cluster_scopes.py:" in str(e.value)
    assert not out.any()


@pl.program
class ClusterOfOneDispatch:
    """Upstream's SPMD paged attention wraps each vector kernel's pl.spmd in pl.cluster():
    with one whole kernel in it there is nothing to co-schedule, so it is that dispatch."""

    @pl.function(type=pl.FunctionType.InCore)
    def add_rows(
        self,
        x: pl.Tensor[[64, 64], pl.FP32],
        y: pl.Out[pl.Tensor[[64, 64], pl.FP32]],
        step: pl.Scalar[pl.INT64],
    ) -> pl.Tensor[[64, 64], pl.FP32]:
        r = pl.tile.get_block_idx() * 16
        return pl.store(pl.adds(pl.load(x, [r, 0], [16, 64]), 1.0), [r, 0], y)

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(
        self, x: pl.Tensor[[64, 64], pl.FP32], y: pl.Out[pl.Tensor[[64, 64], pl.FP32]]
    ) -> pl.Tensor[[64, 64], pl.FP32]:
        for i in pl.range(1):
            with pl.cluster():  # noqa: SIM117 (upstream nests them)
                with pl.spmd(core_num=4):
                    y = self.add_rows(x, y, i)  # i: an INDEX converted for the INT64 parameter
        return y


def test_a_cluster_of_one_whole_kernels_dispatch_is_that_dispatch():
    from pypto.runtime import run

    x = np.random.default_rng(2).standard_normal((64, 64)).astype(np.float32)
    y = np.zeros_like(x)
    compiled = run(ClusterOfOneDispatch, x, y, config=CFG)
    np.testing.assert_array_equal(y, x + 1)
    assert [(t.kernel, t.block_idx) for t in compiled.tasks] == [("add_rows", b) for b in range(4)]
