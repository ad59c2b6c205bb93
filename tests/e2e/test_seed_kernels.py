"""The tutorial's kernels through the whole @pl.jit pipeline, with torch (the tutorial's check())
and with numpy, plus what the report must show about them."""

from __future__ import annotations

import numpy as np
import pytest
import seed_kernels as sk

import pypto.language as pl
from pypto.errors import BoundsCheckError, MemoryCapacityError
from pypto.ir.stmt import Program
from pypto.report.run_report import overlap_cycles
from pypto.runtime import RunConfig, RunReport

CFG = RunConfig(platform="a2a3sim")


def seed_input_numpy() -> np.ndarray:
    indices = np.arange(sk.ROWS * sk.TC, dtype=np.int64)
    return (indices % 3 - 1).astype(np.float32).reshape(sk.ROWS, sk.TC)


def test_seed_check_with_torch():
    torch = pytest.importorskip("torch")
    indices = torch.arange(sk.ROWS * sk.TC, dtype=torch.int64)
    a = (indices % 3 - 1).to(torch.float32).reshape(sk.ROWS, sk.TC)
    out = torch.zeros(sk.ROWS, sk.TC, dtype=torch.float32)
    result = sk.single_buffer(a, out, config=CFG)
    torch.testing.assert_close(out, torch.exp(a), rtol=1e-3, atol=1e-4)
    assert result is out


def test_single_buffer_with_numpy():
    a = seed_input_numpy()
    out = np.zeros_like(a)
    sk.single_buffer(a, out, config=CFG)
    np.testing.assert_allclose(out, np.exp(a), rtol=1e-6)


def test_tile_add_matches_numpy():
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((128, 128), dtype=np.float32) for _ in range(2))
    c = np.zeros_like(a)
    sk.tile_add(a, b, c, config=CFG)
    np.testing.assert_array_equal(c, a + b)


def test_single_buffer_serialises_load_and_compute():
    a = seed_input_numpy()
    sk.single_buffer(a, np.zeros_like(a), config=RunConfig(trace=True))
    rep = sk.single_buffer.last_report
    mte2, vec = rep.intervals("MTE2"), rep.intervals("VECTOR")
    assert len([1 for r in rep.tasks[0].trace.rows() if r["name"] == "TLOAD"]) == sk.NT
    assert overlap_cycles(mte2, vec) == 0  # one buffer: every load waits for the previous exp
    assert rep.hazards == []
    assert rep.cycles >= rep.pipe_busy["MTE2"] + 8 * 287  # loads and exps alternate


def test_report_fields():
    a = seed_input_numpy()
    sk.single_buffer(a, np.zeros_like(a), config=CFG)
    rep = sk.single_buffer.last_report
    assert set(rep.pipe_busy) == {"MTE2", "MTE1", "CUBE", "VECTOR", "FIXPIPE", "MTE3", "SCALAR"}
    assert rep.cycles > 0 and rep.instructions > 3 * sk.NT and len(rep.tasks) == 1
    assert "VECTOR" in str(rep) and f"{rep.cycles} cycles" in str(rep)


def test_last_report_is_each_calls_full_report():
    # The warm path builds last_report on first read: it must still be that call's report.
    a = seed_input_numpy()
    sk.single_buffer(a, np.zeros_like(a), config=CFG)
    sk.tile_add(a[:128], a[:128], np.zeros((128, 128), np.float32), config=CFG)
    sk.single_buffer(a, np.zeros_like(a), config=CFG)  # replaces the unread first report
    expect = sk.single_buffer.compile(a, np.zeros_like(a), config=CFG).run(a, np.zeros_like(a))
    rep = sk.single_buffer.last_report
    assert isinstance(rep, RunReport) and rep == expect and rep is sk.single_buffer.last_report
    assert sk.tile_add.last_report.cycles != rep.cycles


def test_compile_returns_the_cached_program_and_its_artifacts():
    a = seed_input_numpy()
    first = sk.single_buffer.compile(a, np.zeros_like(a), config=CFG)
    again = sk.single_buffer.compile(a, np.zeros_like(a), config=CFG)
    assert first is again
    assert first.param_names == ["a", "out"] and first.platform == "a2a3sim"
    assert isinstance(first.program, Program)
    assert sorted(p.name for p in (first.output_dir / "kernels").glob("*.cpp")) == [
        "single_buffer_incore_0.cpp"
    ]
    assert (first.output_dir / "report" / "perf_hints.log").exists()
    out = np.zeros_like(a)
    rep = first.run(a, out)
    np.testing.assert_allclose(out, np.exp(a), rtol=1e-6)
    assert rep.cycles == sk.single_buffer.last_report.cycles


def test_lower_returns_ir_only():
    a = seed_input_numpy()
    program = sk.single_buffer.lower(a, np.zeros_like(a), config=CFG)
    kernel = program.get("single_buffer_incore_0")
    assert kernel.kind.name == "AIV"
    ops = [
        c.op
        for c in __import__("pypto.ir", fromlist=["nodes_of"]).nodes_of(
            kernel, __import__("pypto.ir", fromlist=["Call"]).Call
        )
    ]
    assert "system.set_flag" in ops and "system.wait_flag" in ops


def test_load_window_outside_the_tensor_is_caught_before_running():
    a = seed_input_numpy()
    small = np.ascontiguousarray(a[: 4 * sk.TR])  # the kernel still walks NT=8 tiles
    out = np.full_like(small, 7.0)
    with pytest.raises(BoundsCheckError) as err:
        sk.single_buffer(small, out, config=CFG)
    msg = str(err.value)
    assert "reaching 512 > size 256" in msg and "seed_kernels.py:13:" in msg
    assert "tile = pl.load(a, [i * TR, 0], [TR, TC])" in msg
    assert (out == 7.0).all()  # nothing ran


def test_capacity_overflow_names_space_bytes_and_tiles():
    rng = np.random.default_rng(1)
    a, b = (rng.standard_normal((256, 128), dtype=np.float32) for _ in range(2))
    c = np.zeros((256, 128), np.float32)
    with pytest.raises(MemoryCapacityError, match=r"needs \d+ B of Vec but 188416 B are available"):
        sk.big_add(a, b, c, config=CFG)


def test_compile_returns_a_program_configured_as_asked():
    a = seed_input_numpy()
    traced = sk.single_buffer.compile(a, np.zeros_like(a), config=RunConfig(trace=True))
    plain = sk.single_buffer.compile(a, np.zeros_like(a), config=RunConfig())
    assert traced.config.trace and not plain.config.trace
    assert plain.run(a, np.zeros_like(a)).tasks[0].trace is None  # no records unless asked


BIG_ROWS = 16384  # [16384, 128] fp32 = 8 MiB: TSTORE writes it with streaming stores


@pl.jit
def big_exp(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(BIG_ROWS // 64):
            pl.store(pl.exp(pl.load(a, [i * 64, 0], [64, 128])), [i * 64, 0], out)
    return out


def test_store_into_a_big_misaligned_tensor():
    # The output starts 4 bytes past an aligned address: the streaming copy's unaligned head
    # and tail must land too, and nothing outside the tensor may be written.
    a = np.random.default_rng(1).uniform(-3, 3, (BIG_ROWS, 128)).astype(np.float32)
    buf = np.full(BIG_ROWS * 128 + 2, 7.0, np.float32)
    out = buf[1:-1].reshape(BIG_ROWS, 128)
    big_exp(a, out, config=CFG)
    np.testing.assert_allclose(out, np.exp(a), rtol=1e-6)
    assert buf[0] == 7.0 and buf[-1] == 7.0
