"""TIMG2COL and SETFMATRIX, the convolution load: an NC1HWC0 feature map in L1 read into L0A
as a window of its img2col matrix, checked against numpy's im2col of the same convolution
(a general geometry: strides, dilations and uneven padding), priced as an L1 -> L0A move of
the window's bytes, and refused with the operand named when the register or the window is
wrong. The whole-kernel case (pto-isa's conv2d, its output against a numpy convolution) is
tests/sim/test_peer_kernels.py's."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pypto import errors, platforms
from pypto.kernel_build import KernelSource, build_kernel
from pypto.runtime import run_kernel_file

# The window comes out through the cube: img2col window x identity, exact in fp32.
KERNEL = r"""
#include <pypto/kernel.hpp>
using namespace pypto;

extern "C" void kernel_entry(__gm__ int64_t* args) {
  const Tensor x = arg_tensor(args, 0), eye = arg_tensor(args, 1), out = arg_tensor(args, 2);
  pypto_conv_geom g{};
  int32_t* field = &g.fmap_h;
  for (int i = 0; i < 13; ++i) field[i] = static_cast<int32_t>(arg_i64(args, 3 + i));
  const int64_t pos_m = arg_i64(args, 16), pos_k = arg_i64(args, 17), set = arg_i64(args, 18);
  const DType dt = static_cast<DType>(arg_i64(args, 19));
  const int32_t m = static_cast<int32_t>(out.rows()), k = static_cast<int32_t>(out.cols());
  const Tile fmap(Mem::Mat, dt, static_cast<int32_t>(x.rows()), static_cast<int32_t>(x.cols()), 0);
  const Tile ident(Mem::Mat, dt, k, k, 65536);
  TLOAD(fmap, x, 0, 0);
  TLOAD(ident, eye, 0, 0);
  set_flag(PIPE_MTE2, PIPE_MTE1, EVENT_ID0);
  wait_flag(PIPE_MTE2, PIPE_MTE1, EVENT_ID0);
  const ConvTile conv(fmap, g);
  if (set) SETFMATRIX(conv);
  const Tile left(Mem::Left, dt, m, k, 0), right(Mem::Right, dt, k, k, 0);
  TIMG2COL(left, conv, pos_m, pos_k);
  TEXTRACT(right, ident, 0, 0);
  set_flag(PIPE_MTE1, PIPE_M, EVENT_ID0);
  wait_flag(PIPE_MTE1, PIPE_M, EVENT_ID0);
  const Tile acc(Mem::Acc, DType::FP32, m, k, 0);
  TMATMUL(acc, left, right);
  set_flag(PIPE_M, PIPE_FIX, EVENT_ID0);
  wait_flag(PIPE_M, PIPE_FIX, EVENT_ID0);
  TSTORE(out, 0, 0, acc);
}
"""

# 32 channels (two c0 planes) of 8 x 8, a 3 x 2 filter, stride (2, 1), dilation (1, 2),
# padding left 1, right 0, top 2, bottom 1: 5 x 7 output pixels, 192 img2col columns.
GEOM = dict(fmap_h=8, fmap_w=8, pad_left=1, pad_right=0, pad_top=2, pad_bottom=1, filter_h=3,
            filter_w=2, stride_h=2, stride_w=1, dilation_h=1, dilation_w=2, channels=32)  # fmt: skip


def im2col(x: np.ndarray, g: dict, c0: int = 16) -> np.ndarray:
    """numpy's img2col of x [channels, h, w]: a row per output pixel, columns (c1, kh, kw, c)."""
    xp = np.pad(x, ((0, 0), (g["pad_top"], g["pad_bottom"]), (g["pad_left"], g["pad_right"])))
    names = ("filter_h", "filter_w", "stride_h", "stride_w", "dilation_h", "dilation_w")
    fh, fw, sh, sw, dh, dw = (g[k] for k in names)
    hout = (xp.shape[1] - dh * (fh - 1) - 1) // sh + 1
    wout = (xp.shape[2] - dw * (fw - 1) - 1) // sw + 1
    rows = []
    for oh in range(hout):
        for ow in range(wout):
            h0, w0 = oh * sh, ow * sw
            taps = xp[:, h0 : h0 + dh * (fh - 1) + 1 : dh, w0 : w0 + dw * (fw - 1) + 1 : dw]
            c1 = taps.reshape(-1, c0, fh, fw).transpose(0, 2, 3, 1)  # (c1, kh, kw, c)
            rows.append(c1.reshape(-1))
    return np.array(rows)


def nc1hwc0(x: np.ndarray) -> np.ndarray:
    """x [channels, h, w] in NC1HWC0 order (c0 = 32 B / element size), one row per c0 plane."""
    c, h, w = x.shape
    c0 = 32 // x.itemsize
    planes = x.reshape(c // c0, c0, h, w).transpose(0, 2, 3, 1)
    return np.ascontiguousarray(planes.reshape(c // c0, h * w * c0))


DTYPES = {np.float16: 1, np.float32: 0}  # pypto_dtype: PYPTO_FP16, PYPTO_FP32


@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    path = tmp_path_factory.mktemp("img2col") / "img2col.cpp"
    path.write_text(KERNEL)
    return build_kernel(KernelSource(name="img2col", path=path), platform="a2a3sim")


def run(so, x, m, k, pos_m, pos_k, geom=GEOM, set_register=True, profile=None):
    eye = np.eye(k, dtype=x.dtype)
    out = np.zeros((m, k), np.float32)
    plat = platforms.get("a2a3sim", cost_profile=profile) if profile else platforms.get("a2a3sim")
    scalars = [*geom.values(), pos_m, pos_k, int(set_register), DTYPES[x.dtype.type]]
    rep = run_kernel_file(so, [nc1hwc0(x), eye, out, *scalars], outputs={2}, platform=plat, core="aic",
                          record=True, isolate=False)  # fmt: skip
    return out, rep


@pytest.mark.parametrize(
    ("dtype", "pos_m", "pos_k"),
    [(np.float16, 0, 0), (np.float16, 16, 64), (np.float16, 19, 32), (np.float32, 16, 40)],
)
def test_a_window_of_the_img2col_matrix_is_numpys(kernel, dtype, pos_m, pos_k):
    """fp16 (c0 16: two channel planes) and fp32 (c0 8: four)."""
    x = np.random.default_rng(1).uniform(-2, 2, (32, 8, 8)).astype(dtype)
    cols = im2col(x.astype(np.float32), GEOM, 32 // x.itemsize)
    assert cols.shape == (35, 192)
    out, _ = run(kernel, x, 16, 128, pos_m, pos_k)
    np.testing.assert_array_equal(out, cols[pos_m : pos_m + 16, pos_k : pos_k + 128])


@pytest.mark.parametrize(
    ("profile", "dtype", "priced_bytes"),
    [
        ("pto-isa", np.float16, 4096),
        ("pto-isa", np.float32, 4096),
        (None, np.float16, 4096),
        (None, np.float32, 8192),
    ],
)
def test_timg2col_is_priced_as_an_l1_to_l0a_move_of_its_window(kernel, profile, dtype, priced_bytes):
    """pto-isa prices img2colv2_cbuf_to_ca as stepM x stepK x 2 bytes whatever the dtype, at its
    L1 -> L0A bandwidth (441 GiB/s: 255.95 B/cycle): a [16, 128] window is 4096 bytes' worth,
    16.003 cycles, rounded up once as every instruction here, in fp16 and in fp32. The device
    profile prices the bytes it moves at its own L1 -> L0A rate (an assumption: no device
    figure for img2col), twice as many in fp32."""
    x = np.zeros((32, 8, 8), dtype)
    _, rep = run(kernel, x, 16, 128, 0, 0, profile=profile)
    plat = platforms.get("a2a3sim", cost_profile=profile) if profile else platforms.get("a2a3sim")
    assert plat.img2col_priced_elem_bytes == (2 if profile else 0)
    if profile:
        assert plat.bw_l1_to_l0a == pytest.approx(441.0 * 2**30 / 1.85e9)
    rows = {r["name"]: r for r in rep.tasks[0].trace.rows()}
    assert rows["TIMG2COL"]["end"] - rows["TIMG2COL"]["start"] == math.ceil(priced_bytes / plat.bw_l1_to_l0a)
    assert rows["SETFMATRIX"]["end"] - rows["SETFMATRIX"]["start"] == 1  # one scalar issue slot


def test_timg2col_before_setfmatrix_is_refused(kernel):
    x = np.zeros((32, 8, 8), np.float16)
    with pytest.raises(ValueError, match="SETFMATRIX.*before TIMG2COL"):
        run(kernel, x, 16, 128, 0, 0, set_register=False)


@pytest.mark.parametrize(
    ("pos_m", "pos_k", "geom", "error", "message"),
    [
        (32, 0, GEOM, errors.OutOfBoundsError, r"rows \[32, 48\) .* outside the img2col matrix \[35, 192\]"),
        (0, 80, GEOM, errors.OutOfBoundsError, r"cols \[80, 208\) .* outside the img2col matrix"),
        (0, 8, GEOM, errors.ShapeMismatchError, "pos_k 8 .* multiples of c0 = 16"),
        (0, 0, GEOM | {"channels": 24}, errors.ShapeMismatchError, "channels 24 must be a positive multiple"),
        (0, 0, GEOM | {"fmap_h": 9}, errors.ShapeMismatchError, "does not fit src"),
    ],
)
def test_a_bad_window_or_geometry_is_refused(kernel, pos_m, pos_k, geom, error, message):
    x = np.zeros((32, 8, 8), np.float16)
    with pytest.raises(error, match=message):
        run(kernel, x, 16, 128, pos_m, pos_k, geom=geom)
