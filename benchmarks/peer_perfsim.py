"""Whole kernels against a peer simulator: pto-isa's Perf-Sim (its ``__COSTMODEL`` pipeline
simulator) runs its own perf-sim test kernels; the same kernels, ported instruction for
instruction to ``<pypto/kernel.hpp>`` (``benchmarks/kernels/peer_*.cpp``), run here under
``RunConfig(cost_profile="pto-isa")``. Prints, per kernel, Perf-Sim's total cycles and ours, and
each pipe's busy-cycle error.

Perf-Sim's figures below were measured at pto-isa revision f35e7f60 (gcc 12, googletest);
``--pto-isa DIR`` (or ``PTO_ISA_DIR``) names a checkout of that revision to build and measure
again (its GEMM, FlashAttention, top-k and conv2d suites, each also built with the colliding flag ids
apart, and the FlashAttention suite "clean", below: about fifteen minutes on two cores; it writes
only under DIR). Without one the recorded figures
are used and the script says so. Nothing here runs at install or in CI.

Perf-Sim keys a flag by its destination pipe and id only (and the AIC's and an AIV's MTE2 as
one pipe), so in its GEMM and conv2d the accumulator's FIX->M wait (id 0) is satisfied early
by the MTE1->M flags of id 0, and in its FlashAttention the AIVs' V->MTE2 flags share keys with the
AIC's MTE1->MTE2 flags. The "ids apart" column is Perf-Sim on a copy of those kernels with the
colliding flags moved to ids of their own (nothing else changed): for the GEMM and conv2d the schedule
its flags mean, which is the one our model runs; for FlashAttention a check that the
collision is not what separates the totals (docs/calibration.md).

Three more artefacts of Perf-Sim's harness change its FlashAttention schedules: its tests pass
null pointers for all fourteen GM tensors, so tensors (and UB tiles, whose addresses are small
integers) share start addresses and its address tracker orders unrelated instructions; it
simulates a launch of more than one block with a loop that moves its clock on to the next end
of an instruction already running even in a step that has just started others, so one started
then (a 1-cycle Scalar one, a zero-length flag) ends there, not on its own end (its one-block
loop moves the clock only after a step that started nothing); and its one host thread records
a P row slice of the kernel's main loop before the AIC's TPUSH of the QK tile it reads, so
(every dependency being settled at recording) the slice does not wait for that tile. The
"clean" column is Perf-Sim with the three removed (each test's tensors given buffers of their
own, the multi-block loop stepping as the one-block loop, the main loop's row slices of a tile
recorded after its last QK sub-tile; nothing else changed; the FlashAttention suite only), and
"one thread" is compared with it.

Run: python benchmarks/peer_perfsim.py [--pto-isa DIR]
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pypto import platforms
from pypto.kernel_build import KernelSource, build_kernel
from pypto.runtime import run_kernel_file

KERNELS = Path(__file__).resolve().parent / "kernels"
REVISION = "f35e7f60"
TOTAL_TOLERANCE, PIPE_TOLERANCE = 0.05, 0.10
# Perf-Sim's pipe rows (core 0; its AIV rows sum the cluster's two AIVs) and ours: the core
# kind whose tasks are summed and our pipe.
PIPES = {
    "MTE2(AIC)": ("AIC", "MTE2"),
    "MTE1": ("AIC", "MTE1"),
    "CUBE": ("AIC", "CUBE"),
    "FIXP": ("AIC", "FIXPIPE"),
    "MTE2(AIV)": ("AIV", "MTE2"),
    "VEC": ("AIV", "VECTOR"),
    "MTE3": ("AIV", "MTE3"),
}

Figures = dict[str, tuple[int, dict[str, int]]]  # gtest name -> (total, busy per pipe row)

# Perf-Sim at f35e7f60, core 0.
RECORDED: Figures = {
    "GemmPerfSim.Small_128x64x256": (3024, {"MTE2(AIC)": 627, "MTE1": 321, "CUBE": 518, "FIXP": 1614}),
    "GemmPerfSim.Medium_1536x256x1024": (
        139420,
        {"MTE2(AIC)": 120384, "MTE1": 61632, "CUBE": 99456, "FIXP": 77472},
    ),
    "GemmPerfSim.LargeK_256x4096x256": (
        87313,
        {"MTE2(AIC)": 80256, "MTE1": 41088, "CUBE": 66304, "FIXP": 3228},
    ),
    "FAPerfSim.Standard_128x128x1024": (
        39003,
        {"MTE2(AIC)": 10450, "MTE1": 6168, "CUBE": 8288, "FIXP": 9684}
        | {"MTE2(AIV)": 13400, "VEC": 26660, "MTE3": 2966},
    ),
    "FAPerfSim.MultiCore_4x128x128x1024": (
        48313,
        {"MTE2(AIC)": 10450, "MTE1": 6168, "CUBE": 8288, "FIXP": 9684}
        | {"MTE2(AIV)": 13400, "VEC": 26660, "MTE3": 2966},
    ),
    "FAPerfSim.Small_64x64x512": (
        10268,
        {"MTE2(AIC)": 2600, "MTE1": 1560, "CUBE": 1120, "FIXP": 2020}
        | {"MTE2(AIV)": 2732, "VEC": 10154, "MTE3": 724},
    ),
    "FAPerfSim.CAModelCompare_64x128x512_2core": (
        10142,
        {"MTE2(AIC)": 2612, "MTE1": 1420, "CUBE": 1072, "FIXP": 2020}
        | {"MTE2(AIV)": 2780, "VEC": 6950, "MTE3": 740},
    ),
    "FAPerfSim.LongSeq_256x64x2048": (
        51274,
        {"MTE2(AIC)": 13585, "MTE1": 7216, "CUBE": 8384, "FIXP": 16144}
        | {"MTE2(AIV)": 22320, "VEC": 49524, "MTE3": 5034},
    ),
    # Both AIVs of its one cluster run the whole kernel: its AIV rows are twice one AIV's.
    "TopkPerfSim.Small_128x1024_k128": (190361, {"MTE2(AIV)": 17930, "VEC": 380200, "MTE3": 2304}),
    "TopkPerfSim.Narrow_128x512_k32": (96008, {"MTE2(AIV)": 8900, "VEC": 191784, "MTE3": 512}),
    "Conv2dPerfSim.Small_16cin_8x16": (3976, {"MTE2(AIC)": 992, "MTE1": 720, "CUBE": 1170, "FIXP": 1613}),
    "Conv2dPerfSim.Medium_32cin_16x16": (8325, {"MTE2(AIC)": 3992, "MTE1": 2880, "CUBE": 4680, "FIXP": 3226}),
    "Conv2dPerfSim.Large_64cin_32x32": (
        47889,
        {"MTE2(AIC)": 32488, "MTE1": 23040, "CUBE": 37152, "FIXP": 12904},
    ),
}
# Perf-Sim's totals with the flags its sync keys make collide moved to ids of their own (the
# GEMM's and conv2d's FIX->M pair; FlashAttention's AIV V->MTE2 flags, which share a key with the AIC's
# MTE1->MTE2 flags).
RECORDED_IDS_APART = {
    "GemmPerfSim.Small_128x64x256": 3024,
    "GemmPerfSim.Medium_1536x256x1024": 182465,
    "GemmPerfSim.LargeK_256x4096x256": 87313,
    "FAPerfSim.Standard_128x128x1024": 39003,
    "FAPerfSim.MultiCore_4x128x128x1024": 48313,
    "FAPerfSim.Small_64x64x512": 10268,
    "FAPerfSim.CAModelCompare_64x128x512_2core": 10142,
    "FAPerfSim.LongSeq_256x64x2048": 51365,
    "Conv2dPerfSim.Small_16cin_8x16": 3976,
    "Conv2dPerfSim.Medium_32cin_16x16": 9105,
    "Conv2dPerfSim.Large_64cin_32x32": 52460,
}
# Perf-Sim's FlashAttention totals with its tests' GM tensors in buffers of their own, its
# multi-block loop stepping as its one-block loop and its main loop's row slices recorded after
# their QK tile ("clean").
RECORDED_CLEAN = {
    "FAPerfSim.Standard_128x128x1024": 41413,
    "FAPerfSim.MultiCore_4x128x128x1024": 41413,
    "FAPerfSim.Small_64x64x512": 10259,
    "FAPerfSim.CAModelCompare_64x128x512_2core": 9811,
    "FAPerfSim.LongSeq_256x64x2048": 62476,
}


def _busy(rep, block: int = 0) -> dict[str, int]:
    """Block 0's busy cycles per Perf-Sim pipe row (AIV rows summed over the cluster's AIVs)."""
    busy = dict.fromkeys(PIPES, 0)
    for task in rep.tasks:
        if task.block != block:
            continue
        for row, (kind, pipe) in PIPES.items():
            if task.core_kind == kind:
                busy[row] += task.pipe_busy[pipe]
    return busy


@dataclass(frozen=True)
class GemmPort:
    """One of Perf-Sim's GEMM tests: the GEMM shape and K-block depth its port runs."""

    test: str
    m: int
    k: int
    n: int
    step_k: int
    suite: str = "gemm_perf_sim"

    def measure(self) -> tuple[int, dict[str, int]]:
        """Our cycles under the pto-isa profile (the result checked against numpy) and block
        0's busy cycles per pipe row (flags take no pipe time under this profile)."""
        so = build_kernel(KernelSource(name="peer_gemm", path=KERNELS / "peer_gemm.cpp"), platform="a2a3sim")
        rng = np.random.default_rng(0)
        a = rng.uniform(-1, 1, (self.m, self.k)).astype(np.float16)
        b = rng.uniform(-1, 1, (self.k, self.n)).astype(np.float16)
        c = np.zeros((self.m, self.n), np.float32)
        plat = platforms.get("a2a3sim", cost_profile="pto-isa")
        rep = run_kernel_file(so, [a, b, c, self.step_k], outputs={2}, platform=plat, core="aic")
        np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-2, atol=1e-2)
        return rep.cycles, _busy(rep)


FA_SLOTS = 8  # the port's ring depth (peer_fa.cpp kSlots)


@dataclass(frozen=True)
class FaPort:
    """One of Perf-Sim's FlashAttention tests: `blocks` clusters of `cube_s0` query rows each
    (Perf-Sim's launch: one core per block), `head` wide, over `s1` keys in tiles of
    `tile_s1` (sub-tiles of `cube_s1`), QK/P `preload` tiles ahead of PV/GU."""

    test: str
    blocks: int
    cube_s0: int
    head: int
    s1: int
    cube_s1: int
    tile_s1: int = 256
    preload: int = 4
    suite: str = "fa_perf_sim"

    def arrays(self, seed: int = 0) -> list:
        """q, k^T, v, the output and the three GM rings, in the port's argument order."""
        rows, factor = self.blocks * self.cube_s0, self.tile_s1 // self.cube_s1
        if self.s1 // self.tile_s1 > FA_SLOTS:
            raise ValueError(
                f"{self.test}: {self.s1 // self.tile_s1} tiles would wrap the {FA_SLOTS}-slot rings"
            )
        rng = np.random.default_rng(seed)
        q = rng.uniform(-1, 1, (rows, self.head)).astype(np.float16)
        k = rng.uniform(-1, 1, (self.s1, self.head)).astype(np.float16)
        v = rng.uniform(-1, 1, (self.s1, self.head)).astype(np.float16)
        ring_rows = self.blocks * FA_SLOTS * factor * self.cube_s0
        rings = [np.zeros((ring_rows, self.cube_s1), dt) for dt in (np.float32, np.float16)]
        pv = np.zeros((self.blocks * FA_SLOTS * self.cube_s0, self.head), np.float32)
        return [q, np.ascontiguousarray(k.T), v, np.zeros((rows, self.head), np.float32), *rings, pv]

    def run(self, platform=None, one_thread: bool = False):
        """Our run under the pto-isa profile (or `platform`), its output checked against
        softmax(q k^T / sqrt(head)) v in numpy; returns the report. `one_thread` adds the order
        Perf-Sim's harness imposes (each AIC section after a P tile waits for AIV 0's push of
        it: peer_fa.cpp)."""
        so = build_kernel(KernelSource(name="peer_fa", path=KERNELS / "peer_fa.cpp"), platform="a2a3sim")
        args = self.arrays()
        plat = platform or platforms.get("a2a3sim", cost_profile="pto-isa")
        scalars = [self.cube_s0, self.cube_s1, self.tile_s1, self.preload, int(one_thread)]
        rep = run_kernel_file(
            so, args + scalars, outputs={3, 4, 5, 6}, platform=plat, core="cluster", block_num=self.blocks
        )
        q, kt, v, o = (a.astype(np.float32) for a in args[:4])
        s = q @ kt / np.sqrt(self.head)
        e = np.exp(s - s.max(axis=1, keepdims=True))
        np.testing.assert_allclose(o, e @ v / e.sum(axis=1, keepdims=True), rtol=1e-2, atol=1e-3)
        return rep

    def measure(self) -> tuple[int, dict[str, int]]:
        rep = self.run()
        return rep.cycles, _busy(rep)


@dataclass(frozen=True)
class TopkPort:
    """One of Perf-Sim's top-k tests: the top `topk` of each of `rows` rows of `cols` fp32
    values, on one AIV. Perf-Sim runs the kernel on both AIVs of its cluster and sums their
    rows (`peer_copies`); the comparison takes one AIV's share."""

    test: str
    rows: int
    cols: int
    topk: int
    peer_copies: int = 2
    suite: str = "topk_perf_sim"

    def run(self, platform=None, record: bool = False):
        """Our run under the pto-isa profile (or `platform`), values and indices checked against
        numpy's stable descending sort; returns the report."""
        so = build_kernel(KernelSource(name="peer_topk", path=KERNELS / "peer_topk.cpp"), platform="a2a3sim")
        x = np.random.default_rng(0).standard_normal((self.rows, self.cols)).astype(np.float32)
        idx = np.arange(self.cols, dtype=np.uint32).reshape(1, self.cols)
        out = np.zeros((self.rows, self.topk), np.float32)
        index = np.zeros((self.rows, self.topk), np.uint32)
        plat = platform or platforms.get("a2a3sim", cost_profile="pto-isa")
        rep = run_kernel_file(
            so, [x, idx, out, index, self.topk], outputs={2, 3}, platform=plat, record=record
        )
        order = np.argsort(-x, axis=1, kind="stable")[:, : self.topk]
        np.testing.assert_array_equal(index, order)
        np.testing.assert_array_equal(out, np.take_along_axis(x, order, axis=1))
        return rep

    def measure(self) -> tuple[int, dict[str, int]]:
        rep = self.run()
        return rep.cycles, _busy(rep)


@dataclass(frozen=True)
class ConvPort:
    """One of Perf-Sim's conv2d tests: a 3 x 3 convolution (stride 1, padding 1) of a `cin` x
    `hin` x `win` fp16 feature map to `cout` channels, K in `base_k` steps, `step_k` steps a
    load. `l0b_bytes` raises the L0B for a shape whose two B slices do not fit it (Perf-Sim
    checks no addresses). Perf-Sim's SETFMATRIX lands on its vector rows (its default stage for
    an opcode it does not list, once per AIV); here it is the AIC's scalar register write, so
    only the AIC's pipes are compared."""

    test: str
    cin: int
    hin: int
    win: int
    base_k: int
    cout: int = 256
    step_k: int = 3
    l0b_bytes: int | None = None
    suite: str = "conv2d_perf_sim"
    peer_rows: tuple[str, ...] = ("MTE2(AIC)", "MTE1", "CUBE", "FIXP")

    def arrays(self, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """The feature map [cin, hin, win] and the weights [cout, cin, 3, 3], fp16."""
        rng = np.random.default_rng(seed)
        x = rng.uniform(-1, 1, (self.cin, self.hin, self.win)).astype(np.float16)
        return x, rng.uniform(-1, 1, (self.cout, self.cin, 3, 3)).astype(np.float16)

    def run(self, platform=None):
        """Our run under the pto-isa profile (or `platform`), its output checked against numpy's
        convolution; returns the report. The port takes the fmap in NC1HWC0 order and the
        weights as the [9 cin, cout] matrix of the img2col's column order (c1, kh, kw, c0)."""
        so = build_kernel(
            KernelSource(name="peer_conv2d", path=KERNELS / "peer_conv2d.cpp"), platform="a2a3sim"
        )
        x, w = self.arrays()
        c1 = self.cin // 16
        fmap = x.reshape(c1, 16, self.hin, self.win).transpose(0, 2, 3, 1).reshape(c1, -1)
        weight = w.reshape(self.cout, c1, 16, 3, 3).transpose(1, 3, 4, 2, 0).reshape(-1, self.cout)
        out = np.zeros((self.hin * self.win, self.cout), np.float16)
        plat = platform or platforms.get("a2a3sim", cost_profile="pto-isa")
        if self.l0b_bytes is not None:
            plat = plat.with_overrides(l0b_bytes=self.l0b_bytes)
        args = [np.ascontiguousarray(fmap), np.ascontiguousarray(weight), out]
        rep = run_kernel_file(
            so, [*args, self.hin, self.win, self.base_k, self.step_k], outputs={2}, platform=plat, core="aic"
        )
        np.testing.assert_allclose(out.astype(np.float32), conv3x3(x, w), rtol=2e-2, atol=5e-2)
        return rep

    def measure(self) -> tuple[int, dict[str, int]]:
        rep = self.run()
        return rep.cycles, _busy(rep)


def conv3x3(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """numpy's 3 x 3 convolution, stride 1, padding 1, of x [cin, h, w] by w [cout, cin, 3, 3]:
    [h * w, cout] in fp32."""
    _, h, wd = x.shape
    xp = np.pad(x.astype(np.float32), ((0, 0), (1, 1), (1, 1)))
    out = np.zeros((h, wd, w.shape[0]), np.float32)
    for i in range(3):
        for j in range(3):
            out += np.einsum("chw,oc->hwo", xp[:, i : i + h, j : j + wd], w[:, :, i, j].astype(np.float32))
    return out.reshape(h * wd, -1)


PORTS = [
    GemmPort("GemmPerfSim.Small_128x64x256", 128, 64, 256, 1),
    GemmPort("GemmPerfSim.Medium_1536x256x1024", 1536, 256, 1024, 4),
    GemmPort("GemmPerfSim.LargeK_256x4096x256", 256, 4096, 256, 4),
    FaPort("FAPerfSim.Standard_128x128x1024", 1, 128, 128, 1024, 128),
    FaPort("FAPerfSim.MultiCore_4x128x128x1024", 4, 128, 128, 1024, 128),
    FaPort("FAPerfSim.Small_64x64x512", 1, 64, 64, 512, 64),
    FaPort("FAPerfSim.CAModelCompare_64x128x512_2core", 2, 64, 64, 512, 128),
    # Perf-Sim's test launches one core: the first of the two 128-row blocks of its 256 rows.
    FaPort("FAPerfSim.LongSeq_256x64x2048", 1, 128, 64, 2048, 128),
    # Perf-Sim's Medium_256x2048_k64 is left out: its UB plan needs 264 KiB, past the 192 KiB
    # UB (the kernel's own Check() refuses it; Perf-Sim does not check addresses).
    TopkPort("TopkPerfSim.Small_128x1024_k128", 128, 1024, 128),
    TopkPort("TopkPerfSim.Narrow_128x512_k32", 128, 512, 32),
    ConvPort("Conv2dPerfSim.Small_16cin_8x16", 16, 8, 16, 48),
    ConvPort("Conv2dPerfSim.Medium_32cin_16x16", 32, 16, 16, 48),
    # Its two [96, 256] fp16 B slices take 96 KiB of the 64 KiB L0B (the original's pong at 32
    # KiB overlaps its ping; Perf-Sim checks no addresses): run with the L0B at 128 KiB.
    ConvPort("Conv2dPerfSim.Large_64cin_32x32", 64, 32, 32, 96, l0b_bytes=128 * 1024),
]


def run(cmd: list, **kwargs) -> subprocess.CompletedProcess:
    """Runs one build step; a failure names the step and ends with its own last output lines."""
    done = subprocess.run(cmd, capture_output=True, text=True, **kwargs)
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).splitlines()[-20:])
        raise RuntimeError(f"{' '.join(map(str, cmd))} failed ({done.returncode}):\n{tail}")
    return done


SUITES = ("gemm_perf_sim", "fa_perf_sim", "topk_perf_sim", "conv2d_perf_sim")
GEMM_KERNEL = "kernels/manual/a2a3/gemm_performance/gemm_performance_kernel.cpp"
FA_KERNEL = "kernels/manual/common/flash_atten/fa_performance_kernel.cpp"
CONV_KERNEL = "kernels/manual/a2a3/conv2d_forward/conv2d_forward_kernel.cpp"


def build_peer(tree: Path, build: Path, suite: str) -> Path:
    """Builds one Perf-Sim test suite from ``tree`` (a pto-isa checkout or a copy of part of
    one; its formula headers are generated first, as pto-isa's own test runner does) into
    ``build``; returns the folder of the binary."""
    for arch in ("a2a3", "a5"):
        gen = tree / "include/pto/costmodel" / arch / "formula_costmodel/gen_formula_params_header.py"
        run([sys.executable, gen], cwd=tree)
    env = dict(os.environ, CC="gcc-12", CXX="g++-12")
    configure = ["cmake", "-S", tree / "tests/costmodel/perf_sim_st", "-B", build]
    configure += ["-DCMAKE_BUILD_TYPE=Release", f"-DTEST_CASE={suite}"]
    run(configure, env=env)
    run(["cmake", "--build", build, "-j2"])
    return build / "bin"


def _patched(path: Path, pairs: list[tuple[str, str]]) -> None:
    text = path.read_text()
    for old, new in pairs:
        if old not in text:
            raise RuntimeError(f"{path}: {old!r} is not where revision {REVISION} has it")
        text = text.replace(old, new)
    path.write_text(text)


def ids_apart_copy(root: Path) -> Path:
    """A copy of the parts of the checkout the tests build from, with the flags Perf-Sim's
    sync keys make collide moved to ids no other flag of the kernel uses: the GEMM's and
    conv2d's FIX->M pair from id 0 to 2; FlashAttention's AIV V->MTE2 flags (ids 0, 1, keyed
    like the AIC's MTE1->MTE2 flags 0..3) to ids 4, 5."""
    copy = root / "build_perfsim_ids_apart" / "src"
    parts = ("include", "kernels/manual/a2a3/gemm_performance", "kernels/manual/common/flash_atten")
    parts += ("kernels/manual/a2a3/topk", "kernels/manual/a2a3/conv2d_forward")
    for part in (*parts, "tests/costmodel/perf_sim_st"):
        shutil.copytree(root / part, copy / part, dirs_exist_ok=True)
    pair = "SetFlag<PIPE_FIX, PIPE_M>(0);\n    WaitFlag<PIPE_FIX, PIPE_M>(0);"
    _patched(copy / GEMM_KERNEL, [(pair, pair.replace("(0)", "(2)"))])
    _patched(copy / CONV_KERNEL, [(pair, pair.replace("(0)", "(2)"))])
    _patched(copy / FA_KERNEL, fa_pairs())
    return copy


MULTI_BLOCK_STEP = "pto/costmodel/perf_sim/pipe_model_sim_impl.inl"
# StepSimulateMultiCore's clock advance (lines 452-457 at f35e7f60) and the one-block loop's
# (StepSimulate, lines 261-265).
MULTI_BLOCK_ADVANCE = """                break; // true deadlock
        }
        if (progress.next_event != UINT64_MAX && progress.next_event > now)
            now = progress.next_event;"""
ONE_BLOCK_ADVANCE = """                break; // true deadlock
            if (progress.next_event != UINT64_MAX && progress.next_event > now)
                now = progress.next_event;
        }"""


FA_TESTS = "tests/costmodel/perf_sim_st/testcase/fa_perf_sim/main.cpp"
# The fourteen null GM arguments of each of its runTFA calls, and buffers of their own instead
# (16 MiB each, zeroed, allocated once; the kernel's types in its argument order).
NULL_GM_ARGS = re.compile(r"\(nullptr(?:,\s*nullptr){13}\)")
GM_TYPES = ("uint64_t", "half", "half", "half", "half") + ("float",) * 7 + ("uint8_t", "uint8_t")
OWN_GM_BUFFERS = """#include <cstdlib>
static void *OwnGmBuffer(int i)
{
    static void *buffers[16] = {};
    if (buffers[i] == nullptr)
        buffers[i] = std::calloc(1, 16u << 20);
    return buffers[i];
}
"""


def own_gm_buffers(path: Path) -> None:
    """Gives each GM argument of the FlashAttention tests' runTFA calls a buffer of its own."""
    args = ", ".join(f"static_cast<{ty} *>(OwnGmBuffer({i}))" for i, ty in enumerate(GM_TYPES))
    text, calls = NULL_GM_ARGS.subn(f"({args})", path.read_text())
    if calls != 4 or "using namespace pto;\n" not in text:
        raise RuntimeError(f"{path}: the null GM arguments are not where revision {REVISION} has them")
    path.write_text(text.replace("using namespace pto;\n", "using namespace pto;\n" + OWN_GM_BUFFERS, 1))


# The main loop's row slice of the QK tile `next_qk_tile` (fa_performance_kernel.cpp lines
# 898-909 at f35e7f60), recorded between the AIC's sub-tiles, and the tile's row slices all
# recorded after its last sub-tile (whose TPUSH they pop) instead. Only a test with more tiles
# than it preloads (LongSeq) runs this loop's row slices.
INDENT = " " * 16
MAIN_LOOP_SLICE = [
    (
        f"{INDENT}if (next_qk_tile != -1) {{\n{INDENT}    compute_p<",
        f"{INDENT}if (next_qk_tile != -1 && sub_tile == static_cast<int>(kTileFactor) - 1)\n"
        f"{INDENT}for (int row_slice = 0; row_slice < static_cast<int>(kTileFactor); ++row_slice) {{\n"
        f"{INDENT}    compute_p<",
    ),
    ("next_qk_tile, sub_tile, exp_max_ififo_block", "next_qk_tile, row_slice, exp_max_ififo_block"),
]


def clean_totals(root: Path) -> dict[str, int]:
    """Perf-Sim's FlashAttention totals built from a copy of the checkout whose tests give each
    GM tensor a buffer of its own, whose multi-block loop moves its clock as its one-block loop
    does (only after a step that started nothing) and whose kernel's main loop records a QK
    tile's row slices after the tile's last sub-tile."""
    copy = root / "build_perfsim_clean" / "src"
    for part in ("include", "kernels/manual/common/flash_atten", "tests/costmodel/perf_sim_st"):
        shutil.copytree(root / part, copy / part, dirs_exist_ok=True)
    _patched(copy / "include" / MULTI_BLOCK_STEP, [(MULTI_BLOCK_ADVANCE, ONE_BLOCK_ADVANCE)])
    own_gm_buffers(copy / FA_TESTS)
    _patched(copy / FA_KERNEL, MAIN_LOOP_SLICE)
    bins = build_peer(copy, root / "build_perfsim_clean" / "build", "fa_perf_sim")
    figures = parse_reports(run([bins / "fa_perf_sim"], cwd=bins).stdout)
    return {name: total for name, (total, _) in figures.items()}


def fa_pairs() -> list[tuple[str, str]]:
    """The FlashAttention kernel's V->MTE2 flag calls and the same calls 4 ids up."""
    pairs = []
    for op in ("set_flag", "wait_flag"):
        for ev, moved in (("pTileEventId", "pTileEventId + 4"), ("guEventId", "guEventId + 4")):
            pairs.append((f"{op}(PIPE_V, PIPE_MTE2, {ev})", f"{op}(PIPE_V, PIPE_MTE2, {moved})"))
        for ev, moved in (("EVENT_ID0", "(event_t)4"), ("EVENT_ID1", "(event_t)5")):
            pairs.append((f"{op}(PIPE_V, PIPE_MTE2, {ev})", f"{op}(PIPE_V, PIPE_MTE2, {moved})"))
    return pairs


def parse_reports(text: str) -> Figures:
    """Perf-Sim's printed reports: gtest name -> (total cycles, core 0's busy cycles per pipe
    row)."""
    out = {}
    for block in text.split("[ RUN      ] ")[1:]:
        name = block.split(None, 1)[0].strip()
        found = re.search(r"Total cycles : (\d+)", block)
        if found is None:
            raise RuntimeError(f"Perf-Sim test {name} printed no total")
        pipes = {}
        for row, value in re.findall(r"^\s*([A-Z0-9()]+) \|\s*(\d+|-)\s*\|", block, re.M):
            if row in PIPES and value != "-":
                pipes[row] = int(value)
        out[name] = (int(found.group(1)), pipes)
    return out


def run_suites(tree: Path, build: Path) -> Figures:
    figures: Figures = {}
    for suite in SUITES:
        bins = build_peer(tree, build / suite, suite)
        figures |= parse_reports(run([bins / suite], cwd=bins).stdout)
    return figures


def peer_figures(root: Path | None) -> tuple[Figures, dict[str, int], dict[str, int], str]:
    """Perf-Sim's figures, its totals with the flag ids apart, its FlashAttention totals with
    its harness's artefacts removed ("clean"), and where they come from."""
    missing = [tool for tool in ("cmake", "gcc-12", "g++-12") if shutil.which(tool) is None]
    if root is not None and not (root / "include/pto/costmodel/perf_sim").is_dir():
        logging.warning("%s is not a pto-isa checkout with Perf-Sim; using the recorded figures", root)
        root = None
    elif root is not None and missing:
        logging.warning("building Perf-Sim needs %s; using the recorded figures", ", ".join(missing))
        root = None
    if root is None:
        where = f"Perf-Sim figures recorded at pto-isa {REVISION} (build it: --pto-isa DIR or PTO_ISA_DIR)"
        return RECORDED, RECORDED_IDS_APART, RECORDED_CLEAN, where
    figures = run_suites(root, root / "build_perfsim")
    apart = run_suites(ids_apart_copy(root), root / "build_perfsim_ids_apart" / "build")
    apart_totals = {name: total for name, (total, _) in apart.items()}
    return figures, apart_totals, clean_totals(root), f"Perf-Sim built and run from {root}"


def error(ours: float, ref: float) -> float:
    return ours / ref - 1 if ref else 0.0


def one_thread_column(port, clean: dict[str, int]) -> str:
    """For a FlashAttention port: Perf-Sim's total with its harness's artefacts removed, ours
    with the order of Perf-Sim's one-thread harness added, and the error between."""
    if not isinstance(port, FaPort):
        return f"{'-':>8}{'-':>11}{'-':>8}"
    ordered = port.run(one_thread=True).cycles
    return f"{clean[port.test]:>8}{ordered:>11}{error(ordered, clean[port.test]):>+8.1%}"


def rows(root: Path | None = None) -> list[str]:
    """The whole-kernel table: per ported kernel, Perf-Sim's cycles, ours, the error (a case
    outside +-5% total or +-10% on a pipe is marked), Perf-Sim with the colliding flag ids
    apart and our error against that, Perf-Sim with its harness's artefacts removed (clean) and
    ours with the order of its one-thread harness added against that (one thread; both
    FlashAttention only), and each pipe's busy-cycle error."""
    figures, apart, clean, where = peer_figures(root)
    head = f"{'kernel':<42}{'Perf-Sim':>9}{'ours':>7}{'error':>8}  ok {'ids apart':>9}{'error':>8}"
    lines = [where, head + f"{'clean':>8}{'one thread':>11}{'error':>8}  pipes"]
    for port in PORTS:
        peer_total, peer_pipes = figures[port.test]
        copies = getattr(port, "peer_copies", 1)
        compared = getattr(port, "peer_rows", PIPES)
        peer_pipes = {
            p: v // copies if PIPES[p][0] == "AIV" else v for p, v in peer_pipes.items() if p in compared
        }
        total, busy = port.measure()
        errs = {p: error(busy[p], v) for p, v in peer_pipes.items()}
        err = error(total, peer_total)
        ok = abs(err) <= TOTAL_TOLERANCE and all(abs(e) <= PIPE_TOLERANCE for e in errs.values())
        pipes = ", ".join(f"{p} {e:+.1%}" for p, e in errs.items())
        both = (
            f"{apart[port.test]:>9}{error(total, apart[port.test]):>+8.1%}"
            if port.test in apart
            else f"{'-':>9}{'-':>8}"
        )
        mark = "yes" if ok else "NO "
        ordered = one_thread_column(port, clean)
        lines.append(f"{port.test:<42}{peer_total:>9}{total:>7}{err:>+8.1%}  {mark}{both}{ordered}  {pipes}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    default = os.environ.get("PTO_ISA_DIR")
    parser.add_argument("--pto-isa", type=Path, default=default, help="a pto-isa checkout at f35e7f60")
    args = parser.parse_args()
    for line in rows(Path(args.pto_isa) if args.pto_isa else None):
        print(line)


if __name__ == "__main__":
    main()
