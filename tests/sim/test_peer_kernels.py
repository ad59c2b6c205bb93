"""pto-isa's Perf-Sim GEMM test kernels, ported to <pypto/kernel.hpp> (benchmarks/kernels/
peer_gemm.cpp), pinned under the pto-isa profile: a change to one of that profile's rules shows
here as a changed count. Perf-Sim's own figures and the comparison are benchmarks/
peer_perfsim.py's; docs/calibration.md explains each difference."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from pypto import platforms
from pypto.kernel_build import KernelSource, build_kernel
from pypto.runtime import run_kernel_file

PEER_GEMM = Path(__file__).resolve().parents[2] / "benchmarks" / "kernels" / "peer_gemm.cpp"


@pytest.fixture(scope="module")
def peer_gemm():
    return build_kernel(KernelSource(name="peer_gemm", path=PEER_GEMM), platform="a2a3sim")


def run(so, m, k, n, step_k, plat=None):
    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, (m, k)).astype(np.float16)
    b = rng.uniform(-1, 1, (k, n)).astype(np.float16)
    c = np.zeros((m, n), np.float32)
    plat = plat or platforms.get("a2a3sim", cost_profile="pto-isa")
    rep = run_kernel_file(so, [a, b, c, step_k], outputs={2}, platform=plat, core="aic", isolate=False)
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-2, atol=1e-2)
    return rep


@pytest.mark.parametrize(
    ("m", "k", "n", "step_k", "cycles", "busy"),
    [
        # Perf-Sim: 3024 cycles; MTE2 627, MTE1 321, CUBE 518, FIXPIPE 1614.
        (128, 64, 256, 1, 3024, {"MTE2": 629, "MTE1": 322, "CUBE": 518, "FIXPIPE": 1614}),
        # Perf-Sim: 87313 (its first load of the second tile waits for the first tile's store:
        # its test's GM tensors all start at address 0).
        (256, 4096, 256, 4, 84550, {"MTE2": 80320, "MTE1": 41216, "CUBE": 66304, "FIXPIPE": 3228}),
        # Perf-Sim: 139420 with its flags keyed by destination pipe and id; 182465 with the
        # accumulator's FIX->M flag on an id of its own, the schedule the flags mean.
        (1536, 256, 1024, 4, 179701, {"MTE2": 120480, "MTE1": 61824, "CUBE": 99456, "FIXPIPE": 77472}),
    ],
)
def test_ported_gemm_cycles_are_pinned(peer_gemm, m, k, n, step_k, cycles, busy):
    rep = run(peer_gemm, m, k, n, step_k)
    assert rep.cycles == cycles
    assert {pipe: rep.pipe_busy[pipe] for pipe in busy} == busy  # flags take no pipe time


@pytest.mark.parametrize(("priced", "elem_bytes"), [(None, 2), (0, 4), (4, 4)])
def test_fp32_accumulator_store_is_priced_at_two_bytes_an_element(peer_gemm, priced, elem_bytes):
    """pto-isa prices an L0C -> GM store by elements x 2 bytes, whatever the output dtype; the
    field's 0 prices the bytes written (4 per fp32 element), as the device profile does."""
    plat = platforms.get("a2a3sim", cost_profile="pto-isa")
    if priced is not None:
        plat = plat.with_overrides(fixpipe_gm_priced_elem_bytes=priced)
    fixpipe = run(peer_gemm, 128, 64, 256, 1, plat).pipe_busy["FIXPIPE"]
    assert fixpipe == int(np.ceil(128 * 256 * elem_bytes / plat.bw_l0c_to_gm))
