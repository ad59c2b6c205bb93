"""pto-isa's Perf-Sim GEMM, FlashAttention, top-k and conv2d test kernels, ported to
<pypto/kernel.hpp> (benchmarks/kernels/peer_gemm.cpp, peer_fa.cpp, peer_topk.cpp,
peer_conv2d.cpp), pinned under the pto-isa profile: a change to
one of that profile's rules shows here as a changed count. Perf-Sim's own figures and the
comparison are benchmarks/peer_perfsim.py's; docs/calibration.md explains each difference."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from pypto import platforms
from pypto.errors import MemorySpaceError
from pypto.kernel_build import KernelSource, build_kernel
from pypto.runtime import run_kernel_file

KERNELS = Path(__file__).resolve().parents[2] / "benchmarks" / "kernels"
PEER_GEMM = KERNELS / "peer_gemm.cpp"


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
        (128, 64, 256, 1, 3022, {"MTE2": 627, "MTE1": 322, "CUBE": 518, "FIXPIPE": 1614}),
        # Perf-Sim: 87313 (its first load of the second tile waits for the first tile's store:
        # its test's GM tensors all start at address 0).
        (256, 4096, 256, 4, 84490, {"MTE2": 80256, "MTE1": 41216, "CUBE": 66304, "FIXPIPE": 3228}),
        # Perf-Sim: 139420 with its flags keyed by destination pipe and id; 182465 with the
        # accumulator's FIX->M flag on an id of its own, the schedule the flags mean.
        (1536, 256, 1024, 4, 179699, {"MTE2": 120384, "MTE1": 61824, "CUBE": 99456, "FIXPIPE": 77472}),
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


@pytest.fixture(scope="module")
def peer_fa():
    return build_kernel(KernelSource(name="peer_fa", path=KERNELS / "peer_fa.cpp"), platform="a2a3sim")


SLOTS = 8  # the port's ring depth


def run_fa(so, blocks, cube_s0, head, s1, cube_s1, one_thread=0):
    """The FlashAttention port over `blocks` clusters of `cube_s0` query rows, its output
    checked against softmax(q k^T / sqrt(head)) v; `one_thread`: with the order of Perf-Sim's
    harness added (peer_fa.cpp)."""
    rng = np.random.default_rng(0)
    rows, factor = blocks * cube_s0, 256 // cube_s1
    q, k, v = (rng.uniform(-1, 1, (n, head)).astype(np.float16) for n in (rows, s1, s1))
    o = np.zeros((rows, head), np.float32)
    rings = [np.zeros((blocks * SLOTS * factor * cube_s0, cube_s1), dt) for dt in (np.float32, np.float16)]
    pv = np.zeros((blocks * SLOTS * cube_s0, head), np.float32)
    args = [q, np.ascontiguousarray(k.T), v, o, *rings, pv, cube_s0, cube_s1, 256, 4, one_thread]
    plat = platforms.get("a2a3sim", cost_profile="pto-isa")
    rep = run_kernel_file(
        so, args, outputs={3, 4, 5, 6}, platform=plat, core="cluster", block_num=blocks, isolate=False
    )
    s = q.astype(np.float32) @ k.astype(np.float32).T / np.sqrt(head)
    e = np.exp(s - s.max(axis=1, keepdims=True))
    np.testing.assert_allclose(
        o, e @ v.astype(np.float32) / e.sum(axis=1, keepdims=True), rtol=1e-2, atol=1e-3
    )
    return rep


def block0_busy(rep):
    """Block 0's busy cycles: the AIC's pipes, and the two AIVs' summed (Perf-Sim's rows)."""
    busy = {}
    for task in rep.tasks:
        if task.block == 0:
            for pipe, cycles in task.pipe_busy.items():
                if cycles:
                    busy[(task.core_kind, pipe)] = busy.get((task.core_kind, pipe), 0) + cycles
    return busy


AIC_STANDARD = {
    ("AIC", "MTE2"): 10450,
    ("AIC", "MTE1"): 6176,
    ("AIC", "CUBE"): 8288,
    ("AIC", "FIXPIPE"): 9684,
}


@pytest.mark.parametrize(
    ("blocks", "cube_s0", "head", "s1", "cube_s1", "one_thread", "cycles", "busy"),
    [
        # FAPerfSim.Standard_128x128x1024. Perf-Sim: 39003 cycles; MTE2 10450 (AIC) and 13400
        # (AIVs), MTE1 6168, CUBE 8288, FIXPIPE 9684, VECTOR 26660, MTE3 2966.
        (
            1,
            128,
            128,
            1024,
            128,
            0,
            27649,
            AIC_STANDARD | {("AIV", "MTE2"): 13400, ("AIV", "VECTOR"): 25482, ("AIV", "MTE3"): 2966},
        ),
        # The same with the order of Perf-Sim's harness added (AIV 0's P pushes before the AIC's
        # next sections): the busy cycles are the same, the schedule is Perf-Sim's +5.4%.
        (
            1,
            128,
            128,
            1024,
            128,
            1,
            41091,
            AIC_STANDARD | {("AIV", "MTE2"): 13400, ("AIV", "VECTOR"): 25482, ("AIV", "MTE3"): 2966},
        ),
        # FAPerfSim.CAModelCompare_64x128x512_2core. Perf-Sim: 10142 cycles; MTE2 2612 and 2780,
        # MTE1 1420, CUBE 1072, FIXPIPE 2020, VECTOR 6950, MTE3 740.
        (
            2,
            64,
            64,
            512,
            128,
            0,
            6947,
            {("AIC", "MTE2"): 2612, ("AIC", "MTE1"): 1424, ("AIC", "CUBE"): 1072, ("AIC", "FIXPIPE"): 2020}
            | {("AIV", "MTE2"): 2780, ("AIV", "VECTOR"): 6454, ("AIV", "MTE3"): 740},
        ),
    ],
)
def test_ported_flash_attention_cycles_are_pinned(
    peer_fa, blocks, cube_s0, head, s1, cube_s1, one_thread, cycles, busy
):
    rep = run_fa(peer_fa, blocks, cube_s0, head, s1, cube_s1, one_thread)
    assert rep.cycles == cycles
    got = block0_busy(rep)
    assert {key: got[key] for key in busy} == busy


def test_flash_attention_blocks_run_side_by_side(peer_fa):
    """Four clusters, one per block of 128 query rows: under the pto-isa profile they share no
    pipe and no GM budget (Perf-Sim prices each core's transfers alone), so the launch takes
    exactly as long as one block, and its stores as long as one block's (Perf-Sim: 48313 vs
    39003, its multi-block loop's clock; 40861 with that loop stepping as its one-block loop,
    and its block 0 then runs 39003: docs/calibration.md)."""
    one = run_fa(peer_fa, 1, 128, 128, 1024, 128)
    four = run_fa(peer_fa, 4, 128, 128, 1024, 128)
    assert four.cycles == one.cycles
    assert block0_busy(four)[("AIV", "MTE3")] == block0_busy(one)[("AIV", "MTE3")] == 2966


# AIV 0 loads a [16, 64] fp32 tile and takes its exp, then sets a cross-core flag on its vector
# pipe; the AIC waits for it on MTE2, then extracts a [16, 32] fp16 tile on MTE1.
HOLD_KERNEL = r"""
#include <pypto/kernel.hpp>
using namespace pypto;

extern "C" void kernel_entry(__gm__ int64_t* args) {
  const Tensor x = arg_tensor(args, 0);
  if (is_aic()) {
    cross_wait_flag(0, PIPE_MTE2, 0);
    TEXTRACT(Tile(Mem::Left, DType::FP16, 16, 32, 0), Tile(Mem::Mat, DType::FP16, 16, 32, 0), 0, 0);
  } else if (get_subblockid() == 0) {
    const Tile t(Mem::Vec, DType::FP32, 16, 64, 0);
    TLOAD(t, x, 0, 0);
    set_flag(PIPE_MTE2, PIPE_V, EVENT_ID0);
    wait_flag(PIPE_MTE2, PIPE_V, EVENT_ID0);
    TEXP(t, t);
    cross_set_flag(0, PIPE_V, 0);
  }
}
"""


@pytest.mark.parametrize(("holds", "cycles", "extract_start"), [(None, 139, 134), (0, 133, 2)])
def test_a_cross_core_wait_holds_the_issue_under_the_pto_isa_profile(tmp_path, holds, cycles, extract_start):
    """Perf-Sim issues a TPOP from its Scalar queue and later instructions wait for it, so under
    the pto-isa profile the AIC's extract (on MTE1, not the waiting pipe) issues only after the
    AIV's flag. Hand count: the AIV's load, 4 KiB at 100.9 GiB/s (58.6 B/cycle: 69.9,
    truncated to 69 as pto-isa prices a GM copy), issues at 1 and ends at 1 + 69 = 70; its exp,
    16 repeats, 70 + 31 + 2 x 16 = 133; the flag then. The AIC's wait passes at 133, the
    extract issues at 134 and takes 1 KiB at 441 GiB/s (255.95 B/cycle: 4.0008, rounded up to
    5): 139. With the field 0 (the device rule) the wait holds only MTE2: the extract issues at
    2."""
    path = tmp_path / "hold.cpp"
    path.write_text(HOLD_KERNEL)
    so = build_kernel(KernelSource(name="hold", path=path), platform="a2a3sim")
    plat = platforms.get("a2a3sim", cost_profile="pto-isa")
    if holds is not None:
        plat = plat.with_overrides(cross_sync_holds_issue=holds)
    x = np.linspace(-1, 1, 16 * 64, dtype=np.float32).reshape(16, 64)
    rep = run_kernel_file(so, [x], outputs=set(), platform=plat, core="cluster", record=True, isolate=False)
    assert rep.cycles == cycles
    aic = next(task for task in rep.tasks if task.core_kind == "AIC")
    assert [r["start"] for r in aic.trace.rows() if r["name"] == "TEXTRACT"] == [extract_start]


@pytest.fixture(scope="module")
def peer_topk():
    return build_kernel(KernelSource(name="peer_topk", path=KERNELS / "peer_topk.cpp"), platform="a2a3sim")


@pytest.mark.parametrize(
    ("rows", "cols", "topk", "cycles", "busy"),
    [
        # TopkPerfSim.Small_128x1024_k128. Perf-Sim, one AIV: 190361 cycles; MTE2 8965, VECTOR
        # 190100, MTE3 1152 (each 9.4-cycle store truncated to 9, there and here).
        (128, 1024, 128, 196206, {"MTE2": 8965, "VECTOR": 195988, "MTE3": 1152}),
        # TopkPerfSim.Narrow_128x512_k32. Perf-Sim, one AIV: 96008 cycles; MTE2 4450, VECTOR
        # 95892, MTE3 256 (2.3-cycle stores: 2).
        (128, 512, 32, 94334, {"MTE2": 4450, "VECTOR": 94228, "MTE3": 256}),
    ],
)
def test_ported_topk_cycles_are_pinned(peer_topk, rows, cols, topk, cycles, busy):
    """The top-k port on one AIV, its values and indices checked against numpy's stable
    descending sort (ties keep the lower column first, as TSORT32 and TMRGSORT do)."""
    x = np.random.default_rng(0).standard_normal((rows, cols)).astype(np.float32)
    idx = np.arange(cols, dtype=np.uint32).reshape(1, cols)
    out = np.zeros((rows, topk), np.float32)
    index = np.zeros((rows, topk), np.uint32)
    plat = platforms.get("a2a3sim", cost_profile="pto-isa")
    rep = run_kernel_file(peer_topk, [x, idx, out, index, topk], outputs={2, 3}, platform=plat, isolate=False)
    order = np.argsort(-x, axis=1, kind="stable")[:, :topk]
    np.testing.assert_array_equal(index, order)
    np.testing.assert_array_equal(out, np.take_along_axis(x, order, axis=1))
    assert rep.cycles == cycles
    assert {pipe: rep.pipe_busy[pipe] for pipe in busy} == busy


SORT_KERNEL = r"""
#include <pypto/kernel.hpp>
using namespace pypto;

extern "C" void kernel_entry(__gm__ int64_t* args) {
  const Tensor x = arg_tensor(args, 0), idx = arg_tensor(args, 1);
  const Tile src(Mem::Vec, DType::FP32, 1, 1024, 0), ix(Mem::Vec, DType::UINT32, 1, 1024, 4096);
  const Tile pairs(Mem::Vec, DType::FP32, 1, 2048, 8192), merged(Mem::Vec, DType::FP32, 1, 2048, 16384);
  TLOAD(src, x, 0, 0);
  TLOAD(ix, idx, 0, 0);
  set_flag(PIPE_MTE2, PIPE_V, EVENT_ID0);
  wait_flag(PIPE_MTE2, PIPE_V, EVENT_ID0);
  TSORT32(pairs, src, ix);
  TMRGSORT(merged, pairs, 64);
  TMRGSORT(pairs.valid(1, 512), merged.valid(1, 256), merged.at(16384 + 1024 * 4).valid(1, 256), 0);
  TGATHER(src.valid(1, 256), pairs.valid(1, 512), 1);
  TGATHER(src.at(2048).valid(1, 256), pairs.valid(1, 512), 1);
}
"""


@pytest.mark.parametrize(
    ("profile", "durations"),
    [
        # pto-isa (Perf-Sim's Small_128x1024_k128 trace prices the same steps 533, 644, 82, 52,
        # 18): TSORT32, 32 repeats of 32: head 20 + 16 x 32 + barrier 1 = 533, its barrier ends
        # the stream; TMRGSORT of four runs, 8 groups: head 20 + 78 x 8 = 644; of two lists, the
        # stream continuing: 78 + barrier 1 + a 2 KiB copy at 594.4 B/cycle truncated, 3 = 82,
        # its barrier ends the stream; a mask TGATHER of one row: 4 mask writes + head and tail
        # 34 + 14 = 52, then 4 + 14 = 18 in the stream.
        ("pto-isa", [533, 644, 82, 52, 18]),
        # device: the vec_sort row (31 + 4 a repeat of 256 B) for TSORT32 cold, 16 repeats: 95,
        # and the merges in its run, 32 and 8 repeats: 128, 32; the copy row (1 a repeat) for
        # each TGATHER in the run, 8 repeats of its 2 KiB source: 8.
        (None, [95, 128, 32, 8, 8]),
    ],
)
def test_sorts_are_priced_as_pto_isa_expands_them(tmp_path, profile, durations):
    path = tmp_path / "sorts.cpp"
    path.write_text(SORT_KERNEL)
    so = build_kernel(KernelSource(name="sorts", path=path), platform="a2a3sim")
    plat = platforms.get("a2a3sim", cost_profile=profile) if profile else platforms.get("a2a3sim")
    x = np.random.default_rng(0).standard_normal((1, 1024)).astype(np.float32)
    idx = np.arange(1024, dtype=np.uint32).reshape(1, 1024)
    rep = run_kernel_file(so, [x, idx], outputs=set(), platform=plat, record=True, isolate=False)
    rows = [r for r in rep.tasks[0].trace.rows() if r["name"] in ("TSORT32", "TMRGSORT", "TGATHER")]
    assert [r["end"] - r["start"] for r in rows] == durations


@pytest.fixture(scope="module")
def peer_conv2d():
    return build_kernel(
        KernelSource(name="peer_conv2d", path=KERNELS / "peer_conv2d.cpp"), platform="a2a3sim"
    )


def conv3x3(x, w):
    """numpy's 3 x 3 convolution, stride 1, padding 1: x [cin, h, w], w [cout, cin, 3, 3] ->
    [h * w, cout] fp32, as one product of every pixel's 3 x 3 window with the weights."""
    xp = np.pad(x.astype(np.float32), ((0, 0), (1, 1), (1, 1)))
    windows = np.lib.stride_tricks.sliding_window_view(xp, (3, 3), axis=(1, 2))  # [cin, h, w, 3, 3]
    return np.einsum("chwij,ocij->hwo", windows, w.astype(np.float32)).reshape(-1, w.shape[0])


@pytest.mark.parametrize(
    ("cin", "h", "wd", "base_k", "cycles", "busy"),
    [
        # Conv2dPerfSim.Small_16cin_8x16. Perf-Sim: 3976 cycles; MTE2 992, MTE1 720, CUBE 1170,
        # FIXPIPE 1613 (GM transfers truncated as there; the L1 -> L0 moves and the FIXPIPE store
        # round up: MTE1 +6, FIXPIPE +1).
        (16, 8, 16, 48, 3976, {"MTE2": 992, "MTE1": 726, "CUBE": 1170, "FIXPIPE": 1614}),
        # Conv2dPerfSim.Medium_32cin_16x16. Perf-Sim: 8325 with its flags keyed by destination
        # pipe and id (the next tile's matmuls start while the accumulator is still stored, as
        # in its GEMM); 9105 with the FIX->M flag on an id of its own.
        (32, 16, 16, 48, 9106, {"MTE2": 3992, "MTE1": 2904, "CUBE": 4680, "FIXPIPE": 3228}),
        # Conv2dPerfSim.Large_64cin_32x32. Perf-Sim: 47889; 52460 with the FIX->M flag apart.
        # Its two 48 KiB B slices need the L0B at 128 KiB (Perf-Sim checks no addresses).
        (64, 32, 32, 96, 52467, {"MTE2": 32488, "MTE1": 23136, "CUBE": 37152, "FIXPIPE": 12912}),
    ],
)
def test_ported_conv2d_cycles_are_pinned(peer_conv2d, cin, h, wd, base_k, cycles, busy):
    """The conv2d port (img2col by TIMG2COL, K in base_k steps, three a load), its output
    checked against numpy's convolution."""
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, (cin, h, wd)).astype(np.float16)
    w = rng.uniform(-1, 1, (256, cin, 3, 3)).astype(np.float16)
    c1 = cin // 16
    fmap = np.ascontiguousarray(x.reshape(c1, 16, h, wd).transpose(0, 2, 3, 1).reshape(c1, -1))
    weight = np.ascontiguousarray(w.reshape(256, c1, 16, 3, 3).transpose(1, 3, 4, 2, 0).reshape(-1, 256))
    out = np.zeros((h * wd, 256), np.float16)
    plat = platforms.get("a2a3sim", cost_profile="pto-isa").with_overrides(l0b_bytes=128 * 1024)
    rep = run_kernel_file(
        peer_conv2d,
        [fmap, weight, out, h, wd, base_k, 3],
        outputs={2},
        platform=plat,
        core="aic",
        isolate=False,
    )
    np.testing.assert_allclose(out.astype(np.float32), conv3x3(x, w), rtol=2e-2, atol=5e-2)
    assert rep.cycles == cycles
    assert {pipe: rep.pipe_busy[pipe] for pipe in busy} == busy


def test_a_kernel_on_a_core_kind_without_its_buffers_is_refused_naming_both(peer_gemm, fixture_kernel):
    """An AIV has UB only; L1 and L0 are the AIC's. The ported GEMM run on the default AIV core,
    or a vector kernel run on an AIC, is a MemorySpaceError at its first tile in the wrong
    space, naming the core to run it on, and writes nothing."""
    a, b = np.ones((128, 64), np.float16), np.ones((64, 256), np.float16)
    c = np.zeros((128, 256), np.float32)
    with pytest.raises(MemorySpaceError, match=r"is in Mat, which an AIV core does not have .*core=\"aic\""):
        run_kernel_file(peer_gemm, [a, b, c, 1], outputs={2}, isolate=False)  # core="aiv", the default
    assert not c.any()
    x, out = np.ones((64, 128), np.float32), np.zeros((64, 128), np.float32)
    with pytest.raises(MemorySpaceError, match=r"is in Vec, which an AIC core does not have .*core=\"aiv\""):
        run_kernel_file(fixture_kernel("exp_single_buffer"), [x, out], outputs={1}, core="aic", isolate=False)
    assert not out.any()
