// pto-isa's hand-synchronised single-core conv2d (its a2a3 conv2d_forward kernel, the one its
// Perf-Sim Conv2dPerfSim tests run), ported instruction for instruction so the two simulators
// price the same sequence. A 3 x 3 convolution, stride 1, padding 1, is a GEMM of the
// feature map's img2col matrix [hout * wout, 9 * cin] with the weights [9 * cin, cout]: per
// [baseM, baseN] output tile (baseM output pixels, whole rows of the image), K walks in baseK
// steps; every stepK steps one slab of the fmap (the input rows the tile's pixels read, of the
// channels those K steps cover) and one [baseK * stepK, baseN] weight block load into L1
// (double buffered by MTE1->MTE2 flags); each step builds its L0A slice with TIMG2COL and
// extracts its L0B slice (double buffered by M->MTE1 flags) and accumulates; the tile is
// stored from L0C on FIXPIPE. (The original's TASSIGNs, which bind tiles to addresses, are
// the addresses below; its SETFMATRIX per row of tiles is one here too.)
//
// Layouts: the fmap is NC1HWC0 as there, one image, a [cin / 16, hin * win * 16] tensor (c1
// rows); a slab is one 2-D window of it. The weights are the [9 * cin, cout] matrix whose K
// order, (c1, kh, kw, c0), is the img2col's: the original's FRACTAL_Z tensor holds the same
// matrix in 16 x 16 fractals, and both loads move the same bytes (L1 tiles here are
// row-major). The output is NHWC, [hout * wout, cout] fp16 (the original's NC1HWC0 store
// writes the same elements).
//
// args: fmap [cin / 16, hin * win * 16] fp16, weight [9 * cin, cout] fp16, out [hout * wout,
//       cout] fp16 (out), then hin, win, base_k, step_k.
#include <pypto/kernel.hpp>

using namespace pypto;

namespace {

constexpr int kBaseM = 128, kBaseN = 256, kC0 = 16, kFilter = 3, kPad = 1;
constexpr int64_t kL0PingPong = 32 * 1024;  // L0A / L0B halves, as the original assigns them
constexpr int64_t kWeightL1 = 0x20000;      // the weight buffers' L1 base, as the original's

int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }
int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

struct Shape {
  int64_t hin, win, base_k, step_k, channels;  // channels: a slab's (the original's channelSize)
  int64_t hout() const { return hin; }         // 3 x 3, stride 1, padding 1
  int64_t wout() const { return win; }
};

struct Buffers {
  ConvTile fmap[2];
  Tile weight[2], a_l0[2], b_l0[2];
  AccTile<float, kBaseM, kBaseN> acc{0};
};

// One K step of output tile (m, n): the original's ProcessKIteration and MacroMatmul.
void k_step(const Shape& s, Tensor fmap, Tensor weight, int64_t hin_start, int64_t wout_start,
            int64_t k, int64_t n, const Buffers& t, int& mte2_id, int& mte1_id) {
  const int64_t in_block = k % s.step_k;
  if (in_block == 0) {
    const int64_t c1 = k * s.base_k / (kFilter * kFilter * kC0);
    wait_flag(PIPE_MTE1, PIPE_MTE2, mte2_id);
    TLOAD(t.fmap[mte2_id], fmap, c1, hin_start * s.win * kC0);
    set_flag(PIPE_MTE2, PIPE_MTE1, EVENT_ID0);
    TLOAD(t.weight[mte2_id], weight, k * s.base_k, n * kBaseN);
    set_flag(PIPE_MTE2, PIPE_MTE1, EVENT_ID1);
    mte2_id = 1 - mte2_id;
  }
  const int cur = 1 - mte2_id;
  wait_flag(PIPE_M, PIPE_MTE1, mte1_id);
  if (in_block == 0) wait_flag(PIPE_MTE2, PIPE_MTE1, EVENT_ID0);
  TIMG2COL(t.a_l0[mte1_id], t.fmap[cur], wout_start, in_block * s.base_k);
  if (in_block == 0) wait_flag(PIPE_MTE2, PIPE_MTE1, EVENT_ID1);
  TEXTRACT(t.b_l0[mte1_id], t.weight[cur], in_block * s.base_k, 0);
  if ((k + 1) % s.step_k == 0) set_flag(PIPE_MTE1, PIPE_MTE2, cur);
  set_flag(PIPE_MTE1, PIPE_M, mte1_id);
  wait_flag(PIPE_MTE1, PIPE_M, mte1_id);
  if (k == 0) {
    TMATMUL(t.acc, t.a_l0[mte1_id], t.b_l0[mte1_id]);
  } else {
    TMATMUL_ACC(t.acc, t.a_l0[mte1_id], t.b_l0[mte1_id]);
  }
  set_flag(PIPE_M, PIPE_MTE1, mte1_id);
  mte1_id = 1 - mte1_id;
}

// The original's StoreResult: the accumulator leaves on FIXPIPE, then may be reused.
void store_tile(Tensor out, int64_t m, int64_t n, const Tile& acc) {
  set_flag(PIPE_M, PIPE_FIX, EVENT_ID0);
  wait_flag(PIPE_M, PIPE_FIX, EVENT_ID0);
  TSTORE(out, m * kBaseM, n * kBaseN, acc);
  set_flag(PIPE_FIX, PIPE_M, EVENT_ID0);
  wait_flag(PIPE_FIX, PIPE_M, EVENT_ID0);
}

// The slab a row of output tiles reads (the original's Compute, per mIter): its input rows,
// padding and the two fmap buffers bound to them.
void bind_slab(const Shape& s, int64_t m, Buffers& t, int64_t& hin_start, int64_t& wout_start) {
  const int64_t m_start = m * kBaseM, m_end = m_start + kBaseM - 1;
  const int64_t hout_start = m_start / s.wout(), hout_end = m_end / s.wout();
  hin_start = max64(0, hout_start - kPad);
  const int64_t hin_end = min64(hout_end - kPad + (kFilter - 1), s.hin - 1);
  const int64_t rows = hin_end - hin_start + 1;
  wout_start = m_start % s.wout();
  pypto_conv_geom g{};
  g.fmap_h = static_cast<int32_t>(rows), g.fmap_w = static_cast<int32_t>(s.win);
  g.pad_left = kPad, g.pad_right = kPad;
  g.pad_top = static_cast<int32_t>(max64(0, kPad - hout_start));
  g.pad_bottom = static_cast<int32_t>(max64(0, hout_end + kFilter - s.hin - kPad));
  g.filter_h = kFilter, g.filter_w = kFilter;
  g.stride_h = g.stride_w = g.dilation_h = g.dilation_w = 1;
  g.channels = static_cast<int32_t>(s.channels);
  const Tile slab(Mem::Mat, DType::FP16, static_cast<int32_t>(s.channels / kC0),
                  static_cast<int32_t>(rows * s.win * kC0), 0);
  t.fmap[0] = ConvTile(slab, g);
  SETFMATRIX(t.fmap[0]);
  t.fmap[1] = ConvTile(slab.at(s.channels * s.win * (rows + kFilter - 1) * 2), g);
}

}  // namespace

extern "C" void kernel_entry(__gm__ int64_t* args) {
  const Tensor fmap = arg_tensor(args, 0), weight = arg_tensor(args, 1), out = arg_tensor(args, 2);
  Shape s{arg_i64(args, 3), arg_i64(args, 4), arg_i64(args, 5), arg_i64(args, 6), 0};
  s.channels = (s.step_k * s.base_k + kFilter * kFilter - 1) / (kFilter * kFilter);
  const int32_t kb = static_cast<int32_t>(s.step_k * s.base_k);
  const int64_t w_bytes = int64_t{kb} * kBaseN * 2;
  const Tile w_l1(Mem::Mat, DType::FP16, kb, kBaseN, kWeightL1);
  const Tile a_l0(Mem::Left, DType::FP16, kBaseM, static_cast<int32_t>(s.base_k), 0);
  const Tile b_l0(Mem::Right, DType::FP16, static_cast<int32_t>(s.base_k), kBaseN, 0);
  // A B slice over 32 KiB (base_k 96: 48 KiB) starts its pong where its ping ends.
  const int64_t b_pong = max64(kL0PingPong, s.base_k * kBaseN * 2);
  Buffers t{{},
            {w_l1, w_l1.at(kWeightL1 + w_bytes)},
            {a_l0, a_l0.at(kL0PingPong)},
            {b_l0, b_l0.at(b_pong)}};
  const int64_t m_loop = (s.hout() * s.wout() + kBaseM - 1) / kBaseM;
  const int64_t n_loop = out.cols() / kBaseN, k_loop = weight.rows() / s.base_k;
  int mte2_id = 0, mte1_id = 0;
  set_flag(PIPE_MTE1, PIPE_MTE2, EVENT_ID0);
  set_flag(PIPE_MTE1, PIPE_MTE2, EVENT_ID1);
  set_flag(PIPE_M, PIPE_MTE1, EVENT_ID0);
  set_flag(PIPE_M, PIPE_MTE1, EVENT_ID1);
  for (int64_t m = 0; m < m_loop; ++m) {
    int64_t hin_start = 0, wout_start = 0;
    bind_slab(s, m, t, hin_start, wout_start);
    for (int64_t n = 0; n < n_loop; ++n) {
      for (int64_t k = 0; k < k_loop; ++k)
        k_step(s, fmap, weight, hin_start, wout_start, k, n, t, mte2_id, mte1_id);
      store_tile(out, m, n, t.acc);
    }
  }
  wait_flag(PIPE_M, PIPE_MTE1, EVENT_ID0);
  wait_flag(PIPE_M, PIPE_MTE1, EVENT_ID1);
  wait_flag(PIPE_MTE1, PIPE_MTE2, EVENT_ID0);
  wait_flag(PIPE_MTE1, PIPE_MTE2, EVENT_ID1);
}
