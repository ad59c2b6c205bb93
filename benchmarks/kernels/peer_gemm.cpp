// pto-isa's hand-synchronised single-core GEMM (its gemm_performance kernel, the one its
// Perf-Sim GemmPerfSim tests run), ported instruction for instruction so the two simulators
// price the same sequence: per [baseM, baseN] output tile, K walks in baseK steps; every stepK
// steps one [baseM, baseK*stepK] A block and one [baseK*stepK, baseN] B block load into L1
// (double buffered by MTE1->MTE2 flags), each step extracts its L0A / L0B slices (double
// buffered by M->MTE1 flags) and accumulates; the tile is stored from L0C on FIXPIPE.
// (The original's TASSIGNs, which bind tiles to addresses, are the addresses below.)
//
// args: a [M, K] fp16, b [K, N] fp16, c [M, N] fp32 (out), then step_k.
#include <pypto/kernel.hpp>

using namespace pypto;

namespace {

constexpr int kBaseM = 128, kBaseK = 64, kBaseN = 256;
constexpr int64_t kL0PingPong = 32 * 1024;  // L0A / L0B halves, as the original assigns them

struct Buffers {
  Tile a_l1[2], b_l1[2];
  Tile a_l0[2], b_l0[2];
  AccTile<float, kBaseM, kBaseN> acc{0};
};

// One K step of output tile (i, j): the original's ProcessKIteration.
void k_step(Tensor a, Tensor b, int64_t i, int64_t j, int64_t k, int64_t step_k, const Buffers& t,
            int& mte2_id, int& mte1_id) {
  const int64_t in_block = k % step_k;
  if (in_block == 0) {
    wait_flag(PIPE_MTE1, PIPE_MTE2, mte2_id);
    TLOAD(t.a_l1[mte2_id], a, i * kBaseM, k * kBaseK);
    set_flag(PIPE_MTE2, PIPE_MTE1, EVENT_ID0);
    TLOAD(t.b_l1[mte2_id], b, k * kBaseK, j * kBaseN);
    set_flag(PIPE_MTE2, PIPE_MTE1, EVENT_ID1);
    mte2_id = 1 - mte2_id;
  }
  const int cur = 1 - mte2_id;
  wait_flag(PIPE_M, PIPE_MTE1, mte1_id);
  if (in_block == 0) wait_flag(PIPE_MTE2, PIPE_MTE1, EVENT_ID0);
  TEXTRACT(t.a_l0[mte1_id], t.a_l1[cur], 0, in_block * kBaseK);
  if (in_block == 0) wait_flag(PIPE_MTE2, PIPE_MTE1, EVENT_ID1);
  TEXTRACT(t.b_l0[mte1_id], t.b_l1[cur], in_block * kBaseK, 0);
  if ((k + 1) % step_k == 0) set_flag(PIPE_MTE1, PIPE_MTE2, cur);
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
void store_tile(Tensor c, int64_t i, int64_t j, const Tile& acc) {
  set_flag(PIPE_M, PIPE_FIX, EVENT_ID0);
  wait_flag(PIPE_M, PIPE_FIX, EVENT_ID0);
  TSTORE(c, i * kBaseM, j * kBaseN, acc);
  set_flag(PIPE_FIX, PIPE_M, EVENT_ID0);
  wait_flag(PIPE_FIX, PIPE_M, EVENT_ID0);
}

}  // namespace

extern "C" void kernel_entry(__gm__ int64_t* args) {
  Tensor a = arg_tensor(args, 0), b = arg_tensor(args, 1), c = arg_tensor(args, 2);
  const int64_t step_k = arg_i64(args, 3);
  const int32_t kb = static_cast<int32_t>(kBaseK * step_k);
  const int64_t a_bytes = int64_t{kBaseM} * kb * 2, b_bytes = int64_t{kb} * kBaseN * 2;
  const Tile a_l1(Mem::Mat, DType::FP16, kBaseM, kb, 0),
      b_l1(Mem::Mat, DType::FP16, kb, kBaseN, 2 * a_bytes);
  const LeftTile<half, kBaseM, kBaseK> a_l0(0);
  const RightTile<half, kBaseK, kBaseN> b_l0(0);
  const Buffers t{{a_l1, a_l1.at(a_bytes)},
                  {b_l1, b_l1.at(2 * a_bytes + b_bytes)},
                  {a_l0, a_l0.at(kL0PingPong)},
                  {b_l0, b_l0.at(kL0PingPong)}};
  int mte2_id = 0, mte1_id = 0;
  set_flag(PIPE_MTE1, PIPE_MTE2, EVENT_ID0);
  set_flag(PIPE_MTE1, PIPE_MTE2, EVENT_ID1);
  set_flag(PIPE_M, PIPE_MTE1, EVENT_ID0);
  set_flag(PIPE_M, PIPE_MTE1, EVENT_ID1);
  for (int64_t i = 0; i < a.rows() / kBaseM; ++i) {
    for (int64_t j = 0; j < c.cols() / kBaseN; ++j) {
      for (int64_t k = 0; k < a.cols() / kBaseK; ++k)
        k_step(a, b, i, j, k, step_k, t, mte2_id, mte1_id);
      store_tile(c, i, j, t.acc);
    }
  }
  wait_flag(PIPE_M, PIPE_MTE1, EVENT_ID0);
  wait_flag(PIPE_M, PIPE_MTE1, EVENT_ID1);
  wait_flag(PIPE_MTE1, PIPE_MTE2, EVENT_ID0);
  wait_flag(PIPE_MTE1, PIPE_MTE2, EVENT_ID1);
}
