"""What several benchmarks share: best-of timing and the tutorial's exp kernel."""

from __future__ import annotations

import time

import pypto.language as pl

NT, TR, TC = 8, 64, 128  # the tutorial kernel's input: NT row tiles of [TR, TC] fp32


def best_of(fn, n: int, *args) -> float:
    """The shortest of ``n`` timed calls of ``fn(*args)``, in seconds."""
    best = float("inf")
    for _ in range(n):
        t0 = time.perf_counter()
        fn(*args)
        best = min(best, time.perf_counter() - t0)
    return best


def cpu_split(run) -> tuple[float, dict[str, float]]:
    """One call of ``run()`` on this thread (the run's thread of a simulated run): its wall
    seconds and its host CPU seconds split by side (DataQueue::times) — "timing": the run's
    thread's own work (timing model, control flow, checks, ops done in place) without its
    spinning for the data thread; "data": the queued data work, on the data thread or taken
    over by the run's thread while it would have waited. Beside them, where the threads waited
    for each other: "full" (the run's thread waiting for a free slot of the queue), "result"
    (the run's thread waiting for queued work it needs done: a drain), "join" (the data thread
    waiting for the pieces of a split op the run's thread took), "idle" (the data thread out of
    work); and "drains", how many times the run's thread needed the queued work done."""
    from pypto import _native_testing

    before, cpu0 = _native_testing.data_queue_times(), time.thread_time()
    t0 = time.perf_counter()
    run()
    wall = time.perf_counter() - t0
    cpu = time.thread_time() - cpu0
    after = _native_testing.data_queue_times()
    d = {k: (v - before[k]) / 1e9 for k, v in after.items()}
    return wall, {
        "drains": after["drains"] - before["drains"],
        "timing": cpu - d["run_waiting_ns"] - d["run_helping_ns"],
        "data": d["data_cpu_ns"] - d["data_idle_ns"] - d["data_joining_ns"] + d["run_helping_ns"],
        "full": d["run_full_ns"],
        "result": d["run_waiting_ns"] - d["run_full_ns"],
        "join": d["data_joining_ns"],
        "idle": d["data_idle_ns"],
    }


def split_text(split: dict[str, float]) -> str:
    """The CPU split of cpu_split, and the least wall it allows on two otherwise idle cores
    (the sides overlap; only the data side's split pieces move between threads)."""
    timing, data = split["timing"], split["data"]
    floor = max(timing, (timing + data) / 2)
    waits = ", ".join(f"{k} {split[k]:5.3f}" for k in ("full", "result", "join", "idle"))
    return (
        f"CPU: timing {timing:5.3f} s, data {data:5.3f} s, "
        f"timing share {timing / (timing + data):4.0%}, 2-core floor {floor:5.3f} s | "
        f"waits (s): {waits}; {split['drains']:,} drains"
    )


def seed_input():
    """The tutorial kernel's input: [NT * TR, TC] fp32 of -1, 0 and 1 (exp of it is checked
    against numpy after a timed call)."""
    import numpy as np

    return (np.arange(NT * TR * TC) % 3 - 1).astype(np.float32).reshape(NT * TR, TC)


def process_cpu() -> float:
    """CPU seconds of this process and of the child processes it waited for (the compilers a
    first call runs)."""
    import resource

    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + kids.ru_utime + kids.ru_stime


def first_seed_call() -> tuple[float, float]:
    """One call of a new tutorial kernel object on the tutorial input: its (wall, process_cpu)
    seconds, the output checked against numpy's exp."""
    import numpy as np

    from pypto.runtime import RunConfig

    kernel, a = seed_kernel(), seed_input()
    out = np.zeros_like(a)
    config = RunConfig(platform="a2a3sim")
    t0, c0 = time.perf_counter(), process_cpu()
    kernel(a, out, config=config)
    t1, c1 = time.perf_counter(), process_cpu()
    assert np.allclose(out, np.exp(a), rtol=1e-6)
    return t1 - t0, c1 - c0


def seed_kernel(tiles: int = NT):
    """The tutorial's single_buffer kernel (exp, one row tile at a time) over ``tiles`` tiles; a
    new object on each call, so nothing is cached in-process."""

    @pl.jit
    def single_buffer(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            for i in pl.range(tiles):
                tile = pl.load(a, [i * TR, 0], [TR, TC])
                pl.store(pl.exp(tile), [i * TR, 0], out)
        return out

    return single_buffer
