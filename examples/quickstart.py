"""Quick start: build a hand-written tile kernel, run it on a simulated a2a3 core over numpy
arrays, check the numbers against numpy and print where the cycles went."""

from pathlib import Path

import numpy as np

from pypto.runtime import run_kernel_file
from pypto.runtime.build import KernelSource, build_kernel

HERE = Path(__file__).resolve().parent


def main() -> None:
    rng = np.random.default_rng(0)
    a = rng.standard_normal((128, 128), dtype=np.float32)
    b = rng.standard_normal((128, 128), dtype=np.float32)
    c = np.zeros_like(a)

    so = build_kernel(
        KernelSource(name="tile_add", path=HERE / "kernels" / "tile_add.cpp"), platform="a2a3sim"
    )
    report = run_kernel_file(so, [a, b, c], outputs={2}, platform="a2a3sim", record=True)

    np.testing.assert_allclose(c, a + b, rtol=0, atol=0)
    print("tile_add: OK (matches numpy exactly)")
    print(report)


if __name__ == "__main__":
    main()
