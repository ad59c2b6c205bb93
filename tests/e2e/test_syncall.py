"""pl.system.syncall: a barrier across the blocks of one pl.spmd launch.

Each block writes its part, syncalls, then reads another block's part: without the barrier the
read races the write (a RaceError), with it the result is numpy's. Cycles: the soft form's
arrival is one scalar GM access (an atomic add of the workspace counter) and its release one
more, the poll that sees the full count, starting at the round's last arrival
(`scalar_gm_access_cycles` each); the hard form's arrival and release are sync instructions
(`sync_cycles`, 0 on a2a3sim) and it releases at the last arrival.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import pypto.language as pl
from pypto import platforms
from pypto.errors import DeadlockError, RaceError, TypeCheckError
from pypto.runtime import RunConfig

SIM = RunConfig(platform="a2a3sim", trace=True)
P = platforms.get("a2a3sim")
B, R, C = 4, 16, 64
CORES = P.aiv_cores  # 48: the hard form fills every AIV


@pl.jit
def rotate_soft(
    x: pl.Tensor[[B * R, C], pl.FP32],
    ws: pl.InOut[pl.Tensor[[16], pl.INT32]],
    part: pl.InOut[pl.Tensor[[B * R, C], pl.FP32]],
    out: pl.Out[pl.Tensor[[B * R, C], pl.FP32]],
):
    for b in pl.spmd(B, name_hint="rotate"):
        t = pl.exp(pl.load(x, [b * R, 0], [R, C]))
        if b == 0:  # block 0 arrives last: the others wait for it
            t = pl.exp(t)
        pl.store(t, [b * R, 0], part)
        pl.system.syncall(mode="soft", core_type="aiv_only", gm_workspace=ws, used_cores=B)
        pl.store(pl.load(part, [(b + 1) % B * R, 0], [R, C]), [b * R, 0], out)
    return out


@pl.jit
def rotate_unsynced(
    x: pl.Tensor[[B * R, C], pl.FP32],
    part: pl.InOut[pl.Tensor[[B * R, C], pl.FP32]],
    out: pl.Out[pl.Tensor[[B * R, C], pl.FP32]],
):
    for b in pl.spmd(B, name_hint="rotate"):
        pl.store(pl.exp(pl.load(x, [b * R, 0], [R, C])), [b * R, 0], part)
        pl.store(pl.load(part, [(b + 1) % B * R, 0], [R, C]), [b * R, 0], out)
    return out


@pl.jit
def rotate_hard(
    x: pl.Tensor[[CORES * R, C], pl.FP32],
    part: pl.InOut[pl.Tensor[[CORES * R, C], pl.FP32]],
    out: pl.Out[pl.Tensor[[CORES * R, C], pl.FP32]],
):
    for b in pl.spmd(CORES, name_hint="rotate", sync_start=True):
        pl.store(pl.exp(pl.load(x, [b * R, 0], [R, C])), [b * R, 0], part)
        pl.system.syncall(core_type="aiv_only")
        pl.store(pl.load(part, [(b + 1) % CORES * R, 0], [R, C]), [b * R, 0], out)
    return out


M, K = 16, 32


@pl.jit
def rotate_mix(
    a: pl.Tensor[[B * M, K], pl.FP32],
    w: pl.Tensor[[K, C], pl.FP32],
    ws: pl.InOut[pl.Tensor[[16], pl.INT32]],
    part: pl.InOut[pl.Tensor[[B * M, C], pl.FP32]],
    out: pl.Out[pl.Tensor[[B * M, C], pl.FP32]],
):
    # a cluster launch: each block is one AIC (the matmul) and two AIVs (the rest)
    for b in pl.spmd(B, name_hint="mm", optimizations=[pl.split(pl.SplitMode.UP_DOWN)]):
        part[b * M : b * M + M, :] = pl.exp(pl.matmul(a[b * M : b * M + M, :], w))
        pl.system.syncall(mode="soft", core_type="mix", gm_workspace=ws, used_cores=0)
        nb = (b + 1) % B
        out[b * M : b * M + M, :] = pl.neg(part[nb * M : nb * M + M, :])
    return out


CLUSTERS = P.aic_cores  # 24: the hard mix form fills every cluster


@pl.jit
def rotate_mix_hard(
    a: pl.Tensor[[CLUSTERS * M, K], pl.FP32],
    w: pl.Tensor[[K, C], pl.FP32],
    part: pl.InOut[pl.Tensor[[CLUSTERS * M, C], pl.FP32]],
    out: pl.Out[pl.Tensor[[CLUSTERS * M, C], pl.FP32]],
):
    for b in pl.spmd(CLUSTERS, optimizations=[pl.split(pl.SplitMode.UP_DOWN)], sync_start=True):
        part[b * M : b * M + M, :] = pl.exp(pl.matmul(a[b * M : b * M + M, :], w))
        pl.system.syncall(core_type="mix")
        nb = (b + 1) % CLUSTERS
        out[b * M : b * M + M, :] = pl.neg(part[nb * M : nb * M + M, :])
    return out


def _expected(x: np.ndarray, blocks: int) -> np.ndarray:
    return np.roll(np.exp(x).reshape(blocks, R, C), -1, axis=0).reshape(blocks * R, C)


def _syncalls(task) -> list[tuple[int, int]]:
    """(start, end) of a block's SYNCALL records, in absolute cycles: arrival, release."""
    return [
        (task.start + r["start"], task.start + r["end"]) for r in task.trace.rows() if r["name"] == "SYNCALL"
    ]


def test_soft_syncall_orders_the_blocks_writes_before_their_reads():
    x = np.random.default_rng(0).standard_normal((B * R, C)).astype(np.float32)
    ws, part, out = np.zeros(16, np.int32), np.zeros_like(x), np.zeros_like(x)
    rotate_soft(x, ws, part, out, config=SIM)
    want = np.exp(x)
    want[:R] = np.exp(want[:R])
    np.testing.assert_allclose(out, np.roll(want.reshape(B, R, C), -1, axis=0).reshape(-1, C), rtol=1e-5)
    assert ws[0] == B and not ws[1:].any()  # one atomic add per arrival, the rest untouched
    tasks = rotate_soft.last_report.tasks
    gm = int(P.scalar_gm_access_cycles)  # 185
    arrivals = [_syncalls(t)[0] for t in tasks]
    releases = [_syncalls(t)[1] for t in tasks]
    assert all(end - start == gm for start, end in arrivals)
    last = max(end for _, end in arrivals)
    assert releases == [(last, last + gm)] * B  # every block leaves together, one poll after the last
    assert [a for a, _ in arrivals] == [5096, 5064, 5064, 5064]  # block 0's extra exp: 32 cycles
    assert last == 5281 and rotate_soft.last_report.cycles == 5623


def test_without_the_barrier_the_reads_race_the_writes():
    x = np.ones((B * R, C), np.float32)
    with pytest.raises(RaceError, match="race between tasks"):
        rotate_unsynced(x, np.zeros_like(x), np.zeros_like(x), config=SIM)


def test_hard_syncall_across_every_core():
    x = np.random.default_rng(1).standard_normal((CORES * R, C)).astype(np.float32)
    part, out = np.zeros_like(x), np.zeros_like(x)
    rotate_hard(x, part, out, config=SIM)
    np.testing.assert_allclose(out, _expected(x, CORES), rtol=1e-5)
    tasks = rotate_hard.last_report.tasks
    assert len({t.core for t in tasks}) == CORES
    arrivals = [_syncalls(t)[0] for t in tasks]
    last = max(end for _, end in arrivals)
    assert all(end - start == int(P.sync_cycles) for start, end in arrivals)
    # the release: at the last arrival, or the core's next issue slot (one cycle after its own
    # arrival issued) when that is later — the hard barrier itself adds no cycles
    for t, (start, _) in zip(tasks, arrivals):
        at = max(last, start + 1)
        assert _syncalls(t)[1] == (at, at + int(P.sync_cycles))
    # arrivals spread (5225..5609) as 48 blocks share the L2/HBM bandwidth of their loads/stores
    assert min(a for a, _ in arrivals) == 5225 and last == 5609
    assert rotate_hard.last_report.cycles == 6055


BAD = [
    (48, False, {"core_type": "aiv_only"}, "needs every block running at once: give .* sync_start=True"),
    (4, True, {"core_type": "aiv_only"}, "waits for all 48 aiv_only cores of a2a3sim, but .* runs 4"),
    (4, False, {"core_type": "aic_only"}, "runs on no core of that kind"),
    (
        4,
        False,
        {"mode": "soft", "core_type": "aiv_only", "gm_workspace": "w8", "used_cores": 4},
        r"at least 16 INT32 elements .* got pl.Tensor\[\[8\], pl.INT32\]",
    ),
    (
        4,
        False,
        {"mode": "soft", "core_type": "aiv_only", "gm_workspace": "wf", "used_cores": 4},
        "the syncall workspace must be INT32",
    ),
    (
        4,
        False,
        {"mode": "soft", "core_type": "aiv_only", "gm_workspace": "ws", "used_cores": 5},
        "used_cores=5 exceeds the 4 aiv_only participant",
    ),
    (4, False, {"mode": "soft", "core_type": "aiv_only", "gm_workspace": "ws"}, "needs used_cores="),
    (4, False, {"mode": "hard", "core_type": "aiv_only", "gm_workspace": "ws"}, "takes no gm_workspace"),
    (4, False, {"mode": "fast"}, "mode must be 'hard' or 'soft'"),
]


@pytest.mark.parametrize(("blocks", "sync_start", "kw", "message"), BAD)
def test_a_barrier_that_cannot_complete_is_refused_at_its_line(tmp_path, blocks, sync_start, kw, message):
    src = ", ".join(f"{k}={v}" if k == "gm_workspace" else f"{k}={v!r}" for k, v in kw.items())
    code = (
        "def make(pl, R, C, blocks, sync_start):\n"
        "    def k(x: pl.Tensor[[48 * R, C], pl.FP32], ws: pl.InOut[pl.Tensor[[16], pl.INT32]],\n"
        "          w8: pl.InOut[pl.Tensor[[8], pl.INT32]], wf: pl.InOut[pl.Tensor[[16], pl.FP32]],\n"
        "          out: pl.Out[pl.Tensor[[48 * R, C], pl.FP32]]):\n"
        "        for b in pl.spmd(blocks, sync_start=sync_start):\n"
        "            pl.store(pl.load(x, [b * R, 0], [R, C]), [b * R, 0], out)\n"
        f"            pl.system.syncall({src})\n"
        "        return out\n"
        "    return k\n"
    )
    path = tmp_path / "bad_syncall.py"
    path.write_text(code)
    spec = importlib.util.spec_from_file_location("bad_syncall", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    kernel = pl.jit(module.make(pl, R, C, blocks, sync_start))
    x, out = np.ones((48 * R, C), np.float32), np.zeros((48 * R, C), np.float32)
    ws = np.zeros(16, np.int32)
    with pytest.raises(TypeCheckError, match=message) as err:
        kernel(x, ws, np.zeros(8, np.int32), np.zeros(16, np.float32), out, config=SIM)
    assert "bad_syncall.py:7:" in str(err.value)  # the syncall's line
    assert not out.any() and not ws.any()  # refused before anything ran


@pl.jit
def skips_the_barrier(
    x: pl.Tensor[[B * R, C], pl.FP32],
    ws: pl.InOut[pl.Tensor[[16], pl.INT32]],
    out: pl.Out[pl.Tensor[[B * R, C], pl.FP32]],
):
    for b in pl.spmd(B, name_hint="skips"):
        pl.store(pl.load(x, [b * R, 0], [R, C]), [b * R, 0], out)
        if b != 0:  # block 0 never arrives
            pl.system.syncall(mode="soft", core_type="aiv_only", gm_workspace=ws, used_cores=B)
    return out


def test_a_barrier_a_block_never_reaches_is_a_deadlock_not_a_hang():
    x = np.ones((B * R, C), np.float32)
    with pytest.raises(DeadlockError, match=r"SYNCALL \(3 of 4 participants arrived"):
        skips_the_barrier(x, np.zeros(16, np.int32), np.zeros_like(x), config=SIM)


def test_a_mix_barrier_in_a_cluster_launch_waits_for_every_core_of_every_block():
    rng = np.random.default_rng(2)
    a = (rng.standard_normal((B * M, K)) * 0.1).astype(np.float32)
    w = (rng.standard_normal((K, C)) * 0.1).astype(np.float32)
    ws, out = np.zeros(16, np.int32), np.zeros((B * M, C), np.float32)
    rotate_mix(a, w, ws, np.zeros_like(out), out, config=SIM)
    want = -np.roll(np.exp(a @ w).reshape(B, M, C), -1, axis=0).reshape(B * M, C)
    np.testing.assert_allclose(out, want, rtol=1e-4)
    per_block = 1 + P.aiv_cores // P.aic_cores  # used_cores=0: the AIC and both AIVs of each block
    assert ws[0] == B * per_block == 12
    assert rotate_mix.last_report.cycles == 6237


def test_a_hard_mix_barrier_fills_every_cluster():
    rng = np.random.default_rng(3)
    a = (rng.standard_normal((CLUSTERS * M, K)) * 0.1).astype(np.float32)
    w = (rng.standard_normal((K, C)) * 0.1).astype(np.float32)
    out = np.zeros((CLUSTERS * M, C), np.float32)
    rotate_mix_hard(a, w, np.zeros_like(out), out, config=SIM)
    want = -np.roll(np.exp(a @ w).reshape(CLUSTERS, M, C), -1, axis=0).reshape(CLUSTERS * M, C)
    np.testing.assert_allclose(out, want, rtol=1e-4)
    assert rotate_mix_hard.last_report.cycles == 6055  # 24 AICs and 48 AIVs released together
