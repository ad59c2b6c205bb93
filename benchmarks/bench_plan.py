"""Launch-plan benchmark: how the time to plan an orchestration grows with its task count.

The program has the shape of upstream's paged-attention decode: per (batch, KV block), reads of
inputs (a size, and the block a block table names), fresh intermediates, windows of the shared
query and output buffers sized from them and of a KV cache at that block (anywhere in it: the
windows of one buffer a plan has to search grow with the plan), and four kernels whose
dependencies the plan infers from the windows they read and write.
Each line plans it for more batches (4 tasks per KV block, 8 blocks a batch) and prints the
plan's wall time (best of --repeat), its time per task, and that against the smallest plan's:
about 1x means the plan grows linearly with its tasks (it was quadratic: every task was
checked against every earlier one). Then the same for the whole call of the compiled program,
twice: called again on the same inputs (the task list made for them is kept: only the simulated
run of the tasks — tiny kernels: mostly the chip's task scheduling, which re-tried every task
waiting for a core at each finish, one queue event each, and grew quadratic — and the report),
and with a value the orchestration reads changed (`config`'s query shift: planned again). Last, the
call at the middle size traced (RunConfig(trace=True): one OPPROF container per kernel
holding its thousands of short launches, then the whole-run files) against the untraced call,
with the traced call's process CPU time beside it (a slow disk's waits do not count there) and
the files' bytes per launch.

Run: python benchmarks/bench_plan.py [--batches 16,64,256] [--repeat 3]
Target: per-task time at 256 batches (8,192 tasks) <= 1.5x that at 16, for the plan and for
the calls. Never asserts.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("PYPTO_CACHE_DIR", tempfile.mkdtemp(prefix="pypto-bench-"))

import numpy as np  # noqa: E402
from _common import best_of  # noqa: E402

import pypto.language as pl  # noqa: E402
from pypto import ir  # noqa: E402
from pypto.compile.plan import plan_orchestration  # noqa: E402
from pypto.report.trace import launches as trace_launches  # noqa: E402
from pypto.runtime import RunConfig  # noqa: E402

BLOCKS, ROWS, DIM = 8, 16, 64
CACHE_BLOCKS = 256 * BLOCKS  # the KV cache's blocks, as many as the largest plan reads


@pl.function(type=pl.FunctionType.InCore)
def scores(
    q: pl.Tensor[[16, 64], pl.FP32],
    k: pl.Tensor[[16, 64], pl.FP32],
    s: pl.Out[pl.Tensor[[16, 64], pl.FP32]],
) -> pl.Tensor[[16, 64], pl.FP32]:
    total = pl.add(pl.load(q, [0, 0], [16, 64], target_memory=pl.MemorySpace.Vec),
                   pl.load(k, [0, 0], [16, 64], target_memory=pl.MemorySpace.Vec))  # fmt: skip
    return pl.store(total, [0, 0], s)


@pl.function(type=pl.FunctionType.InCore)
def softmax_part(
    s: pl.Tensor[[16, 64], pl.FP32], p: pl.Out[pl.Tensor[[16, 64], pl.FP32]]
) -> pl.Tensor[[16, 64], pl.FP32]:
    return pl.store(pl.exp(pl.load(s, [0, 0], [16, 64], target_memory=pl.MemorySpace.Vec)), [0, 0], p)


@pl.function(type=pl.FunctionType.InCore)
def accumulate(
    p: pl.Tensor[[16, 64], pl.FP32], acc: pl.InOut[pl.Tensor[[16, 64], pl.FP32]]
) -> pl.Tensor[[16, 64], pl.FP32]:
    total = pl.add(pl.load(acc, [0, 0], [16, 64], target_memory=pl.MemorySpace.Vec),
                   pl.load(p, [0, 0], [16, 64], target_memory=pl.MemorySpace.Vec))  # fmt: skip
    return pl.store(total, [0, 0], acc)


@pl.function(type=pl.FunctionType.InCore)
def finish(
    acc: pl.Tensor[[16, 64], pl.FP32], o: pl.Out[pl.Tensor[[16, 64], pl.FP32]]
) -> pl.Tensor[[16, 64], pl.FP32]:
    return pl.store(pl.load(acc, [0, 0], [16, 64], target_memory=pl.MemorySpace.Vec), [0, 0], o)


@pl.program
class Decode:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(
        self,
        query: pl.Tensor[[4096 + 16, 64], pl.FP32],
        config: pl.Tensor[[3], pl.INT64],
        cache: pl.Tensor[[CACHE_BLOCKS * 16, 64], pl.FP32],
        table: pl.Tensor[[CACHE_BLOCKS], pl.INT32],
        out: pl.Out[pl.Tensor[[4096, 64], pl.FP32]],
    ) -> pl.Tensor[[4096, 64], pl.FP32]:
        batches = pl.tensor.read(config, [0])
        rows = pl.tensor.read(config, [1])
        shift = pl.tensor.read(config, [2])  # where the query rows start: moves every window
        for b in pl.range(batches):
            acc = pl.create_tensor([rows, 64], dtype=pl.FP32)
            qi = pl.slice(query, [rows, 64], [b * rows + shift, 0])
            for blk in pl.range(8):
                rows = pl.tensor.read(config, [1])
                block = pl.tensor.read(table, [b * 8 + blk])  # a block table's read
                kv = pl.slice(cache, [rows, 64], [block * rows, 0])
                s = pl.create_tensor([rows, 64], dtype=pl.FP32)
                s = scores(qi, kv, s)
                p = pl.create_tensor([rows, 64], dtype=pl.FP32)
                p = softmax_part(s, p)
                accumulate(p, acc)
                oi = pl.slice(out, [rows, 64], [b * rows, 0])
                finish(acc, oi)
        return out


def arguments(batches: int, shift: int = 0) -> tuple[np.ndarray, ...]:
    query = np.zeros((4096 + 16, DIM), np.float32)
    cache = np.zeros((CACHE_BLOCKS * ROWS, DIM), np.float32)
    table = np.random.default_rng(0).permutation(CACHE_BLOCKS).astype(np.int32)  # blocks anywhere
    config = np.array([batches, ROWS, shift], np.int64)
    return query, config, cache, table, np.zeros((4096, DIM), np.float32)


def plan_seconds(batches: int, repeat: int) -> tuple[float, int]:
    best, tasks = float("inf"), 0
    for _ in range(repeat):
        t0 = time.perf_counter()
        plan = plan_orchestration(Decode, Decode.entry, {}, arguments(batches))
        best = min(best, time.perf_counter() - t0)
        tasks = len(plan.tasks)
    return best, tasks


def call_seconds(compiled, batches: int, repeat: int) -> tuple[float, float]:
    """(a call on the inputs of the last one: its plan kept, a call whose query shift changed:
    planned again), each the best of ``repeat``."""
    args = arguments(batches)
    compiled(*args)  # this size's kernels loaded
    kept = best_of(compiled, repeat, *args)
    moved = [arguments(batches, shift) for shift in (16, 0) * repeat]
    best = float("inf")
    for other in moved:  # each differs from the call before it where the plan read it
        t0 = time.perf_counter()
        compiled(*other)
        best = min(best, time.perf_counter() - t0)
    return kept, best


def best_cpu(fn, n: int) -> float:
    """The least process CPU time (every thread's) of ``n`` calls of ``fn()``, in seconds."""
    best = float("inf")
    for _ in range(n):
        t0 = time.process_time()
        fn()
        best = min(best, time.process_time() - t0)
    return best


def traced_ratio(batches: int, repeat: int) -> None:
    with tempfile.TemporaryDirectory(prefix="pypto-bench-trace-") as folder:
        compiled = ir.compile(Decode, platform="a2a3sim", output_dir=folder)
        args = arguments(batches)
        compiled(*args)
        untraced = best_of(compiled, repeat, *args)
        traced_cfg = RunConfig(platform="a2a3sim", trace=True)
        traced = best_of(lambda: compiled(*args, config=traced_cfg), repeat)
        cpu = best_cpu(lambda: compiled(*args, config=traced_cfg), repeat)
        report = compiled.last_report
        launches = len(trace_launches(report.tasks))
        written = [f for sub in ("trace", "report") for f in (Path(folder) / sub).rglob("*") if f.is_file()]
        files = sum(f.stat().st_size for f in written)
    print(
        f"traced call, {launches} launches in {len(report.trace_paths)} containers: {traced * 1e3:.0f} ms "
        f"against {untraced * 1e3:.0f} ms untraced ({traced / untraced:.1f}x; "
        f"{(traced - untraced) / launches * 1e6:.0f} us a launch); its process CPU {cpu * 1e3:.0f} ms; "
        f"files {files / launches / 1e3:.1f} kB a launch"
    )


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batches", default="16,64,256", help="comma-separated batch counts (at most 256)")
    ap.add_argument("--repeat", type=int, default=3, help="plans per figure; the fastest is shown")
    a = ap.parse_args(argv)
    sizes = [int(b) for b in a.batches.split(",")]
    if max(sizes) * ROWS > 4096:
        sys.exit("error: at most 256 batches (the query holds 4096 rows)")
    compiled = ir.compile(Decode, platform="a2a3sim")
    print(f"{'':>17} {'plan':>28} {'call, same inputs':>28} {'call, a read value changed':>28}")
    print(f"{'batches':>8} {'tasks':>8}" + f" {'ms':>9} {'us/task':>8} {'vs first':>9}" * 3)
    firsts: list[float] = []
    for n in sizes:
        seconds, tasks = plan_seconds(n, a.repeat)
        figures = [seconds, *call_seconds(compiled, n, a.repeat)]
        per_task = [f / tasks * 1e6 for f in figures]
        firsts = firsts or per_task
        cells = "".join(
            f" {f * 1e3:>9.1f} {t:>8.1f} {t / f0:>8.2f}x" for f, t, f0 in zip(figures, per_task, firsts)
        )
        print(f"{n:>8} {tasks:>8}{cells}")
    traced_ratio(sizes[len(sizes) // 2], a.repeat)


if __name__ == "__main__":
    main()
