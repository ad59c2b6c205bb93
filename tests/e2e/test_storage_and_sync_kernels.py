"""Kernels for the storage and sync corner cases the planner and InsertSync must get right,
run on the simulator: right numbers, no race (HazardError is fatal), and the overlap that
explicit slots exist for."""

from __future__ import annotations

import numpy as np

import pypto.language as pl
from pypto.report.run_report import overlap_cycles
from pypto.runtime import RunConfig

CFG = RunConfig(platform="a2a3sim")
R, C = 16, 64


def data(rows: int = 8 * R, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-1, 1, (rows, C)).astype(np.float32)


@pl.jit
def init_still_used(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        x = pl.load(a, [0, 0], [R, C])
        acc = x
        for _ in pl.range(3):
            acc = pl.add(acc, x)  # x must survive: acc needs a buffer of its own
        pl.store(acc, [0, 0], out)
        pl.store(x, [R, 0], out)
    return out


def test_a_loop_init_that_is_still_used_keeps_its_value():
    a, out = data(), np.zeros((2 * R, C), np.float32)
    init_still_used(a, out, config=CFG)
    np.testing.assert_allclose(out[:R], 4 * a[:R], rtol=1e-6)
    np.testing.assert_array_equal(out[R:], a[:R])


@pl.jit
def swap(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        p = pl.load(a, [0, 0], [R, C])
        q = pl.load(a, [R, 0], [R, C])
        for _ in pl.range(3):  # a pure swap of two carried tiles: a parallel copy
            t = p
            p = q
            q = t
        pl.store(p, [0, 0], out)
        pl.store(q, [R, 0], out)
    return out


def test_swapping_loop_carried_tiles():
    a, out = data(), np.zeros((2 * R, C), np.float32)
    swap(a, out, config=CFG)
    p, q = a[:R], a[R : 2 * R]
    for _ in range(3):
        p, q = q, p
    np.testing.assert_array_equal(out[:R], p)
    np.testing.assert_array_equal(out[R:], q)


@pl.jit
def branch_keeps_outer(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        x = pl.load(a, [0, 0], [R, C])
        for i in pl.range(4):
            if i % 2 == 0:  # noqa: SIM108 (a kernel if, not a Python value)
                y = pl.exp(x)
            else:
                y = x
            pl.store(y, [i * R, 0], out)
        pl.store(x, [4 * R, 0], out)  # x is read after the branch yielded it
    return out


def test_an_if_that_yields_an_outer_value_does_not_clobber_it():
    a, out = data(), np.zeros((5 * R, C), np.float32)
    branch_keeps_outer(a, out, config=CFG)
    x = a[:R]
    for i in range(4):
        np.testing.assert_allclose(out[i * R : (i + 1) * R], np.exp(x) if i % 2 == 0 else x, rtol=1e-6)
    np.testing.assert_array_equal(out[4 * R :], x)


@pl.jit
def carried_output(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(4):
            x = pl.load(a, [i * R, 0], [R, C])
            out = pl.store(pl.exp(x), [i * R, 0], out)
            y = pl.load(out, [i * R, 0], [R, C])  # GM read after write through the alias
            out = pl.store(pl.add(y, x), [i * R, 0], out)
    return out


def test_a_loop_carried_output_tensor_is_written_and_read_back():
    a, out = data(), np.zeros((8 * R, C), np.float32)
    carried_output(a, out, config=CFG)
    np.testing.assert_allclose(out[: 4 * R], np.exp(a[: 4 * R]) + a[: 4 * R], rtol=1e-5, atol=1e-6)
    kernel = carried_output.compile(a, out, config=CFG).program.functions[-1]
    assert {p.var.name: p.direction.name for p in kernel.params}["out"] == "InOut"


@pl.jit
def count_down(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(3, -1, -1):
            pl.store(pl.neg(pl.load(a, [i * R, 0], [R, C])), [(3 - i) * R, 0], out)
    return out


def test_a_loop_with_a_negative_step_counts_down():
    a, out = data(), np.zeros((4 * R, C), np.float32)
    count_down(a, out, config=CFG)
    np.testing.assert_array_equal(out, -a[: 4 * R].reshape(4, R, C)[::-1].reshape(4 * R, C))


from seed_kernels import NT, TC, TR, explicit_slots, single_buffer  # noqa: E402  (the tutorial's, verbatim)


def test_explicit_slots_overlap_the_next_load_with_compute():
    a = (np.arange(NT * TR * TC) % 3 - 1).astype(np.float32).reshape(NT * TR, TC)
    traced = RunConfig(platform="a2a3sim", trace=True)
    for kernel in (explicit_slots, single_buffer):
        out = np.zeros_like(a)
        kernel(a, out, config=traced)
        np.testing.assert_allclose(out, np.exp(a), rtol=1e-6)
    slots, single = explicit_slots.last_report, single_buffer.last_report
    assert overlap_cycles(single.intervals("MTE2"), single.intervals("VECTOR")) == 0
    assert overlap_cycles(slots.intervals("MTE2"), slots.intervals("VECTOR")) > 0
    assert slots.cycles < 0.85 * single.cycles


@pl.jit
def six_loads(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        x0 = pl.load(a, [0 * R, 0], [R, C])
        x1 = pl.load(a, [1 * R, 0], [R, C])
        x2 = pl.load(a, [2 * R, 0], [R, C])
        x3 = pl.load(a, [3 * R, 0], [R, C])
        x4 = pl.load(a, [4 * R, 0], [R, C])
        x5 = pl.load(a, [5 * R, 0], [R, C])
        pl.store(pl.exp(x0), [0 * R, 0], out)
        pl.store(pl.exp(x1), [1 * R, 0], out)
        pl.store(pl.exp(x2), [2 * R, 0], out)
        pl.store(pl.exp(x3), [3 * R, 0], out)
        pl.store(pl.exp(x4), [4 * R, 0], out)
        pl.store(pl.exp(x5), [5 * R, 0], out)
    return out


def test_fewer_event_ids_still_give_a_race_free_kernel():
    a = data()
    for ids in (8, 2, 1):
        out = np.zeros((6 * R, C), np.float32)
        six_loads(a, out, config=RunConfig(platform="a2a3sim", platform_overrides={"event_ids": ids}))
        np.testing.assert_allclose(out, np.exp(a[: 6 * R]), rtol=1e-6)
        assert six_loads.last_report.hazards == []


WIDE = 1024  # a [16, 1024] 4-byte tile is 64 KiB: three of them overflow the 184 KiB of Vec


@pl.jit
def dequant_add(
    q: pl.Tensor[[R, WIDE], pl.INT32],
    b: pl.Tensor[[R, WIDE], pl.FP32],
    out: pl.Out[pl.Tensor[[R, WIDE], pl.FP32]],
):
    """As dequantising kernels do: an INT32 product converted to FP32 next to a live FP32 tile;
    it fits only with the cast written over its dying input."""
    with pl.at(level=pl.Level.CORE_GROUP):
        bias = pl.load(b, [0, 0], [R, WIDE])
        x = pl.load(q, [0, 0], [R, WIDE])
        y = pl.cast(x, pl.FP32)
        pl.store(pl.add(y, bias), [0, 0], out)
    return out


def test_a_same_width_cast_runs_in_place_and_converts_right():
    rng = np.random.default_rng(3)
    q = rng.integers(-1000, 1000, (R, WIDE), dtype=np.int32)
    b = rng.uniform(-1, 1, (R, WIDE)).astype(np.float32)
    out = np.zeros_like(b)
    dequant_add(q, b, out, config=CFG)
    np.testing.assert_allclose(out, q.astype(np.float32) + b, rtol=1e-6)
    assert all(t.hazards == [] for t in dequant_add.last_report.tasks)
