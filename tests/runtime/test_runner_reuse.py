"""A program's native runner keeps its core contexts, scheduler tables and kernel instances
between runs (the warm call runs the same runner every time): a run on a runner that has run
before is the run a new runner gives — the same outputs, cycles, cores and per-task figures —
whatever ran on it earlier, a run that failed part-way included. And a warm call's WarmSpec
carries its run options, into the run bound to it too."""

from __future__ import annotations

import gc
import threading

import numpy as np
import pytest

import pypto.language as pl
from pypto.errors import SimulationLimitError
from pypto.runtime import RunConfig, jit
from pypto.runtime.warm import _native_spec

CFG = RunConfig(platform="a2a3sim")
WIDE = 50  # more tasks than the platform has AIV cores: the last ones wait for a core


@pl.jit
def spread_then_add(a: pl.Tensor, b: pl.Out[pl.Tensor], c: pl.Out[pl.Tensor]):
    for i in pl.parallel(WIDE):
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.store(pl.exp(pl.load(a, [i * 16, 0], [16, 128])), [i * 16, 0], b)
    with pl.at(level=pl.Level.CORE_GROUP):
        pl.store(pl.adds(pl.load(b, [0, 0], [16, 128]), 1.0), [0, 0], c)
    return b, c


def inputs(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    a = np.random.default_rng(seed).uniform(-1, 1, (WIDE * 16, 128)).astype(np.float32)
    return a, np.zeros_like(a), np.zeros((16, 128), np.float32)


def new_runner(compiled):
    """A runner that has never run: the compiled program builds its runner again."""
    compiled.__dict__.pop("_native_cache", None)
    return compiled._native_tasks()[0]


def run(runner, compiled, args, **options) -> tuple[dict, list[np.ndarray]]:
    """The native results of one run on fresh copies of ``args``, and those arrays after it."""
    args = tuple(x.copy() for x in args)
    results = runner.run(compiled.marshal(args), **options)
    return results.to_dict(), list(args)


def assert_same_run(one: tuple[dict, list[np.ndarray]], other: tuple[dict, list[np.ndarray]]) -> None:
    assert one[0] == other[0]  # per task: core, cluster, start, end, cycles, pipes, memory
    for x, y in zip(one[1], other[1]):
        np.testing.assert_array_equal(x, y)


def test_runs_on_a_runner_that_ran_before_are_the_runs_of_a_new_one():
    compiled = spread_then_add.compile(*inputs(0), config=CFG)
    kept = compiled._native_tasks()[0]
    for seed in range(3):  # other inputs each time, on the same runner
        args = inputs(seed)
        again = run(kept, compiled, args)
        assert_same_run(again, run(new_runner(compiled), compiled, args))
        b, c = again[1][1:]
        np.testing.assert_allclose(b, np.exp(args[0]), rtol=1e-5)
        np.testing.assert_allclose(c, b[:16] + 1, rtol=1e-6)
        tasks = again[0]["tasks"]
        assert len(tasks) == WIDE + 1 and len({t["core"] for t in tasks}) > 1


def test_a_run_that_failed_part_way_leaves_nothing_to_the_next_run():
    compiled = spread_then_add.compile(*inputs(0), config=CFG)
    kept = compiled._native_tasks()[0]
    run(kept, compiled, inputs(1))
    with pytest.raises(SimulationLimitError):  # stops with other kernels suspended mid-way
        run(kept, compiled, inputs(2), max_instructions=4)
    with pytest.raises(SimulationLimitError):
        run(kept, compiled, inputs(2), max_cycles=6000)
    args = inputs(3)
    assert_same_run(run(kept, compiled, args), run(new_runner(compiled), compiled, args))
    traced = run(kept, compiled, args, record=True)  # a recorded run, then an unrecorded one
    assert all(t["records"] is not None for t in traced[0]["tasks"])
    assert_same_run(run(kept, compiled, args), run(new_runner(compiled), compiled, args))


@pl.jit
def add_one(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        pl.store(pl.adds(pl.load(a, [0, 0], [8, 64]), 1.0), [0, 0], out)
    return out


def test_a_warm_spec_runs_with_its_own_options():
    a = np.arange(8 * 64, dtype=np.float32).reshape(8, 64).copy()  # owns its data: warm
    out = np.zeros_like(a)
    add_one(a, out, config=CFG)
    add_one(a, out, config=CFG)  # the fast path is set up
    warm = add_one._pypto_compiled[jit._WARM]
    runner = add_one.compile(a, out, config=CFG)._native_tasks()[0]
    (task,) = runner.run_args(warm.spec, (a, out)).to_dict()["tasks"]
    assert task["records"] is None  # a plain call records nothing
    recorded = _native_spec(warm.tensors, warm.extra, (True, True, None, 0, 0))
    (task,) = runner.run_args(recorded, (a, out)).to_dict()["tasks"]
    assert task["records"]["table"].shape[0] == task["instructions"]
    limited = _native_spec(warm.tensors, warm.extra, (False, True, None, 0, 1))
    with pytest.raises(SimulationLimitError):
        runner.run_args(limited, (a, out))
    bound = runner.bind(limited)  # the warm call's form: the same run, the same error
    with pytest.raises(SimulationLimitError):
        bound((a, out))
    assert bound((a,)) is None  # an argument missing: nothing run
    with pytest.raises(TypeError):
        bound([a, out])
    add_one._pypto_compiled.clear()  # the program, its runner and the warm call forgotten ...
    del runner, limited, warm
    gc.collect()
    with pytest.raises(SimulationLimitError):  # ... but the bound run keeps what it runs alive
        bound((a, out))
    out[:] = 0
    add_one(a * 2, out, config=CFG)  # the warm call after all that
    np.testing.assert_array_equal(out, a * 2 + 1)


def test_results_a_caller_holds_are_never_those_of_a_later_run():
    """A runner reuses a results object of an earlier run only once nobody else holds it."""
    compiled = spread_then_add.compile(*inputs(0), config=CFG)
    runner = compiled._native_tasks()[0]
    args = inputs(1)
    recorded = runner.run(compiled.marshal(args), record=True)
    held = [runner.run(compiled.marshal(args)) for _ in range(3)]  # more than a runner keeps
    assert len({id(r) for r in [recorded, *held]}) == 4
    assert all(t["records"] is not None for t in recorded.to_dict()["tasks"])
    assert all(t["records"] is None for r in held for t in r.to_dict()["tasks"])
    dicts = [r.to_dict() for r in held]
    del recorded, held
    for _ in range(3):  # objects nobody holds, reused: each run's results are its own
        again = runner.run(compiled.marshal(args))
        assert again.to_dict() == dicts[0] and again.to_dict() is not dicts[0]
        assert [t.cycles for t in again.tasks] == [t["cycles"] for t in dicts[0]["tasks"]]
    assert dicts[1] == dicts[0]  # the dicts handed out stay as they were


def test_a_runner_run_on_other_threads_gives_the_runs_of_a_new_one():
    """A runner's kept scheduler and memory system move with its pool from thread to thread,
    and two runs at once (each with a pool of its own) leave one pool kept."""
    compiled = spread_then_add.compile(*inputs(0), config=CFG)
    kept = compiled._native_tasks()[0]
    args = inputs(4)
    expected = run(new_runner(compiled), compiled, args)
    got: list = []

    def one() -> None:
        got.append(run(kept, compiled, args))

    for _ in range(2):  # one after another, each on a thread of its own
        t = threading.Thread(target=one)
        t.start()
        t.join()
    both = [threading.Thread(target=one) for _ in range(2)]  # at once
    for t in both:
        t.start()
    for t in both:
        t.join()
    got.append(run(kept, compiled, args))  # and back on this thread
    assert len(got) == 5
    for one_run in got:
        assert_same_run(one_run, expected)


def _flag_task(so, **changes):
    from pypto import _native

    spec = dict(kernel_path=str(so), name=so.stem, tensors=[0], scalars=[], core=_native.CoreKind.aiv)
    return _native.Task(**{**spec, **changes})


def test_a_task_on_a_context_another_task_left_starts_as_on_a_new_one(fixture_kernel):
    """Tasks of one run take the contexts earlier tasks finished with (and a run the ones the
    run before kept): a flag the first kernel set and never waited for is gone for the next, so
    its wait on that flag deadlocks as it does on a new context. The pair runs twice on the same
    runner (the second run's contexts come from the first run's pool)."""
    from pypto import _native, platforms
    from pypto.errors import DeadlockError

    x = np.ones((8, 64), np.float32)
    plat = platforms.get("a2a3sim").to_native()
    left, waits = fixture_kernel("flag_left_set"), fixture_kernel("never_set")
    alone = _native.TaskRunner([_flag_task(left), _flag_task(left, deps=[0])], plat)
    for _ in range(2):
        assert len(alone.run([(x, 0)]).tasks) == 2  # a set never waited for is no error
    runner = _native.TaskRunner([_flag_task(left), _flag_task(waits, deps=[0])], plat)
    for _ in range(2):
        with pytest.raises(
            DeadlockError, match=r"WAIT_FLAG #1 at never_set.cpp:11 \(MTE2 -> VECTOR, event 3\)"
        ):
            runner.run([(x, 0)])
