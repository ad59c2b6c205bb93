"""@pl.jit benchmarks: first-call latency, warm-call overhead, a big exp vs numpy.

Run: python benchmarks/bench_jit.py      (prints a table; never asserts on time)
Targets: the first call of the tutorial kernel in a new process with a cold cache (parse + passes
+ codegen + C++ build) <= 150 ms; the first call of an unchanged kernel in a new process
(served by the program cache) <= 10 ms; `import pypto.language` <= 30 ms; a warm call of a
tiny kernel <= 5 us (printed in pieces, with its ratio to the target), and of the same kernel as
a compiled @pl.program (upstream's `compiled(*tensors)`, on numpy arrays and on CPU torch
tensors); a warm exp over 16 MiB <= 2x numpy.exp.

The new-process numbers come from real subprocesses (best of several; each also reports its
CPU time — its own plus the compiler's — which a loaded machine inflates less than wall
time). They run with bytecode caching on, as an installed package does, whatever
PYTHONDONTWRITEBYTECODE says here.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

os.environ.setdefault("PYPTO_CACHE_DIR", tempfile.mkdtemp(prefix="pypto-bench-"))

import numpy as np  # noqa: E402
from _common import TC, TR, best_of, seed_input, seed_kernel  # noqa: E402

import pypto.language as pl  # noqa: E402
from pypto import ir  # noqa: E402
from pypto.runtime import RunConfig, jit  # noqa: E402

HERE = Path(__file__).resolve().parent
CFG = RunConfig(platform="a2a3sim")
BIG_TILES = 512  # 512 x [64, 128] fp32 = 16 MiB


@pl.jit
def tiny(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        x = pl.load(a, [0, 0], [8, 64])
        pl.store(pl.adds(x, 1.0), [0, 0], out)
    return out


big_exp = seed_kernel(BIG_TILES)

CHILD = f"""
import resource
import sys
import time


def cpu():  # this process and the compilers it ran
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + kids.ru_utime + kids.ru_stime


t0, c0 = time.perf_counter(), cpu()
import numpy as np
import pypto.language as pl
t1, c1 = time.perf_counter(), cpu()

sys.path.insert(0, {str(HERE)!r})
from _common import first_seed_call

wall, cpu_s = first_seed_call()
print("RESULT", wall, cpu_s, t1 - t0, c1 - c0)
"""

IMPORT_ONLY = """
import time
t0, c0 = time.perf_counter(), time.process_time()
import pypto.language
print("RESULT", time.perf_counter() - t0, time.process_time() - c0)
"""


def child(code: str, cache: Path, folder: Path) -> list[float]:
    """Runs ``code`` in a new interpreter; its ``RESULT`` numbers."""
    script = folder / "child.py"
    script.write_text(textwrap.dedent(code))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYPTO_CACHE_DIR"] = str(cache)
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, check=True)
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT"))
    return [float(x) for x in line.split()[1:]]


def new_process_calls(trials: int = 5) -> dict[str, tuple[float, float]]:
    """Best (wall, cpu) seconds: cold first call, cached first call, import of pypto.language."""
    folder = Path(tempfile.mkdtemp(prefix="pypto-bench-child-"))
    child(CHILD, folder / "warmup", folder)  # writes the .pyc files, as an install would have
    cold = [child(CHILD, folder / f"cold{i}", folder) for i in range(trials)]
    cached = [child(CHILD, folder / "cold0", folder) for _ in range(trials)]
    imports = [child(IMPORT_ONLY, folder / "cold0", folder) for _ in range(trials)]
    return {
        "cold": (min(r[0] for r in cold), min(r[1] for r in cold)),
        "cached": (min(r[0] for r in cached), min(r[1] for r in cached)),
        "import": (min(r[0] for r in imports), min(r[1] for r in imports)),
    }


def first_call() -> tuple[float, float]:
    a = seed_input()
    kernel = seed_kernel()
    t0 = time.perf_counter()
    kernel(a, np.zeros_like(a), config=CFG)
    cold = time.perf_counter() - t0
    kernel = seed_kernel()  # new object: parse + passes + codegen again, build cache hit
    t0 = time.perf_counter()
    kernel(a, np.zeros_like(a), config=CFG)
    return cold, time.perf_counter() - t0


WARM_TARGET_US = 5.0


def warm_call() -> dict[str, float]:
    """Seconds of a warm call of ``tiny`` and of its pieces, each timed on its own as the call
    runs it: the native run (the call's own run bound to its runner and WarmSpec, with the
    native argument checks and tensor table of the spec), the Python checks (the warm fast
    path of ``pypto.runtime.warm`` with its native run replaced by a stand-in: scalars, module
    constants, the environment, traffic, the report builder) and the report (built only when
    ``last_report`` is read, so not part of the call). Each is the best batch of WARM_BATCH
    calls over WARM_ROUNDS rounds that time the call and its pieces in turn, so a busy spell
    of the host falls on all of them alike (timed one after another, the pieces' best could
    add up to more than the call's). ``dispatch`` is the rest of the call: the layers from
    ``tiny(...)`` to the fast path."""
    a = np.ones((8, 64), np.float32)
    out = np.zeros_like(a)
    tiny(a, out, config=CFG)
    tiny(a, out, config=CFG)  # the fast path is kept from the second call on
    compiled = tiny.compile(a, out, config=CFG)
    warm = tiny._pypto_compiled[jit._WARM]
    results = warm.run_args((a, out))

    pieces = {
        "call": lambda: tiny(a, out, config=CFG),
        "native": lambda: warm.run_args((a, out)),
        "checks": lambda: warm.call(tiny, (a, out)),
        "report": lambda: compiled.launch_report(results, False, (0, 0)),
    }
    best = dict.fromkeys(pieces, float("inf"))
    native = warm.run_args
    for _ in range(WARM_ROUNDS):
        for name, fn in pieces.items():
            if name == "checks":  # the fast path with a stand-in for its native run
                warm.run_args = lambda args: results
            t0 = time.perf_counter()
            for _ in range(WARM_BATCH):
                fn()
            best[name] = min(best[name], (time.perf_counter() - t0) / WARM_BATCH)
            warm.run_args = native
    tiny._pypto_compiled.pop(jit._WARM)  # the next call sets the fast path up again
    best["dispatch"] = best["call"] - best["checks"] - best["native"]
    return best


WARM_ROUNDS, WARM_BATCH = 60, 50


@pl.program
class Tiny:  # ``tiny`` as a @pl.program, for upstream's compiled(*tensors)
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(
        self, a: pl.Tensor[[8, 64], pl.FP32], out: pl.Out[pl.Tensor[[8, 64], pl.FP32]]
    ) -> pl.Tensor[[8, 64], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP):
            t: pl.Tile[[8, 64], pl.FP32] = pl.tile.load(a, [0, 0], [8, 64])
            pl.tile.store(pl.tile.adds(t, 1.0), [0, 0], out)
        return out


def warm_program_call(torch_tensors: bool = False) -> float:
    """Seconds of a warm call of ``Tiny`` compiled (``ir.compile``), best batch as warm_call's;
    on CPU torch tensors, as upstream's callers pass them, when ``torch_tensors``."""
    compiled = ir.compile(Tiny, platform="a2a3sim")
    a = np.ones((8, 64), np.float32)
    out = np.zeros_like(a)
    if torch_tensors:
        import torch

        a, out = torch.from_numpy(a), torch.from_numpy(out)
    compiled(a, out)
    best = float("inf")
    for _ in range(WARM_ROUNDS):
        t0 = time.perf_counter()
        for _ in range(WARM_BATCH):
            compiled(a, out)
        best = min(best, (time.perf_counter() - t0) / WARM_BATCH)
    return best


def big_exp_ratio() -> tuple[float, float]:
    a = np.random.default_rng(0).uniform(-3, 3, (BIG_TILES * TR, TC)).astype(np.float32)
    out = np.zeros_like(a)
    big_exp(a, out, config=CFG)
    ours = best_of(lambda: big_exp(a, out, config=CFG), 5)
    ref_out = np.empty_like(a)
    ref = best_of(lambda: np.exp(a, out=ref_out), 5)
    return ours, ref


def main() -> None:
    news = new_process_calls()
    for key, label, target in (
        ("cold", "new process, first call, cold cache (compile + C++ build)", "target <= 150, goal 100"),
        ("cached", "new process, first call, unchanged kernel (program cache)", "target <= 10"),
        ("import", "new process, import pypto.language", "target <= 30"),
    ):
        wall, cpu = news[key]
        print(f"{label}: {wall * 1e3:.0f} ms (cpu {cpu * 1e3:.0f} ms)   {target}")
    cold, warm_compile = first_call()
    print(f"in process, first call of the tutorial kernel (cold build): {cold * 1e3:.0f} ms")
    print(f"in process, first call of a new kernel object (cache hit): {warm_compile * 1e3:.1f} ms")
    t = {k: v * 1e6 for k, v in warm_call().items()}
    print(
        f"warm call, tiny kernel: {t['call']:.1f} us = Python checks {t['checks']:.1f} + native run "
        f"{t['native']:.1f} + dispatch {t['dispatch']:.1f}; report when read {t['report']:.1f} us; "
        f"{t['call'] / WARM_TARGET_US:.2f}x the target of {WARM_TARGET_US:.0f} us"
    )
    program = warm_program_call() * 1e6
    print(
        f"warm call, the same kernel as a compiled @pl.program (compiled(a, out)): {program:.1f} us; "
        f"{program / WARM_TARGET_US:.2f}x the target of {WARM_TARGET_US:.0f} us"
    )
    try:
        on_torch = warm_program_call(torch_tensors=True) * 1e6
        print(f"warm call, compiled(a, out) on CPU torch tensors: {on_torch:.1f} us (viewed as numpy arrays)")
    except ImportError:
        print("warm call on torch tensors: torch not installed")
    ours, ref = big_exp_ratio()
    print(
        f"exp over 16 MiB: pypto {ours * 1e3:.2f} ms, numpy {ref * 1e3:.2f} ms, ratio {ours / ref:.2f}"
        "   target <= 2.0"
    )


if __name__ == "__main__":
    main()
