"""examples/gemm.py: the tuned GEMM (L1 K-blocks, L0 fed by slices of them, both double-
buffered) gives torch's numbers, runs one task per AIC core, and its L0 feeds are MTE1
extracts overlapping the cube. Run at 768^3 (the example's own sizes are 1536^3 and 3072^3,
through the same code)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

from pypto.report.run_report import overlap_cycles
from pypto.runtime import RunConfig

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "gemm.py"
SIZE = 768


@pytest.fixture(scope="module")
def gemm_example():
    spec = importlib.util.spec_from_file_location("gemm_example", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # inspect finds the kernel source through the module
    spec.loader.exec_module(module)
    return module


def test_gemm_matches_the_fp32_reference_with_one_task_per_aic_core(gemm_example, capsys):
    gemm_example.main([SIZE])  # prints the report; asserts relative error <= 1e-3 itself
    out = capsys.readouterr().out
    assert f"GEMM {SIZE}^3 fp16 -> fp32 on 18 AIC cores" in out and "MTE1" in out
    c, ref, _, report = gemm_example.run(SIZE, seed=1)
    assert gemm_example.relative_error(c, ref) <= 1e-3
    np.testing.assert_allclose(c, ref, rtol=1e-3, atol=1e-3 * np.abs(ref).max())
    assert {t.core_type for t in report.tasks} == {"AIC"} and len({t.core for t in report.tasks}) == 18
    assert report.hazards == []


def test_torch_reference_when_installed(gemm_example):
    torch = pytest.importorskip("torch")
    c, _, lib, _ = gemm_example.run(256 * 2)
    assert lib == "torch"
    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, (512, 512)).astype(np.float16)
    b = rng.uniform(-1, 1, (512, 512)).astype(np.float16)
    ref = (torch.from_numpy(a).float() @ torch.from_numpy(b).float()).numpy()
    assert gemm_example.relative_error(c, ref) <= 1e-3


def test_l0_is_fed_by_double_buffered_mte1_extracts_overlapping_the_cube(gemm_example):
    kernel = gemm_example.make_gemm(SIZE, SIZE, SIZE)
    a = np.ones((SIZE, SIZE), np.float16)
    c = np.zeros((SIZE, SIZE), np.float32)
    compiled = kernel.compile(a, a, c, config=RunConfig())
    (src,) = (compiled.output_dir / "kernels").glob("*.cpp")
    text = src.read_text()
    lefts = {line.split(",")[-1].strip(" );") for line in text.splitlines() if "Tile v_a_l0" in line}
    assert text.count("TEXTRACT(") >= 4 and len(lefts) >= 2  # at least two L0A buffers: double-buffered
    assert not (compiled.output_dir / "report" / "perf_hints.log").read_text().strip()  # no PH-MR-001
    report = compiled.run(a, a, c, trace=True)
    np.testing.assert_array_equal(c, np.full((SIZE, SIZE), SIZE, np.float32))
    task = report.tasks[0]
    assert task.trace.intervals("MTE1") and task.pipe_busy["CUBE"] > 0
    assert overlap_cycles(task.trace.intervals("MTE1"), task.trace.intervals("CUBE")) > 0
    assert overlap_cycles(task.trace.intervals("MTE2"), task.trace.intervals("CUBE")) > 0


def test_the_peeled_form_costs_what_the_unpeeled_one_does_within_one_k_block(gemm_example):
    # one block of C and six L1 K blocks: the peeled pipeline runs two double-buffered trips
    # and one leftover. Its first loads must not wait for the peeled block's L0 feeds, nor its
    # leftover for the last trip's: the two forms then differ by less than one K block.
    cycles = _both_forms(gemm_example, 128, 256, 1536, seed=2)
    assert abs(cycles[1] - cycles[0]) <= gemm_example.k_block_cycles()


def test_with_several_blocks_of_c_per_core_the_forms_cost_the_same(gemm_example, monkeypatch):
    # three blocks of C on one core. Each block's first loads overlap the previous block's
    # last matmuls and its store (the K loop's flags are not drained at the end of a block),
    # the peeled pipeline's leftover waits only for its own stage's extracts, and the peeled
    # block's extracts wait only for the matmul whose L0 buffer they take: the peeled block
    # then costs what the first trip of the unpeeled loop does, block after block.
    monkeypatch.setattr(gemm_example, "CORES", 1)
    cycles = _both_forms(gemm_example, 384, 256, 1536, seed=3)
    assert cycles == [57796, 57734]  # the cold head (4829) + 3 x 6 L1 K blocks, MTE2 busy 46296 of them
    assert abs(cycles[1] - cycles[0]) <= gemm_example.k_block_cycles() // 10


def _both_forms(gemm_example, m: int, n: int, k: int, seed: int) -> list[int]:
    """The cycles of the unpeeled and the peeled GEMM on the same data, each checked against
    numpy, free of hazards and run as one task per block of C."""
    rng = np.random.default_rng(seed)
    a = rng.uniform(-1, 1, (m, k)).astype(np.float16)
    b = rng.uniform(-1, 1, (k, n)).astype(np.float16)
    ref = a.astype(np.float32) @ b.astype(np.float32)
    cycles = []
    for make in (gemm_example.make_gemm, gemm_example.make_gemm_peeled):
        c = np.zeros((m, n), np.float32)
        kernel = make(m, n, k)
        kernel(a, b, c)
        assert gemm_example.relative_error(c, ref) <= 1e-3
        assert kernel.last_report.hazards == []
        blocks = (m // gemm_example.BM) * (n // gemm_example.BN)
        assert len(kernel.last_report.tasks) == min(gemm_example.CORES, blocks)  # one per core
        cycles.append(kernel.last_report.cycles)
    return cycles


def test_a_k_walk_of_one_l1_load_compiles_and_matches(gemm_example):
    """At 256^3 the K walk is one L1 load: the outer pl.pipeline(stage=2) loop has fewer trips
    than stages, so its only copy is a leftover clone around the inner pipelined loop."""
    c, ref, _, report = gemm_example.run(256, seed=2)
    np.testing.assert_allclose(c, ref, rtol=1e-3, atol=1e-3 * np.abs(ref).max())
    assert report.hazards == [] and len(report.tasks) == 2


def test_the_peeled_form_compiles_when_k_is_one_l1_load(gemm_example):
    # K = 256 is one L1 K block: the peeled form's pipeline over the remaining L1 loads runs
    # from 1 to 1, no trips, around the pipelined L0 loop; all of K is the peeled block
    cycles = _both_forms(gemm_example, 256, 256, 256, seed=4)
    assert abs(cycles[1] - cycles[0]) <= gemm_example.k_block_cycles()
