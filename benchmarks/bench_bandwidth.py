"""What a memory-bound kernel gets from HBM on the simulated a2a3, beside the device evidence.

Three figures (docs/calibration.md, "What memory-bound kernels get"):

- a streaming add over every AIV core (48 blocks, each adding its own rows): the bytes HBM
  served over the makespan, against the achievable shared bandwidth the platform table gives
  (``hbm_bytes_per_cycle × hbm_efficiency``) and the nominal 1.6 TB/s;
- the Qwen3-14B down projection at decode ([16, 17408] x [17408, 5120] bf16, one task per 256
  output columns: 20 cube tasks streaming 8.9 MB of weights each), whose device run streams each
  task's weights in ~180 us with all 20 running together (hw-native-sys/pypto-lib, "bump
  Qwen3-14B decode_full scope-3 K_CHUNK 128 -> 256": 0.99 TB/s);
- pto-isa's device-fitted per-route curve bw(B) = peak·B/(K+B) priced on the device profile's
  GM transfer cases: how many of them it would put within ±10% of the swept figures.

Run: python benchmarks/bench_bandwidth.py [--skip-projection]   (the projection simulates 178 MB
of weights: about a minute on a 2-core host)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

import pypto.language as pl
from pypto import platforms
from pypto.runtime import RunConfig

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "fixtures"))
import qwen3_layer_kernels as lk  # noqa: E402
from stream_kernels import BLOCKS, COLS, ROWS, stream_add  # noqa: E402

TILES = 8  # each block adds 8 row tiles of 64 KiB fp32
DEVICE_DOWN_PROJ_US = 180.0  # pypto-lib: per-task exec of the 20 concurrent down_proj tasks
DEVICE_FAI_TBS = 218.8e6 / 235e-6 / 1e12  # pypto-lib: CANN FAI decode attention, 0.93 TB/s
DEVICE_DOWN_TBS = 20 * 17408 * 256 * 2 / (DEVICE_DOWN_PROJ_US * 1e-6) / 1e12  # 0.99 TB/s
NOMINAL_TBS = 1.6
# pto-isa include/pto/costmodel/arch_config.hpp, MakeFittedHillModel: (peak GiB/s, K bytes).
HILL = {"gm_to_ub": (247.16, 30643.0), "gm_to_l1": (28.61, 1107.0), "ub_to_gm": (28.19, 1755.0)}
SWEPT = {"gm_to_ub": "bw_gm_to_ub", "gm_to_l1": "bw_gm_to_l1", "ub_to_gm": "bw_ub_to_gm"}


def tbs(nbytes: float, cycles: int, plat) -> float:
    return nbytes / (cycles / plat.clock_hz) / 1e12


def achievable_tbs(plat) -> float:
    return plat.hbm_bytes_per_cycle * plat.hbm_efficiency * plat.clock_hz / 1e12


# The same runs with HBM at its nominal bandwidth: what the model gave before the efficiency.
NOMINAL = {"hbm_efficiency": 1.0}


def streaming_line(plat, overrides: dict | None = None) -> str:
    n = BLOCKS * TILES * ROWS
    x = np.ones((n, COLS), np.float32)
    z = np.zeros_like(x)
    stream_add(x, x.copy(), z, config=RunConfig(platform="a2a3sim", platform_overrides=overrides or {}))
    rep = stream_add.last_report
    assert np.array_equal(z, 2 * x)
    got = tbs(rep.memory["hbm_bytes"], rep.cycles, plat)
    return (
        f"streaming add, {BLOCKS} AIV blocks, {rep.memory['hbm_bytes'] / 2**20:.0f} MiB through HBM"
        f"{' (HBM at nominal)' if overrides else ''}: {rep.cycles} cycles = {got:.2f} TB/s "
        f"({got / NOMINAL_TBS:.0%} of the nominal {NOMINAL_TBS}); device kernels: "
        f"{DEVICE_FAI_TBS:.2f}-{DEVICE_DOWN_TBS:.2f} TB/s"
    )


def projection_line(plat, overrides: dict | None = None) -> str:
    s, t = lk.LayerShape(), lk.Tiling()
    k, n = s.intermediate, s.hidden
    proj = lk.projection(s, t, k, n, "down_proj")

    @pl.jit
    def down(x: pl.Tensor, w: pl.Tensor, y: pl.Out[pl.Tensor]):
        return proj(x, w, y)

    rng = np.random.default_rng(0)
    import torch

    x = torch.from_numpy(rng.uniform(-1, 1, (s.batch, k)).astype(np.float32)).to(torch.bfloat16)
    w = torch.from_numpy(rng.uniform(-0.05, 0.05, (k, n)).astype(np.float32)).to(torch.bfloat16)
    y = torch.zeros((s.batch, n), dtype=torch.float32)
    down(x, w, y, config=RunConfig(platform="a2a3sim", platform_overrides=overrides or {}))
    rep = down.last_report
    ref = x.float() @ w.float()
    assert torch.allclose(y, ref, rtol=2e-2, atol=2e-2)
    us = rep.cycles / plat.clock_hz * 1e6
    got = tbs(rep.memory["hbm_bytes"], rep.cycles, plat)
    return (
        f"down_proj [16, {k}] x [{k}, {n}] bf16, {n // t.n_block} tasks"
        f"{' (HBM at nominal)' if overrides else ''}: {rep.cycles} cycles = {us:.0f} us, "
        f"{got:.2f} TB/s; device ~{DEVICE_DOWN_PROJ_US:.0f} us ({us / DEVICE_DOWN_PROJ_US - 1:+.1%})"
    )


def hill_lines(plat) -> list[str]:
    """The fitted curve on the device profile's GM cases (rows of 512 B and 4 KiB, 1-256 KiB)."""
    gib = 2**30 / plat.clock_hz  # bytes per cycle per GiB/s
    inside, total = 0, 0
    for route, (peak, k) in HILL.items():
        swept = getattr(plat, SWEPT[route])
        for kib in (1, 4, 16, 64, 256):
            b = kib * 1024
            cycles = (k + b) / (peak * gib)  # b / (peak · b / (k + b))
            for _ in (512,) if kib == 1 else (512, 4096):
                total += 1
                inside += abs(cycles / (b / swept) - 1) <= 0.10
    return [
        f"pto-isa's fitted per-route curve on the {total} device GM cases: {inside}/{total} within "
        f"+-10% of the swept figures (their large-transfer limits: GM->UB "
        f"{HILL['gm_to_ub'][0] * gib:.0f}, GM->L1 {HILL['gm_to_l1'][0] * gib:.1f}, UB->GM "
        f"{HILL['ub_to_gm'][0] * gib:.1f} B/cycle against the swept {plat.bw_gm_to_ub:g} / "
        f"{plat.bw_gm_to_l1:g} / {plat.bw_ub_to_gm:g})"
    ]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--skip-projection", action="store_true", help="leave out the 178 MB down projection")
    a = ap.parse_args(argv)
    plat = platforms.get("a2a3sim")
    shared = plat.hbm_bytes_per_cycle * plat.hbm_efficiency
    print(
        f"HBM: nominal {plat.hbm_bytes_per_cycle:g} B/cycle x efficiency {plat.hbm_efficiency:g} = "
        f"{shared:.0f} B/cycle shared ({achievable_tbs(plat):.2f} TB/s)"
    )
    print(streaming_line(plat))
    print(streaming_line(plat, NOMINAL))
    if not a.skip_projection:
        print(projection_line(plat))
        print(projection_line(plat, NOMINAL))
    for line in hill_lines(plat):
        print(line)


if __name__ == "__main__":
    main()
