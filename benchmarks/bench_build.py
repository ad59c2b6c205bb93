"""Building a program of many kernels: pypto's own parallel compile commands against ninja.

The kernels are those of one Qwen3 decode layer (examples/qwen3_decode_layer.py, short context:
the kernels do not depend on it), generated once. Each variant starts from the same build
folder (sources and ``build.ninja`` written by pypto, outputs removed) and runs every
compile+link edge with the same parallelism, each writing its depfile:

* ``direct``: ``pypto.kernel_build.ninja._run_commands``, what a cache miss runs today;
* ``ninja``: ``ninja -C <folder> -j N`` on the ``build.ninja`` pypto writes beside it (a fresh
  folder: no ``.ninja_log`` / ``.ninja_deps``);
* ``ninja no-op``: ninja again with every output up to date: what ninja's own dependency
  tracking would offer a rebuild;
* ``cache hit``: ``build_kernels`` of the same sources once they are in the kernel cache (what
  pypto does instead: content-addressed entries, headers checked through the depfiles);
* ``first call``: ``build_kernels`` into an empty cache (compiles, verifies, publishes).

Run: python benchmarks/bench_build.py [--jobs N] [--repeat R]     (best of R; never asserts)
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))


def layer_sources():
    """(name, C++) of every kernel of the decode layer, from its lowered program."""
    import qwen3_decode_layer as layer

    from pypto.codegen import kernel_sources
    from pypto.runtime import RunConfig

    s = layer.LayerShape(context=256)
    args = layer.layer_inputs(s)
    lowered = layer.make_layer(s).lower(*args.values(), config=RunConfig(platform="a2a3sim"))
    return kernel_sources(lowered)


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        times.append(fn())
    return min(times)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="parallel compiles (default: CPUs)")
    ap.add_argument("--repeat", type=int, default=3, help="runs per variant; the best is printed")
    a = ap.parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="bench-build-"))
    os.environ["PYPTO_CACHE_DIR"] = str(root / "cache")
    os.environ["PYPTO_CACHE_MAX_BYTES"] = "0"
    from pypto import kernel_build as build
    from pypto.kernel_build import KernelSource, build_kernels, installed_toolchain
    from pypto.kernel_build import ninja as direct
    from pypto.kernel_build.cache import plan

    sources = [KernelSource(name=n, code=c) for n, c in layer_sources()]
    tc = installed_toolchain()
    ninja_bin = shutil.which("ninja", path=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    folder = root / "build"
    folder.mkdir()

    def run_direct() -> float:
        jobs = [plan(src, tc, "a2a3sim", build.kernel_cache_dir()) for src in sources]
        for p in folder.glob("*"):  # outputs, depfiles, logs of the last variant
            if p.is_file():
                p.unlink()
        for job in jobs:  # what _run_build does before running the commands
            job.src_file = folder / "kernels" / f"{job.source.name}.cpp"
            job.src_file.parent.mkdir(exist_ok=True)
            job.src_file.write_bytes(job.data)
            job.out = folder / f"{job.source.name}.{job.key[:16]}.so"
        (folder / "build.ninja").write_text(direct._ninja_file(jobs, tc))
        t0 = time.perf_counter()
        problems = direct._run_commands(jobs, tc, a.jobs)
        took = time.perf_counter() - t0
        assert not problems and all(job.status == 0 for job in jobs), problems
        return took

    def run_ninja() -> float:
        run_direct()  # same sources, same build.ninja
        for p in folder.glob("*.so"):
            p.unlink()
        for p in (".ninja_log", ".ninja_deps"):
            (folder / p).unlink(missing_ok=True)
        return ninja_once()

    def ninja_once() -> float:
        t0 = time.perf_counter()
        subprocess.run([ninja_bin, "-C", str(folder), "-j", str(a.jobs)], check=True, capture_output=True)
        return time.perf_counter() - t0

    def first_call() -> float:
        shutil.rmtree(root / "cache", ignore_errors=True)
        t0 = time.perf_counter()
        build_kernels(sources, platform="a2a3sim")
        return time.perf_counter() - t0

    def cache_hit() -> float:
        t0 = time.perf_counter()
        build_kernels(sources, platform="a2a3sim")
        return time.perf_counter() - t0

    print(f"{len(sources)} kernels of the Qwen3 decode layer, {a.jobs} parallel compiles, best of {a.repeat}")
    rows = [("direct (today)", best(run_direct, a.repeat)), ("ninja", best(run_ninja, a.repeat))]
    rows.append(("ninja no-op", best(ninja_once, a.repeat)))
    rows.append(("first call (build_kernels)", best(first_call, a.repeat)))
    rows.append(("cache hit (build_kernels)", best(cache_hit, a.repeat)))
    base = rows[0][1]
    for label, seconds in rows:
        print(f"{label:28} {seconds * 1e3:9.1f} ms   {seconds / base:5.2f} x direct")
    shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
