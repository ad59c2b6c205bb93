"""Quick start: two @pl.jit kernels compiled to C++, run on a simulated a2a3 core, checked
against torch/numpy, with the per-pipe cycle table of each run.

    pip install . && python examples/quickstart.py
"""

import argparse

import numpy as np

import pypto.language as pl
from pypto.runtime import RunConfig

NT, TR, TC = 8, 64, 128  # tiles in the loop, tile rows, tile cols
ROWS = NT * TR
CFG = RunConfig(platform="a2a3sim")


@pl.jit
def tile_add(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        x = pl.load(a, [0, 0], [128, 128])
        y = pl.load(b, [0, 0], [128, 128])
        pl.store(pl.add(x, y), [0, 0], c)
    return c


@pl.jit
def single_buffer(a: pl.Tensor, out: pl.Out[pl.Tensor]):  # the tutorial's baseline
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(NT):
            tile = pl.load(a, [i * TR, 0], [TR, TC])
            pl.store(pl.exp(tile), [i * TR, 0], out)
    return out


def seed_input():
    """The tutorial's input: binary-exact values in a stable range (torch when installed)."""
    try:
        import torch
    except ImportError:
        return (np.arange(ROWS * TC) % 3 - 1).astype(np.float32).reshape(ROWS, TC)
    indices = torch.arange(ROWS * TC, dtype=torch.int64)
    return (indices % 3 - 1).to(torch.float32).reshape(ROWS, TC)


def check(kernel) -> None:
    """The tutorial's check(): run the kernel and compare with exp."""
    a = seed_input()
    if isinstance(a, np.ndarray):
        out = np.zeros((ROWS, TC), np.float32)
        kernel(a, out, config=CFG)
        np.testing.assert_allclose(out, np.exp(a), rtol=1e-3, atol=1e-4)
    else:
        import torch

        out = torch.zeros(ROWS, TC, dtype=torch.float32)
        kernel(a, out, config=CFG)
        torch.testing.assert_close(out, torch.exp(a), rtol=1e-3, atol=1e-4)


def main() -> None:
    argparse.ArgumentParser(description=__doc__.split("\n\n")[0]).parse_args()
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((128, 128), dtype=np.float32) for _ in range(2))
    c = np.zeros_like(a)
    tile_add(a, b, c, config=CFG)
    np.testing.assert_array_equal(c, a + b)
    print("tile_add: OK")
    print(tile_add.last_report)

    check(single_buffer)
    print("single_buffer: OK")
    print(single_buffer.last_report)


if __name__ == "__main__":
    main()
