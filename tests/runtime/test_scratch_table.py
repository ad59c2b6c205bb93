"""The table after a run's arguments is kept from one run of a plan to the next
(``pypto.runtime.scratch``): every run still starts with each scratch tensor at its init value,
bit for bit, and with views of the arguments it was given, whatever the runs before wrote or
were given; a run on another thread meanwhile gets a table of its own."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

import pypto.language as pl
from pypto.runtime.compiled import CompiledProgram
from pypto.runtime.dtypes import CODES, INPUT, flagged
from pypto.runtime.marshal import bf16_bits
from pypto.runtime.scratch import KeptTables, ScratchTable


@pl.jit
def twice_from_ones(x: pl.Tensor[[16, 64], pl.FP32], y: pl.Out[pl.Tensor[[8, 64], pl.FP32]]):
    top = pl.slice(x, [8, 64], [4, 0])  # a view of the argument in the table
    t = pl.create_tensor([8, 64], dtype=pl.FP32, init_value=1.5)
    with pl.at(level=pl.Level.CORE_GROUP):
        t[:, :] = pl.add(t, top)  # the scratch tensor read, then written
    with pl.at(level=pl.Level.CORE_GROUP):
        y[:, :] = pl.add(t, top)
    return y


@pl.jit
def twice_from_zeros(x: pl.Tensor[[16, 64], pl.FP32], y: pl.Out[pl.Tensor[[8, 64], pl.FP32]]):
    top = pl.slice(x, [8, 64], [4, 0])
    t = pl.create_tensor([8, 64], dtype=pl.FP32)
    with pl.at(level=pl.Level.CORE_GROUP):
        t[:, :] = pl.add(t, top)
    with pl.at(level=pl.Level.CORE_GROUP):
        y[:, :] = pl.add(t, top)
    return y


@pytest.mark.parametrize("kernel,init", [(twice_from_ones, 1.5), (twice_from_zeros, 0.0)])
def test_each_call_starts_from_the_init_value_and_reads_the_arguments_it_was_given(kernel, init):
    rng = np.random.default_rng(3)
    x1, x2 = (rng.standard_normal((16, 64)).astype(np.float32) for _ in range(2))
    y = np.zeros((8, 64), np.float32)
    # The first call runs the general way, the later ones the warm way: both keep the table.
    for x in (x1, x1, x2, x1.copy(), x1):
        kernel(x, y)
        np.testing.assert_array_equal(y, (np.float32(init) + x[4:12]) + x[4:12])


def _scratch_of(kernel) -> CompiledProgram:
    (compiled,) = [c for c in kernel._pypto_compiled.values() if isinstance(c, CompiledProgram)]
    return compiled


def test_a_run_on_another_thread_meanwhile_gets_a_table_of_its_own():
    x, y = np.ones((16, 64), np.float32), np.zeros((8, 64), np.float32)
    twice_from_ones(x, y)
    compiled = _scratch_of(twice_from_ones)
    first = compiled.take_scratch()  # the one the call kept
    second = compiled.take_scratch()  # while the first is taken
    assert first is not second and not np.shares_memory(first.arena, second.arena)
    compiled.keep_scratch(first)
    assert compiled.take_scratch() is first


INITS = [
    ("float32", 0), ("float32", -0.0), ("float32", 1.5), ("float32", float("nan")),
    ("float16", -0.0), ("int32", -7), ("bool", True), ("bfloat16", 0.0), ("bfloat16", 1.5),
]  # fmt: skip


def _expected_bits(dtype: str, init: float, array: np.ndarray) -> bytes:
    if dtype == "bfloat16":
        return np.full(array.shape, bf16_bits(init), np.int16).tobytes()
    return np.full(array.shape, init, array.dtype).tobytes()


def test_every_scratch_tensor_is_at_its_init_value_bit_for_bit_at_each_run():
    news = [("new", (16, 8), dtype, init) for dtype, init in INITS] + [("new", (3,), "float32", 0)]
    table = ScratchTable(news, [], 0)
    for _ in range(3):
        entries = table.table([])
        for (array, code), (_, _, dtype, init) in zip(entries, news):
            assert code == CODES[dtype]
            assert array.tobytes() == _expected_bits(dtype, init, array)
        for array, _ in entries:  # what a run may leave behind
            array.view(np.uint8)[...] = 0xA5


def test_scratch_tensors_lie_apart_on_cache_lines_of_their_own():
    news = [("new", shape, "float32", 0) for shape in [(1,), (16, 1), (16, 128), (0, 4), (5, 3)]]
    entries = ScratchTable(news, [], 0).table([])
    spans = sorted((a.ctypes.data, a.ctypes.data + a.nbytes) for a, _ in entries)
    assert all(start % 64 == 0 for start, _ in spans)
    assert all(end <= start for (_, end), (start, _) in zip(spans, spans[1:]))


def test_views_of_the_arguments_follow_the_arguments_memory():
    intermediates = [("view", 0, (4, 8), (2, 0)), ("view", 1, (2, 8), (1, 0)), ("new", (4, 8), "float32", 0)]
    extra = [2, 3]  # read-only repeats of a view of the argument, and of the scratch tensor
    table = ScratchTable(intermediates, extra, 1)
    code = CODES["float32"]
    a = np.arange(128, dtype=np.float32).reshape(16, 8)
    first = table.table([(a, code)])
    np.testing.assert_array_equal(first[2][0], a[3:5])  # a view of a view of the argument
    assert first[4] == (first[2][0], flagged(code, INPUT))
    assert first[5][0] is first[3][0] and first[5][1] == flagged(code, INPUT)
    again = table.table([(a, code)])
    assert again[2][0] is first[2][0]  # the same memory: the views of the last run
    b = a.copy()
    moved = table.table([(b, code)])
    assert np.shares_memory(moved[1][0], b) and not np.shares_memory(moved[1][0], a)
    assert np.shares_memory(moved[4][0], b) and moved[3][0] is first[3][0]
    strided = np.arange(256, dtype=np.float32).reshape(16, 16)[:, ::2]  # not contiguous: read as it lies
    np.testing.assert_array_equal(table.table([(strided, code)])[2][0], strided[3:5])
    readonly = b.copy()
    readonly.flags.writeable = False
    assert not table.table([(readonly, code)])[1][0].flags.writeable  # writability is part of the key


def test_a_new_plan_of_the_same_scratch_keeps_the_arena_and_starts_it_clean():
    news = [("new", (4, 8), "float32", 2.0), ("new", (8,), "int32", 0)]
    old = ScratchTable([("view", 0, (4, 8), (0, 0)), *news], [], 1)
    code = CODES["float32"]
    used = old.table([(np.zeros((8, 8), np.float32), code)])
    used[1][0][...] = 9.0
    used[2][0][...] = 9
    replanned = ScratchTable([("view", 0, (4, 8), (4, 0)), *news], [], 1, old)
    assert replanned.arena is old.arena
    entries = replanned.table([(np.ones((8, 8), np.float32), code)])
    assert (entries[2][0] == 2.0).all() and (entries[3][0] == 0).all()
    other = ScratchTable([("new", (4, 4), "float32", 0)], [], 0, replanned)
    assert other.arena is not old.arena


def test_the_kept_table_holds_none_of_the_callers_arrays():
    y = np.zeros((8, 64), np.float32)
    for _ in range(2):  # the general call, then the warm one
        x = np.ones((16, 64), np.float32)
        twice_from_ones(x, y)
        gone = weakref.ref(x)
        del x
        gc.collect()
        assert gone() is None


def test_kept_tables_past_the_budget_let_go_of_the_least_recently_kept():
    news = [("new", (1024,), "float32", 0)]  # 4 KiB each
    kept = KeptTables(budget=10_000)
    first, second, third = (ScratchTable(news, [], 0) for _ in range(3))
    kept.keep(first)
    kept.keep(second)
    kept.keep(first)  # used again: now the most recent
    assert not (first.released or second.released)
    kept.keep(third)  # 12 KiB: the least recently kept goes
    assert second.released and not first.released and not third.released
    assert not second.fits(second.intermediates, second.extra)
    again = ScratchTable(news, [], 0, second)  # a new table: nothing taken from a released one
    assert again.arena.nbytes > 0 and (again.table([])[0][0] == 0).all()
    alone = KeptTables(budget=0)
    alone.keep(first)  # the table just kept stays, even alone past the budget
    assert not first.released
    alone.take(first)  # in use by a run: kept ones are let go of, not it
    alone.keep(third)
    assert not first.released
