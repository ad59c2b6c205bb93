"""Double buffering in simulated cycles: the tutorial's kernels (tests/fixtures/seed_kernels.py)
and pl.pipeline at stage 2, 3 and 4, on both memory planners. Deterministic; printed.

Run: python benchmarks/bench_pipelining.py
The lower limit is the busiest pipe's busy cycles (MTE2: these kernels are transfer-bound);
targets: pipelined <= 0.80 x single_buffer and <= 1.10 x (busiest + one tile
through the other pipes); explicit_slots beats single_buffer.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "fixtures"))
import seed_kernels as sk  # noqa: E402

import pypto.language as pl  # noqa: E402
from pypto.passes import MemoryPlanner  # noqa: E402
from pypto.runtime import RunConfig  # noqa: E402


def staged(depth: int):
    @pl.jit
    def kernel(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            for i in pl.pipeline(sk.NT, stage=depth):
                tile = pl.load(a, [i * sk.TR, 0], [sk.TR, sk.TC])
                pl.store(pl.exp(tile), [i * sk.TR, 0], out)
        return out

    return kernel


KERNELS = {
    "single_buffer": sk.single_buffer,
    "pipelined (stage 2)": sk.pipelined,
    "pipelined (stage 3)": staged(3),
    "pipelined (stage 4)": staged(4),
    "explicit_slots": sk.explicit_slots,
}


def main() -> None:
    a = np.random.default_rng(0).uniform(-2, 2, (sk.ROWS, sk.TC)).astype(np.float32)
    for planner in MemoryPlanner:
        print(f"{planner.name} planner, {sk.NT} tiles of [{sk.TR}, {sk.TC}] fp32 on a2a3sim")
        print(f"  {'kernel':<21}{'cycles':>8}{'MTE2 busy':>11}{'/ lower limit':>15}{'/ single_buffer':>17}")
        base = None
        for name, kernel in KERNELS.items():
            out = np.zeros_like(a)
            kernel(a, out, config=RunConfig(memory_planner=planner))
            np.testing.assert_allclose(out, np.exp(a), rtol=1e-5)
            rep = kernel.last_report
            base = base or rep.cycles
            limit = max(rep.pipe_busy.values())
            print(f"  {name:<21}{rep.cycles:>8}{rep.pipe_busy['MTE2']:>11}{rep.cycles / limit:>15.2f}"
                  f"{rep.cycles / base:>17.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
