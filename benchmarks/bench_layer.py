"""One Qwen3-14B decode layer at real size (examples/qwen3_decode_layer.py): the simulated
makespan, the per-kernel table and the rooflines, and what simulating it costs the host
(wall, instructions/s, peak RSS, the compile of a new layer object from the program cache (its
config, a dataclass, recorded by value), and a second run's host CPU split between the timing
model and the data work: benchmarks/_common.cpu_split).

Run: python benchmarks/bench_layer.py [--context 4096] [--sweep]
Targets: the layer simulates in <= 60 s of wall time on a 2-core host (the run of the compiled
layer: every instruction's work on the real arrays and its timing), with a peak RSS <= 8 GiB.
Instructions/s is the simulated instructions over that wall time. The peak RSS is the process's:
the inputs (bf16 weights 0.66 GB, KV cache 0.27 GB at context 4096), the layer's intermediates,
torch's fp32 copy of one weight at a time for the reference, and the sweep's copy of the cache.
``--sweep`` adds ``pypto.tune.sweep`` over the projections' column block.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
import qwen3_decode_layer as layer  # noqa: E402
from _common import cpu_split, split_text  # noqa: E402

from pypto.runtime import RunConfig  # noqa: E402

WALL_TARGET_S = 60.0
RSS_TARGET_GIB = 8.0


def peak_rss_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # Linux: KiB


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--context", type=int, default=4096)
    ap.add_argument("--sweep", action="store_true", help="also sweep the projections' column block")
    a = ap.parse_args(argv)
    s = layer.LayerShape(context=a.context)
    t0 = time.perf_counter()
    args = layer.layer_inputs(s)
    made = time.perf_counter() - t0
    out, report, wall, args = layer.run(s, args=args)
    err = layer.error(out, layer.reference(s, args), args["x"])
    print(f"Qwen3-14B decode layer, batch {s.batch}, context {s.context}, {layer.TILING}")
    print(report)
    print(layer.roofline_line(s, report))
    print(f"error vs torch {err:.1e} (tolerance {layer.TOLERANCE:.0e}); inputs made in {made:.1f} s")
    ips = report.instructions / wall
    print(f"simulated in {wall:.1f} s (target <= {WALL_TARGET_S:.0f} s): {ips / 1e3:.0f} k instructions/s")
    again = layer.make_layer(s, layer.TILING)  # the same program: a program cache hit
    cfg = RunConfig(platform="a2a3sim")
    t0 = time.perf_counter()
    again.compile(*args.values(), config=cfg)
    hit = time.perf_counter() - t0
    print(f"compile of a new layer object (the program cache, as in a new process): {hit * 1e3:.0f} ms")
    wall2, split = cpu_split(lambda: again(*args.values(), config=cfg))
    print(f"run again: {wall2:.1f} s wall; {split_text(split)}")
    if a.sweep:
        print(layer.sweep_n_block(s, args=args).format())
    rss = peak_rss_gib()
    print(f"peak RSS {rss:.2f} GiB (target <= {RSS_TARGET_GIB:.0f} GiB)")
    assert err <= layer.TOLERANCE and wall <= WALL_TARGET_S and rss <= RSS_TARGET_GIB


if __name__ == "__main__":
    main()
