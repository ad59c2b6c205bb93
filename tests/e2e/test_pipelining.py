"""Double buffering end to end (docs/double_buffering.md): pl.pipeline
and explicit slots compute the right numbers, overlap their loads with compute, and the
capacity gate says what did not fit (PH-MR-001)."""

from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from seed_kernels import NT, ROWS, TC, TR, explicit_slots, pipelined, single_buffer  # verbatim

import pypto.language as pl
from pypto.passes import MemoryPlanner
from pypto.report.run_report import overlap_cycles
from pypto.runtime import RunConfig

CFG = RunConfig(platform="a2a3sim")
# Every kernel here is one the PTOAS planner allows (one slot per iteration), so each runs on both.
on_both_planners = pytest.mark.parametrize("planner", list(MemoryPlanner), ids=lambda p: p.name)


def cfg(planner: MemoryPlanner, **kw) -> RunConfig:
    return RunConfig(platform="a2a3sim", memory_planner=planner, **kw)


@pl.jit
def three_stages(a: pl.Tensor, out: pl.Out[pl.Tensor]):  # 8 tiles: 2 outer trips + 2 leftovers
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.pipeline(NT, stage=3):
            tile = pl.load(a, [i * TR, 0], [TR, TC])
            pl.store(pl.exp(tile), [i * TR, 0], out)
    return out


@pl.jit
def dynamic_trips(a: pl.Tensor, out: pl.Out[pl.Tensor], n: pl.Scalar[pl.INDEX]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.pipeline(n, stage=3):
            tile = pl.load(a, [i * TR, 0], [TR, TC])
            pl.store(pl.exp(tile), [i * TR, 0], out)
    return out


@pl.jit
def read_trips(a: pl.Tensor, counts: pl.Tensor[[1], pl.INT32], out: pl.Out[pl.Tensor]):
    """The trip count is an INT32 element read in the kernel, as paged-cache kernels read theirs."""
    with pl.at(level=pl.Level.CORE_GROUP):
        n = pl.read(counts, [0])
        for i in pl.pipeline(0, n, stage=2):
            tile = pl.load(a, [i * TR, 0], [TR, TC])
            pl.store(pl.exp(tile), [i * TR, 0], out)
    return out


@pl.jit
def carried_sum(a: pl.Tensor, out: pl.Out[pl.Tensor]):  # init_values chain through the clones
    with pl.at(level=pl.Level.CORE_GROUP):
        acc = pl.load(a, [0, 0], [TR, TC])
        for i, (s,) in pl.pipeline(1, NT - 1, stage=2, init_values=(acc,)):
            tile = pl.load(a, [i * TR, 0], [TR, TC])
            s2 = pl.add(s, tile)
            s = pl.yield_(s2)
        pl.store(s, [0, 0], out)
    return out


def _input() -> np.ndarray:
    return (np.arange(ROWS * TC, dtype=np.int64) % 3 - 1).astype(np.float32).reshape(ROWS, TC)


def _own(rep) -> int:
    """The kernel's own cycles: the run after its core's cold head."""
    return rep.cycles - min(t.start for t in rep.tasks)


def _run(kernel, *extra, config=CFG):
    a = _input()
    out = np.zeros_like(a)
    kernel(a, out, *extra, config=config)
    return a, out, kernel.last_report


@on_both_planners
@pytest.mark.parametrize("kernel", [pipelined, explicit_slots, three_stages], ids=lambda k: k.__name__)
def test_seed_check_with_torch(kernel, planner):
    torch = pytest.importorskip("torch")
    a = (torch.arange(ROWS * TC, dtype=torch.int64) % 3 - 1).to(torch.float32).reshape(ROWS, TC)
    out = torch.zeros(ROWS, TC, dtype=torch.float32)
    kernel(a, out, config=cfg(planner))
    torch.testing.assert_close(out, torch.exp(a), rtol=1e-3, atol=1e-4)


@on_both_planners
@pytest.mark.parametrize("kernel", [pipelined, explicit_slots, three_stages], ids=lambda k: k.__name__)
def test_numpy_and_race_free(kernel, planner):
    a, out, rep = _run(kernel, config=cfg(planner, trace=True))
    np.testing.assert_allclose(out, np.exp(a), rtol=1e-6)
    assert rep.hazards == []


@on_both_planners
@pytest.mark.parametrize("n", [0, 1, 2, 3, 5, 7, 8])
def test_dynamic_trip_count(n, planner):
    a, out, rep = _run(dynamic_trips, n, config=cfg(planner))
    want = np.zeros_like(a)
    want[: n * TR] = np.exp(a[: n * TR])
    np.testing.assert_allclose(out, want, rtol=1e-6)
    assert rep.hazards == []


@pytest.mark.parametrize("n", [0, 3, 8])
def test_int32_trip_count_read_in_the_kernel(n):
    a = _input()
    out = np.zeros_like(a)
    read_trips(a, np.array([n], np.int32), out, config=CFG)
    want = np.zeros_like(a)
    want[: n * TR] = np.exp(a[: n * TR])
    np.testing.assert_allclose(out, want, rtol=1e-6)


@on_both_planners
def test_loop_carried_values_chain_through_clones(planner):
    a, out, _ = _run(carried_sum, config=cfg(planner))
    want = a.reshape(NT, TR, TC)[: NT - 1].sum(axis=0)
    np.testing.assert_allclose(out[:TR], want, rtol=1e-6)


@on_both_planners
@pytest.mark.parametrize("kernel", [pipelined, three_stages], ids=lambda k: k.__name__)
def test_pipelined_is_bounded_by_its_busiest_pipe(planner, kernel):
    """three_stages too: its two leftover clones wait only for their own clone's storage."""
    _, _, base = _run(single_buffer, config=cfg(planner))
    _, _, rep = _run(kernel, config=cfg(planner, trace=True))
    busy = {p: c for p, c in rep.pipe_busy.items() if c}
    busiest = max(busy, key=busy.get)
    one_tile = sum(c // NT for p, c in busy.items() if p not in (busiest, "SCALAR"))
    assert _own(rep) <= 1.10 * (busy[busiest] + one_tile)
    assert _own(rep) <= 0.80 * _own(base)
    assert overlap_cycles(rep.intervals("MTE2"), rep.intervals("VECTOR")) > 0


@on_both_planners
def test_explicit_slots_overlap_load_and_compute(planner):
    _, _, base = _run(single_buffer, config=cfg(planner))
    _, _, rep = _run(explicit_slots, config=cfg(planner, trace=True))
    assert overlap_cycles(rep.intervals("MTE2"), rep.intervals("VECTOR")) > 0
    assert rep.cycles < base.cycles


def _deep(tile_rows: int):
    @pl.jit
    def deep(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            for i in pl.pipeline(NT, stage=4):
                tile = pl.load(a, [i * tile_rows, 0], [tile_rows, TC])
                pl.store(pl.exp(tile), [i * tile_rows, 0], out)
        return out

    return deep


def _hints(kernel, rows: int) -> list[str]:
    a = np.random.default_rng(1).standard_normal((NT * rows, TC)).astype(np.float32)
    out = np.zeros_like(a)
    compiled = kernel.compile(a, out, config=CFG)
    kernel(a, out, config=CFG)
    np.testing.assert_allclose(out, np.exp(a), rtol=1e-5)
    assert kernel.last_report.hazards == []
    log = (compiled.output_dir / "report" / "perf_hints.log").read_text()
    return sorted({line for line in log.splitlines() if "PH-MR-001" in line})


def test_capacity_gate_hint_and_its_remedy(caplog):
    lines = _hints(_deep(128), 128)  # 64 KiB per stage: 4 stages do not fit in 184 KiB of Vec
    assert len(lines) == 1
    line = lines[0]
    assert line.startswith(
        "[perf_hint PH-MR-001] MemoryReuse: software pipelining requested depth 4 for pipeline group i "
        "in Vec, but only 2 of 4 buffers fit (65536 B per stage, 188416 B free) — stages 2 apart share "
        "storage and serialize. This operand alone needs 262144 B for depth 4; shrink the per-stage "
        "tile to <= 47104 B, or reduce the pipeline depth (e.g. `pl.pipeline(stage=)`) to 2. at "
    )
    loop_line = next(
        n
        for n, text in enumerate(Path(__file__).read_text().splitlines(), 1)
        if "pl.pipeline(NT, stage=4)" in text
    )
    assert line.endswith(f"test_pipelining.py:{loop_line}:12")
    assert "[perf_hint] " in caplog.text  # the summary, logged by pypto.perf_hints
    assert _hints(_deep(64), 64) == []  # 32 KiB <= 47104 B per stage: all four fit


@pl.jit
def crowded(a: pl.Tensor, out: pl.Out[pl.Tensor]):  # the stages alone fit; with `keep` they do not
    with pl.at(level=pl.Level.CORE_GROUP):
        keep = pl.load(a, [0, 0], [2 * TR, TC])  # 64 KiB live across the loop
        for i in pl.pipeline(NT, stage=4):
            tile = pl.load(a, [i * TR, 0], [TR, TC])  # 32 KiB per stage
            pl.store(pl.exp(tile), [i * TR, 0], out)
        pl.store(pl.exp(keep), [0, 0], out)
    return out


def test_capacity_gate_names_the_other_buffers_when_they_are_the_problem():
    (line,) = _hints(crowded, TR)
    assert (
        "requested depth 4 for pipeline group i in Vec, but only 3 of 4 buffers fit "
        "(32768 B per stage, 122880 B free) — stages 3 apart share storage and serialize. "
        "Other buffers live alongside the loop take 65536 B of the 188416 B; relieve those "
        "(shorter lifetimes or smaller tiles), or reduce the pipeline depth "
        "(e.g. `pl.pipeline(stage=)`) to 3."
    ) in line


@pl.jit
def sum_first_rows(
    x: pl.Tensor[[16, 64], pl.FP32],
    counts: pl.Tensor[[1, 8], pl.INT32],
    out: pl.Out[pl.Tensor[[1, 64], pl.FP32]],
):
    with pl.at(level=pl.Level.CORE_GROUP):
        n = pl.cast(pl.read(counts, [0, 0]), target_type=pl.INDEX)  # a trip count known at run time
        acc = pl.full([1, 64], dtype=pl.FP32, value=0.5)
        for t in pl.pipeline(n, stage=2):
            acc = pl.add(acc, x[t : t + 1, :])  # carried through the clones and the remainder
        out[:] = acc
    return out


@pytest.mark.parametrize("n", [0, 1, 5, 16])
def test_a_value_carried_through_a_pipeline_with_a_run_time_trip_count(n):
    x = np.random.default_rng(n).random((16, 64), dtype=np.float32)
    out = np.zeros((1, 64), np.float32)
    sum_first_rows(x, np.full((1, 8), n, np.int32), out, config=CFG)
    np.testing.assert_allclose(out[0], 0.5 + x[:n].sum(0), rtol=1e-5)


# Q·Kᵀ then P·V on one 256x128 key/value tile: each stage feeds L0B (Right, 64 KiB) twice with a
# 64 KiB operand, so one stage's two operands alone do not fit; in a plain loop they share storage.
@pl.jit
def qk_pv_range(
    q: pl.Tensor[[64, 128], pl.BF16],
    kv: pl.Tensor[[256, 128], pl.BF16],
    out: pl.Out[pl.Tensor[[64, 128], pl.FP32]],
):
    with pl.at(level=pl.Level.CORE_GROUP):
        kv_tile = kv[0:256, 0:128]
        for hb in pl.range(2):
            s = pl.matmul(q[hb * 32 : hb * 32 + 32, 0:128], kv_tile, b_trans=True, out_dtype=pl.FP32)
            o = pl.matmul(pl.cast(s, target_type=pl.BF16), kv_tile, out_dtype=pl.FP32)
            out[hb * 32 : hb * 32 + 32, 0:128] = o
    return out


@pl.jit
def qk_pv_pipelined(
    q: pl.Tensor[[64, 128], pl.BF16],
    kv: pl.Tensor[[256, 128], pl.BF16],
    out: pl.Out[pl.Tensor[[64, 128], pl.FP32]],
):
    with pl.at(level=pl.Level.CORE_GROUP):
        kv_tile = kv[0:256, 0:128]
        for hb in pl.pipeline(2, stage=2):
            s = pl.matmul(q[hb * 32 : hb * 32 + 32, 0:128], kv_tile, b_trans=True, out_dtype=pl.FP32)
            o = pl.matmul(pl.cast(s, target_type=pl.BF16), kv_tile, out_dtype=pl.FP32)
            out[hb * 32 : hb * 32 + 32, 0:128] = o
    return out


def _qk_pv(kernel) -> tuple[np.ndarray, object]:
    rng = np.random.default_rng(7)
    q = (rng.standard_normal((64, 128)) * 0.1).astype(ml_dtypes.bfloat16)
    kv = (rng.standard_normal((256, 128)) * 0.1).astype(ml_dtypes.bfloat16)
    out = np.zeros((64, 128), np.float32)
    kernel(q, kv, out, config=CFG)
    s = q.astype(np.float32) @ kv.astype(np.float32).T
    np.testing.assert_allclose(
        out, s.astype(ml_dtypes.bfloat16).astype(np.float32) @ kv.astype(np.float32), rtol=1e-5
    )
    assert kernel.last_report.hazards == []
    return out, kernel.last_report


def test_l0_operands_of_a_pipelined_stage_share_storage_like_a_plain_loop():
    _, plain = _qk_pv(qk_pv_range)
    _, piped = _qk_pv(qk_pv_pipelined)
    # Right cannot hold both operands of one stage, so they are fed just before their matmuls;
    # the Mat and Left copies still run a stage ahead, which is what makes the pipelined loop faster.
    assert (_own(plain), _own(piped)) == (10356, 9947)
    hints = (qk_pv_pipelined.compile(config=CFG).output_dir / "report" / "perf_hints.log").read_text()
    assert "pipeline group hb: one stage's tiles in Right do not fit together" in hints


K_WIDE, N_WIDE = 1024, 512  # per stage: [16, 256] + two [256, 512] bf16 Mat tiles, over L1's 512 KiB


@pl.jit
def two_products_pipelined(x: pl.Tensor, wg: pl.Tensor, wu: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        g = pl.create_tensor([16, N_WIDE], dtype=pl.FP32)
        u = pl.create_tensor([16, N_WIDE], dtype=pl.FP32)
        for kb in pl.pipeline(K_WIDE // 256, stage=2):
            xa = x[:, kb * 256 : kb * 256 + 256]
            wgb = wg[kb * 256 : kb * 256 + 256, :]
            wub = wu[kb * 256 : kb * 256 + 256, :]
            if kb == 0:
                g = pl.matmul(xa, wgb, out_dtype=pl.FP32)
                u = pl.matmul(xa, wub, out_dtype=pl.FP32)
            else:
                g = pl.matmul_acc(g, xa, wgb)
                u = pl.matmul_acc(u, xa, wub)
        out[:, :] = pl.add(g, u)
    return out


def test_a_stage_whose_l1_and_l0b_tiles_do_not_fit_keeps_every_copy_after_its_input():
    # Neither Mat nor Right holds one stage's tiles, so their copies stay by their matmuls; the
    # Left feed of x reads a Mat load that is no longer hoisted, so it is not hoisted either
    # (it used to run a stage ahead of the load it reads: "used before it is defined").
    rng = np.random.default_rng(5)
    x = rng.uniform(-1, 1, (16, K_WIDE)).astype(ml_dtypes.bfloat16)
    wg = rng.uniform(-1, 1, (K_WIDE, N_WIDE)).astype(ml_dtypes.bfloat16)
    wu = rng.uniform(-1, 1, (K_WIDE, N_WIDE)).astype(ml_dtypes.bfloat16)
    out = np.zeros((16, N_WIDE), np.float32)
    two_products_pipelined(x, wg, wu, out, config=CFG)
    f32 = [a.astype(np.float32) for a in (x, wg, wu)]
    np.testing.assert_allclose(out, f32[0] @ f32[1] + f32[0] @ f32[2], rtol=2e-3, atol=2e-3)
    assert two_products_pipelined.last_report.hazards == []
