"""``pl.cross_core_slot(slot_num=n)``: the ring depth of a mixed scope's cross-core pipes.

The AIC of ``fused_kernels.deep_ring`` computes four 128 x 128 products and pushes each into
the pipe (TMATMUL 533 cycles, then a TPUSH of 734: the FIXPIPE drain of 64 KiB to the GM ring
on a2a3); the AIV pops each, adds the bias, applies relu, stores and frees the slot. A push
of block ``k`` reuses the slot block ``k - n`` occupied, so it starts no earlier than that
block's free: with ``n`` slots the AIC runs at most ``n`` blocks ahead of the AIV.
"""

from __future__ import annotations

from pathlib import Path

import fused_kernels as fk
import numpy as np
import pytest

import pypto.language as pl
from pypto import ir
from pypto.errors import TypeCheckError
from pypto.runtime import RunConfig

MATMUL, PUSH = 533, 734  # the AIC's two steps per block (trace durations, a2a3sim)
FIRST_PUSH = 1825  # the first TPUSH's start: loads, L0 moves and the first TMATMUL


@pytest.fixture(scope="module")
def data() -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(0)
    a = rng.standard_normal((fk.BLOCKS * fk.M, fk.K)).astype(np.float16)
    b = rng.standard_normal((fk.K, fk.N)).astype(np.float16)
    bias = rng.standard_normal((fk.BLOCKS * fk.M, fk.N)).astype(np.float32)
    return a, b, bias, np.maximum(a.astype(np.float32) @ b.astype(np.float32) + bias, 0)


def run(kernel, data, **overrides):
    a, b, bias, want = data
    c = np.zeros_like(want)
    kernel(a, b, bias, c, config=RunConfig(platform="a2a3sim", trace=True, platform_overrides=overrides))
    np.testing.assert_allclose(c, want, rtol=1e-5, atol=1e-5)  # the depth never changes the numbers
    return kernel.last_report


def steps(rep, core: str, name: str) -> list[tuple[int, int]]:
    task = next(t for t in rep.tasks if t.core_name == core)
    return [(r["start"], r["end"]) for r in task.trace.rows() if r["name"] == name]


# slots -> (run cycles, end of the AIC's last push): one slot serialises the two cores; two let
# the AIC work one block ahead; four (= BLOCKS) never make it wait, so its last push ends at
# FIRST_PUSH + 3 * (MATMUL + PUSH) + PUSH = 6360. Past two slots the AIV is the bottleneck,
# so the run's end stays.
PINS = {1: (20108, 11562), 2: (19592, 8389), 4: (19592, 6360)}


@pytest.mark.parametrize("slots", sorted(PINS))
def test_a_deeper_ring_lets_the_producer_run_further_ahead(slots, data):
    rep = run(fk.deep_ring(slots), data)
    pushes, frees = steps(rep, "AIC0", "TPUSH"), steps(rep, "AIV0", "TFREE")
    matmuls = steps(rep, "AIC0", "TMATMUL")
    assert len(pushes) == len(frees) == fk.BLOCKS
    for k, (start, end) in enumerate(pushes):
        assert end - start == PUSH and matmuls[k][1] - matmuls[k][0] == MATMUL
        ready = matmuls[k][1]  # the product exists
        freed = frees[k - slots][1] if k >= slots else 0  # the slot it reuses is back
        assert start == max(ready, freed)
    assert (rep.cycles, pushes[-1][1]) == PINS[slots]
    assert PINS[4][1] == FIRST_PUSH + 3 * (MATMUL + PUSH) + PUSH


def test_on_a5_the_on_chip_ring_follows_the_scope_depth_too(data):
    """a5 has the Acc -> Vec route, so the ring is on chip (no GM traffic) and each step is
    slower or faster than on a2a3, but the rule is the same: one slot serialises the cores,
    two let the AIC run ahead until the AIV bounds the run, four add nothing."""
    a, b, bias, want = data
    cycles = {}
    for slots in (1, 2, 4):
        c = np.zeros_like(want)
        kernel = fk.deep_ring(slots)
        kernel(a, b, bias, c, config=RunConfig(platform="a5sim"))
        np.testing.assert_allclose(c, want, rtol=1e-5, atol=1e-5)
        cycles[slots] = kernel.last_report.cycles
    assert cycles == {1: 24034, 2: 22681, 4: 22681}


def test_the_scope_depth_is_the_platform_depth_for_that_scope(data):
    """slot_num=1 on the scope runs exactly as the platform's tpipe_slots=1 for the whole run,
    and a scope's slot_num wins over the platform's default."""
    assert run(fk.deep_ring(1), data).cycles == run(fk.fused, data, tpipe_slots=1).cycles
    assert run(fk.deep_ring(2), data, tpipe_slots=1).cycles == PINS[2][0]


def test_the_depth_is_in_the_dump_and_on_every_push(data):
    a, b, bias, want = data
    program = fk.deep_ring(4).lower(a, b, bias, np.zeros_like(want))
    aic = next(f for f in program.functions if f.name.endswith("_aic"))
    pushes = [c for c in ir.nodes_of(aic.body, ir.Call) if c.op == "tile.tpush_to_aiv"]
    assert pushes and all(c.const_arg("slots").value == 4 for c in pushes)


@pl.jit
def no_slots(a: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.cross_core_slot(slot_num=0)]):
        c[:, :] = pl.relu(a)
    return c


@pl.jit
def two_depths(a: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(
        level=pl.Level.CORE_GROUP,
        optimizations=[pl.cross_core_slot(slot_num=2), pl.cross_core_slot(slot_num=4)],
    ):
        c[:, :] = pl.relu(a)
    return c


@pl.jit
def two_cluster_depths(x: pl.Tensor, w: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.cluster():
        with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.cross_core_slot(slot_num=2)]):
            acc = pl.matmul(x, w, out_dtype=pl.FP32)
        with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.cross_core_slot(slot_num=4)]):
            out[:, :] = pl.relu(acc)
    return out


@pytest.mark.parametrize(
    ("kernel", "message", "where"),
    [
        (no_slots, "pl.cross_core_slot takes slot_num=N, a compile-time integer >= 1", "slot_num=0)]"),
        (
            two_depths,
            "pl.cross_core_slot is given twice",
            "optimizations=[pl.cross_core_slot(slot_num=2), pl",
        ),
        (
            two_cluster_depths,
            "share its pipes: give them one pl.cross_core_slot, not slot_num [2, 4]",
            "with pl.cluster():",
        ),
    ],
)
def test_a_bad_slot_count_is_a_typed_error_with_its_line(kernel, message, where):
    line = next(i for i, text in enumerate(Path(__file__).read_text().splitlines(), 1) if where in text)
    c = np.zeros((16, 16), np.float32)
    half = np.ones((16, 16), np.float16)
    args = (half, half, c) if kernel is two_cluster_depths else (np.ones((16, 16), np.float32), c)
    with pytest.raises(TypeCheckError) as e:
        kernel(*args, config=RunConfig(platform="a2a3sim"))
    assert message in str(e.value) and f"test_cross_core_slot.py:{line}:" in str(e.value)
    assert not c.any()  # nothing ran


def test_the_scope_prints_with_its_depth_and_parses_back(data):
    from pypto.frontend import parse_text
    from pypto.frontend.parser import parse_jit

    a, b, bias, want = data
    program = parse_jit(fk.deep_ring(4), (a, b, bias, np.zeros_like(want)))
    text = ir.print_program(program)
    assert "optimizations=[pl.cross_core_slot(slot_num=4)]" in text
    ir.assert_structural_equal(program, parse_text(text), names=True)
