// pto-isa's hand-synchronised FlashAttention (its fa_performance kernel, the one its Perf-Sim
// FAPerfSim tests run), ported instruction for instruction so the two simulators price the same
// sequence. One cluster (the AIC and its two AIVs) per block of cube_s0 query rows:
//   QK (AIC)  S = Q K^T per [cube_s0, cube_s1] sub-tile, stored fp32 to a GM ring slot;
//   P  (AIVs) each AIV takes half the rows in row slices: running max, exp, row sum, P in fp16
//             stored to a second GM ring;
//   PV (AIC)  P V accumulated over a tile's sub-tiles, stored fp32 to a third GM ring;
//   GU (AIVs) O = O * exp(max_old - max_new) + PV, divided by the row sum after the last tile.
// The QK/P stages run `preload` tiles ahead of PV/GU. The original's ring handshakes (TPUSH /
// TPOP: a cross-core flag after the producer's last store, waited for before the consumer's
// first load) are the cross-core flags below; its slots never wrap in these shapes (tiles <=
// slots: the caller checks), so its free/alloc handshakes never wait and are left out. Its
// unit-flag matmul/store handoff is the flag form the original also carries (M->FIX before a
// store, FIX->M before the accumulator is reused). K is passed transposed ([head, s1]): the
// original reads K through a column-major GM view, the same bytes.
//
// args: q [blocks*cube_s0, head] fp16, kt [head, s1] fp16, v [s1, head] fp16,
//       o [blocks*cube_s0, head] fp32 (out), qk_ring fp32, p_ring fp16, pv_ring fp32 (out,
//       scratch), then cube_s0, cube_s1, tile_s1, preload, one_thread.
//
// one_thread = 1 adds the order Perf-Sim's test harness imposes and the kernel does not: it
// records the AIC's and AIV 0's code from one host thread into one Scalar queue, so each AIC
// section that follows a P tile in the original's loop waits for AIV 0's push of that tile
// (kOrder). Only for comparing schedules (benchmarks/peer_perfsim.py); 0 is the kernel.
#include <cmath>
#include <pypto/kernel.hpp>

using namespace pypto;

namespace {

constexpr int kSlots = 8;              // ring depth (the original's CV_FIFO_SIZE)
constexpr int kAivs = 2;               // AIVs per cluster; each takes half the rows (TILE_UP_DOWN)
constexpr int kQkReady = 0;            // AIC -> AIV: a QK tile is in its ring slot
constexpr int kPReady = 1;             // AIV -> AIC: its half of a P tile is in its ring slot
constexpr int kPvReady = 2;            // AIC -> AIV: a PV tile is in its ring slot
constexpr int kOrder = 3;              // AIV 0 -> AIC: one_thread's order (see above)
constexpr int64_t kL0Half = 0x8000;    // L0A / L0B ping-pong halves (the matmul macro's)
constexpr int64_t kAccHalf = 0x10000;  // the two accumulator addresses

struct Shape {
  int cube_s0, cube_s1, head, tile_s1, preload;
  int factor() const { return tile_s1 / cube_s1; }             // cube sub-tiles per tile
  int vec_rows() const { return cube_s0 / kAivs / factor(); }  // rows of one row slice
  int gu_rows() const { return cube_s0 / kAivs; }              // rows of one AIV
};

// ---- AIC ------------------------------------------------------------------------------------

struct Cube {
  Shape sh;
  Tensor q, kt, v, qk_ring, p_ring, pv_ring;
  int64_t block;
  Tile q_l1, k_l1[2], p_l1[2], v_l1[2];
  int l0_pingpong = 0;  // the matmul macro's static ping-pong, shared by QK and PV
  // The original toggles an accumulator address per accumulator type: QK and PV share one
  // toggle when their tiles have the same shape.
  int qk_toggle = 0, pv_toggle_own = 0;
  int& pv_toggle() { return sh.cube_s1 == sh.head ? qk_toggle : pv_toggle_own; }
  int pv_pushes = 0;
  bool one_thread = false;
};

// one_thread: the AIC section about to start follows a P tile's push in the original's loop.
void after_p_push(const Cube& c) {
  if (c.one_thread) cross_wait_flag(0, PIPE_MTE2, kOrder);
}

int next_acc(int& toggle) {
  const int id = toggle;
  toggle ^= 1;
  return id;
}

// One [m, k] x [k, n] product from L1 (the original's pto_macro_matmul with one K segment:
// every shape here fits its 32 KiB L0 halves).
void matmul(Cube& c, const Tile& acc, const Tile& a_l1, const Tile& b_l1, int m, int k, int n,
            bool init) {
  const int pp = c.l0_pingpong;
  const Tile a_l0(Mem::Left, DType::FP16, m, k, pp * kL0Half);
  const Tile b_l0(Mem::Right, DType::FP16, k, n, pp * kL0Half);
  wait_flag(PIPE_M, PIPE_MTE1, pp);
  TEXTRACT(a_l0, a_l1, 0, 0);
  TEXTRACT(b_l0, b_l1, 0, 0);
  set_flag(PIPE_MTE1, PIPE_M, pp);
  wait_flag(PIPE_MTE1, PIPE_M, pp);
  if (init) {
    TMATMUL(acc, a_l0, b_l0);
  } else {
    TMATMUL_ACC(acc, a_l0, b_l0);
  }
  set_flag(PIPE_M, PIPE_MTE1, pp);
  c.l0_pingpong = 1 - pp;
}

// The original's compute_qk: sub-tile `sub` of S for tile `tile` into its ring slot.
void compute_qk(Cube& c, int tile, int sub, int kbuf, int acc_id) {
  const Shape& sh = c.sh;
  const int s1_index = tile * sh.tile_s1 + sub * sh.cube_s1;
  const Tile acc(Mem::Acc, DType::FP32, sh.cube_s0, sh.cube_s1, acc_id * kAccHalf);
  wait_flag(PIPE_MTE1, PIPE_MTE2, kbuf);
  if (tile == 0 && sub == 0) TLOAD(c.q_l1, c.q, c.block * sh.cube_s0, 0);
  TLOAD(c.k_l1[kbuf], c.kt, 0, s1_index);
  set_flag(PIPE_MTE2, PIPE_MTE1, EVENT_ID0);
  wait_flag(PIPE_MTE2, PIPE_MTE1, EVENT_ID0);
  wait_flag(PIPE_FIX, PIPE_M, acc_id);
  matmul(c, acc, c.q_l1, c.k_l1[kbuf], sh.cube_s0, sh.head, sh.cube_s1, true);
  set_flag(PIPE_MTE1, PIPE_MTE2, kbuf);
  set_flag(PIPE_M, PIPE_FIX, EVENT_ID0);
  wait_flag(PIPE_M, PIPE_FIX, EVENT_ID0);
  const int64_t slot = (c.block * kSlots + tile % kSlots) * sh.factor() + sub;
  TSTORE(c.qk_ring, slot * sh.cube_s0, 0, acc);
  if (sub == sh.factor() - 1) {
    for (int aiv = 0; aiv < kAivs; ++aiv) cross_set_flag(aiv, PIPE_FIX, kQkReady);
  }
  set_flag(PIPE_FIX, PIPE_M, acc_id);
}

// The original's compute_pv: sub-tile `sub` of P V for tile `tile`; the last one stores the
// accumulated tile to the PV ring.
void compute_pv(Cube& c, int tile, int sub, int buf, int acc_id) {
  const Shape& sh = c.sh;
  const int s1_index = tile * sh.tile_s1 + sub * sh.cube_s1;
  const bool last = sub == sh.factor() - 1;
  const Tile acc(Mem::Acc, DType::FP32, sh.cube_s0, sh.head, acc_id * kAccHalf);
  if (sub == 0) {
    for (int aiv = 0; aiv < kAivs; ++aiv) cross_wait_flag(aiv, PIPE_MTE2, kPReady);
  }
  wait_flag(PIPE_MTE1, PIPE_MTE2, 2 + buf);
  TLOAD(c.v_l1[buf], c.v, s1_index, 0);
  const int64_t slot = (c.block * kSlots + tile % kSlots) * sh.factor() + sub;
  TLOAD(c.p_l1[buf], c.p_ring, slot * sh.cube_s0, 0);
  set_flag(PIPE_MTE2, PIPE_MTE1, EVENT_ID0);
  wait_flag(PIPE_MTE2, PIPE_MTE1, EVENT_ID0);
  if (sub == 0) wait_flag(PIPE_FIX, PIPE_M, acc_id);
  matmul(c, acc, c.p_l1[buf], c.v_l1[buf], sh.cube_s0, sh.cube_s1, sh.head, sub == 0);
  set_flag(PIPE_MTE1, PIPE_MTE2, 2 + buf);
  if (last) {
    set_flag(PIPE_M, PIPE_FIX, EVENT_ID0);
    wait_flag(PIPE_M, PIPE_FIX, EVENT_ID0);
    const int64_t pv_slot = c.block * kSlots + c.pv_pushes++ % kSlots;
    TSTORE(c.pv_ring, pv_slot * sh.cube_s0, 0, acc);
    for (int aiv = 0; aiv < kAivs; ++aiv) cross_set_flag(aiv, PIPE_FIX, kPvReady);
    set_flag(PIPE_FIX, PIPE_M, acc_id);
  }
}

void run_cube(Cube& c, int tiles) {
  const Shape& sh = c.sh;
  const int64_t q_bytes = int64_t{sh.cube_s0} * sh.head * 2,
                k_bytes = int64_t{sh.head} * sh.cube_s1 * 2;
  const int64_t p_bytes = int64_t{sh.cube_s0} * sh.cube_s1 * 2,
                v_bytes = int64_t{sh.cube_s1} * sh.head * 2;
  // L1 as the original assigns it: Q, K x2, P x2, V x2 one after another.
  c.q_l1 = Tile(Mem::Mat, DType::FP16, sh.cube_s0, sh.head, 0);
  const Tile k0(Mem::Mat, DType::FP16, sh.head, sh.cube_s1, q_bytes);
  const Tile p0(Mem::Mat, DType::FP16, sh.cube_s0, sh.cube_s1, q_bytes + 2 * k_bytes);
  const Tile v0(Mem::Mat, DType::FP16, sh.cube_s1, sh.head, q_bytes + 2 * k_bytes + 2 * p_bytes);
  for (int i = 0; i < 2; ++i) {
    c.k_l1[i] = k0.at(k0.addr + i * k_bytes);
    c.p_l1[i] = p0.at(p0.addr + i * p_bytes);
    c.v_l1[i] = v0.at(v0.addr + i * v_bytes);
  }
  set_flag(PIPE_M, PIPE_MTE1, EVENT_ID0);
  set_flag(PIPE_M, PIPE_MTE1, EVENT_ID1);
  c.qk_toggle = 0;
  next_acc(c.qk_toggle);  // the QK accumulator starts at the first address ...
  c.pv_toggle() = 1;
  next_acc(c.pv_toggle());  // ... the PV accumulator at the second
  for (int id = 0; id < 4; ++id) set_flag(PIPE_MTE1, PIPE_MTE2, id);
  set_flag(PIPE_FIX, PIPE_M, EVENT_ID0);
  set_flag(PIPE_FIX, PIPE_M, EVENT_ID1);
  int k_pingpong = 0, pv_pingpong = 0;
  for (int t = 0; t < sh.preload && t < tiles; ++t) {
    if (t > 0) after_p_push(c);  // P of tile t - 1
    for (int sub = 0; sub < sh.factor(); ++sub) {
      const int acc_id = next_acc(c.qk_toggle);
      compute_qk(c, t, sub, k_pingpong++ % 2, acc_id);
    }
  }
  if (tiles > 0) after_p_push(c);  // P of the last preloaded tile
  for (int t = 0; t < tiles; ++t) {
    const int next_qk = t + sh.preload < tiles ? t + sh.preload : -1;
    const int qk_acc = next_qk != -1 ? next_acc(c.qk_toggle) : 0;
    const int pv_acc = next_acc(c.pv_toggle());
    for (int sub = 0; sub < sh.factor(); ++sub) {
      if (next_qk != -1) compute_qk(c, next_qk, sub, k_pingpong++ % 2, qk_acc);
      if (next_qk != -1 && sub == sh.factor() - 1) after_p_push(c);  // P of tile next_qk
      compute_pv(c, t, sub, pv_pingpong++ % 2, pv_acc);
    }
  }
  wait_flag(PIPE_M, PIPE_MTE1, EVENT_ID0);
  wait_flag(PIPE_M, PIPE_MTE1, EVENT_ID1);
  for (int id = 0; id < 4; ++id) wait_flag(PIPE_MTE1, PIPE_MTE2, id);
  wait_flag(PIPE_FIX, PIPE_M, EVENT_ID0);
  wait_flag(PIPE_FIX, PIPE_M, EVENT_ID1);
}

// ---- AIV ------------------------------------------------------------------------------------

struct Vector {
  Shape sh;
  Tensor o, qk_ring, p_ring, pv_ring;
  int64_t block;
  int sub;  // this AIV's half of the rows
  float scale;
  Tile running_o, qk_vec[2], pv_vec[2], x_exp[2];
  Tile m1_local_max, m2_global_max, reduce_tmp, l1_local_sum, l2_global_sum, exp_max[kSlots];
  int pv_pops = 0;
  bool one_thread = false;
};

// A [rows, 1] column seen as a [1, rows] row (the original's TRESHAPE to a 1-D view).
Tile row_view(const Tile& column) {
  return Tile(Mem::Vec, DType::FP32, 1, column.rows, column.addr);
}

// Rows [row0, row0 + rows) of a [n, 1] column.
Tile slice(const Tile& column, int row0, int rows) {
  return Tile(Mem::Vec, DType::FP32, rows, 1, column.addr + int64_t{row0} * 4);
}

// The original's pto_macro_fa_softmax on one row slice (no causal mask; the Perf-Sim build
// has no pipe_barrier between vector instructions, so neither has this).
void softmax(const Vector& w, bool init, const Tile& x, const Tile& x_exp, const Tile& exp_max_col,
             int row0) {
  const int rows = w.sh.vec_rows();
  const Tile m1 = slice(w.m1_local_max, row0, rows), m2 = slice(w.m2_global_max, row0, rows);
  const Tile l1 = slice(w.l1_local_sum, row0, rows), l2 = slice(w.l2_global_sum, row0, rows);
  const Tile x_1d(Mem::Vec, DType::FP32, 1, rows * w.sh.tile_s1, x.addr);
  const Tile x_exp_1d(Mem::Vec, DType::FP16, 1, rows * w.sh.tile_s1, x_exp.addr);
  if (init) {
    TROWMAX(m2, x, w.reduce_tmp);
    TROWEXPANDSUB(x, x, m2);
    TMULS(x, x, w.scale);
    TEXP(x, x);
    TROWSUM(l2, x, w.reduce_tmp);
    TCVT(x_exp_1d, x_1d, RoundMode::AWAY);
    return;
  }
  const Tile m1_row = row_view(m1), m2_row = row_view(m2), l1_row = row_view(l1);
  const Tile l2_row = row_view(l2), e_row = row_view(slice(exp_max_col, row0, rows));
  TROWMAX(m1, x, w.reduce_tmp);
  TMAX(m1_row, m1_row, m2_row);  // the new running max
  TSUB(e_row, m2_row, m1_row);   // old max - new max
  TMULS(m2_row, m1_row, 1.0);    // keep the new max
  TROWEXPANDSUB(x, x, m1);
  TMULS(e_row, e_row, w.scale);
  TMULS(x, x, w.scale);
  TEXP(e_row, e_row);
  TEXP(x, x);
  TCVT(x_exp_1d, x_1d, RoundMode::AWAY);
  TMUL(l2_row, e_row, l2_row);
  TROWSUM(l1, x, w.reduce_tmp);
  TADD(l2_row, l2_row, l1_row);
}

// The original's compute_p: row slice `slice_i` of this AIV's half of S tile `tile`.
void compute_p(Vector& w, int tile, int slice_i, int buf) {
  const Shape& sh = w.sh;
  const int row_offset = w.sub * sh.gu_rows() + slice_i * sh.vec_rows();
  const Tile& x = w.qk_vec[buf];
  const Tile& x_exp = w.x_exp[buf];
  wait_flag(PIPE_V, PIPE_MTE2, buf);
  if (slice_i == 0) cross_wait_flag(0, PIPE_MTE2, kQkReady);
  const int64_t slot = (w.block * kSlots + tile % kSlots) * sh.factor();
  for (int col = 0; col < sh.factor(); ++col)
    TLOAD(TWINDOW(x, 0, col * sh.cube_s1, sh.vec_rows(), sh.cube_s1), w.qk_ring,
          (slot + col) * sh.cube_s0 + row_offset, 0);
  set_flag(PIPE_MTE2, PIPE_V, EVENT_ID0);
  wait_flag(PIPE_MTE2, PIPE_V, EVENT_ID0);
  wait_flag(PIPE_MTE3, PIPE_V, buf);
  softmax(w, tile == 0, x, x_exp, w.exp_max[tile % kSlots], slice_i * sh.vec_rows());
  set_flag(PIPE_V, PIPE_MTE2, buf);
  set_flag(PIPE_V, PIPE_MTE3, EVENT_ID0);
  wait_flag(PIPE_V, PIPE_MTE3, EVENT_ID0);
  for (int col = 0; col < sh.factor(); ++col)
    TSTORE(w.p_ring, (slot + col) * sh.cube_s0 + row_offset, 0,
           TWINDOW(x_exp, 0, col * sh.cube_s1, sh.vec_rows(), sh.cube_s1));
  if (slice_i == sh.factor() - 1) {
    cross_set_flag(0, PIPE_MTE3, kPReady);
    if (w.one_thread && w.sub == 0) cross_set_flag(0, PIPE_MTE3, kOrder);
  }
  set_flag(PIPE_MTE3, PIPE_V, buf);
}

// The original's compute_gu: fold PV tile `tile` into the running output; store it after the
// last tile.
void compute_gu(Vector& w, int tile, int tiles, int buf) {
  const Shape& sh = w.sh;
  wait_flag(PIPE_V, PIPE_MTE2, buf);
  cross_wait_flag(0, PIPE_MTE2, kPvReady);
  const int64_t row = (w.block * kSlots + w.pv_pops++ % kSlots) * sh.cube_s0 + w.sub * sh.gu_rows();
  const Tile& exp_max = w.exp_max[tile % kSlots];
  if (tile == 0) {
    TLOAD(w.running_o, w.pv_ring, row, 0);
    set_flag(PIPE_MTE2, PIPE_V, EVENT_ID0);
    wait_flag(PIPE_MTE2, PIPE_V, EVENT_ID0);
  } else {
    TLOAD(w.pv_vec[buf], w.pv_ring, row, 0);
    set_flag(PIPE_MTE2, PIPE_V, EVENT_ID0);
    wait_flag(PIPE_MTE2, PIPE_V, EVENT_ID0);
    TROWEXPANDMUL(w.running_o, w.running_o, exp_max);
    TADD(w.running_o, w.running_o, w.pv_vec[buf]);
    if (tile == tiles - 1) TROWEXPANDDIV(w.running_o, w.running_o, w.l2_global_sum);
  }
  set_flag(PIPE_V, PIPE_MTE2, buf);
  if (tile == tiles - 1) {
    set_flag(PIPE_V, PIPE_MTE3, EVENT_ID0);
    wait_flag(PIPE_V, PIPE_MTE3, EVENT_ID0);
    TSTORE(w.o, w.block * sh.cube_s0 + w.sub * sh.gu_rows(), 0, w.running_o);
  }
}

// UB as the original assigns it: the running output, the QK / PV ping-pong union, the
// reductions, the (overlapping) reduce scratch and causal-mask tile, the exp-max ring, x_exp.
void place_vector_tiles(Vector& w) {
  const Shape& sh = w.sh;
  const int64_t f_bytes = int64_t{sh.vec_rows()} * sh.tile_s1 * 4;
  const int64_t out_bytes = int64_t{sh.gu_rows()} * sh.head * 4,
                red_bytes = int64_t{sh.gu_rows()} * 4;
  const int64_t stride = f_bytes > out_bytes ? f_bytes : out_bytes;
  int64_t at = 0;
  w.running_o = Tile(Mem::Vec, DType::FP32, sh.gu_rows(), sh.head, at);
  at += out_bytes;
  for (int i = 0; i < 2; ++i) {
    w.qk_vec[i] = Tile(Mem::Vec, DType::FP32, sh.vec_rows(), sh.tile_s1, at + i * stride);
    w.pv_vec[i] = Tile(Mem::Vec, DType::FP32, sh.gu_rows(), sh.head, at + i * stride);
  }
  at += 2 * stride;
  const Tile column(Mem::Vec, DType::FP32, sh.gu_rows(), 1, 0);
  w.m1_local_max = column.at(at);
  w.m2_global_max = column.at(at + red_bytes);
  at += 2 * red_bytes;
  w.reduce_tmp = Tile(Mem::Vec, DType::FP32, sh.vec_rows(), sh.tile_s1, at);
  at += f_bytes / 8 + f_bytes;  // the original reserves an eighth, then the causal-mask tile
  w.l1_local_sum = column.at(at);
  w.l2_global_sum = column.at(at + red_bytes);
  at += 2 * red_bytes;
  for (int i = 0; i < kSlots; ++i) w.exp_max[i] = column.at(at + i * red_bytes);
  at += kSlots * red_bytes;
  for (int i = 0; i < 2; ++i)
    w.x_exp[i] = Tile(Mem::Vec, DType::FP16, sh.vec_rows(), sh.tile_s1, at + i * f_bytes / 2);
}

void run_vector(Vector& w, int tiles) {
  const Shape& sh = w.sh;
  place_vector_tiles(w);
  set_flag(PIPE_V, PIPE_MTE2, EVENT_ID0);
  set_flag(PIPE_V, PIPE_MTE2, EVENT_ID1);
  set_flag(PIPE_MTE3, PIPE_V, EVENT_ID0);
  set_flag(PIPE_MTE3, PIPE_V, EVENT_ID1);
  int pingpong = 0;  // shared by the softmax, PV and GU tiles, as in the original
  for (int t = 0; t < sh.preload && t < tiles; ++t) {
    for (int s = 0; s < sh.factor(); ++s) compute_p(w, t, s, pingpong++ % 2);
  }
  for (int t = 0; t < tiles; ++t) {
    const int next_qk = t + sh.preload < tiles ? t + sh.preload : -1;
    for (int s = 0; s < sh.factor(); ++s) {
      if (next_qk != -1) compute_p(w, next_qk, s, pingpong++ % 2);
    }
    compute_gu(w, t, tiles, pingpong++ % 2);
  }
  wait_flag(PIPE_V, PIPE_MTE2, EVENT_ID0);
  wait_flag(PIPE_V, PIPE_MTE2, EVENT_ID1);
  wait_flag(PIPE_MTE3, PIPE_V, EVENT_ID0);
  wait_flag(PIPE_MTE3, PIPE_V, EVENT_ID1);
}

}  // namespace

extern "C" void kernel_entry(__gm__ int64_t* args) {
  const Tensor q = arg_tensor(args, 0), kt = arg_tensor(args, 1), v = arg_tensor(args, 2);
  const Tensor o = arg_tensor(args, 3), qk_ring = arg_tensor(args, 4);
  const Tensor p_ring = arg_tensor(args, 5), pv_ring = arg_tensor(args, 6);
  const Shape sh{static_cast<int>(arg_i64(args, 7)), static_cast<int>(arg_i64(args, 8)),
                 static_cast<int>(q.cols()), static_cast<int>(arg_i64(args, 9)),
                 static_cast<int>(arg_i64(args, 10))};
  const int tiles = static_cast<int>(kt.cols() / sh.tile_s1);
  const bool one_thread = arg_i64(args, 11) != 0;
  if (is_aic()) {
    Cube c{sh, q, kt, v, qk_ring, p_ring, pv_ring, get_block_idx(), {}, {}, {}, {}};
    c.one_thread = one_thread;
    run_cube(c, tiles);
  } else {
    Vector w{sh,
             o,
             qk_ring,
             p_ring,
             pv_ring,
             get_block_idx(),
             get_subblockid(),
             static_cast<float>(1.0 / std::sqrt(static_cast<double>(sh.head))),
             {},
             {},
             {},
             {}};
    w.one_thread = one_thread;
    run_vector(w, tiles);
  }
}
