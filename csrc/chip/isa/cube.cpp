// TMATMUL on the CUBE pipe (fp16/bf16/fp32 into fp32, int8/uint8 into int32), the L0 layouts,
// and FIXPIPE stores out of L0C.
#include "chip/isa/cube.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <string>
#include <vector>

#include "chip/isa/dtype.hpp"
#include "chip/isa/fractal.hpp"
#include "chip/isa/matmul_f32.hpp"
#include "chip/isa/vec_math.hpp"

using namespace pypto;
using namespace pypto::isa;

namespace pypto::isa {

void store_from_acc(const pypto_tensor* dst, int64_t row0, int64_t col0, const pypto_tile* src,
                    bool atomic_add) {
  const char* op = atomic_add ? "TSTORE.atomic_add" : "TSTORE";
  const Deferred q;
  TileView s = check_tile(src, op, "src", mem_bit(PYPTO_ACC));
  if (dst == nullptr) fail(ErrorKind::kOutOfBounds, op, "null GM tensor");
  // The window is checked in the tensor's dtype: FIXPIPE converts on the way out.
  TileView as_out = s;
  as_out.dtype = dst->dtype;
  as_out.esize = static_cast<int64_t>(dtype_size(dst->dtype));
  if (!fixpipe_out_supported(s.dtype, dst->dtype)) {
    fail(ErrorKind::kDType, op,
         std::string("FIXPIPE writes an ") + dtype_name(s.dtype) + " accumulator as " +
             (s.dtype == PYPTO_INT32 ? "int32" : "fp32/fp16/bf16") + ", not " +
             dtype_name(dst->dtype));
  }
  GmWindow w = check_window(dst, row0, col0, as_out, op);
  check_writable(dst, op);
  if (atomic_add) q.core().queued_atomics = true;
  q.run(w.rows * w.row_bytes,
        [core = &q.core(), base = dst->data, out_dtype = dst->dtype, s, w, atomic_add] {
          const auto cols = static_cast<size_t>(s.valid_cols);
          if (!atomic_add) {  // converted straight into the tensor's rows
            for (int64_t r = 0; r < w.rows; ++r) {
              vm::convert(out_dtype, w.data + r * w.stride_bytes, s.dtype, s.row(r), cols,
                          PYPTO_ROUND_RINT);
            }
            return;
          }
          std::vector<uint8_t> row(static_cast<size_t>(w.row_bytes));
          for (int64_t r = 0; r < w.rows; ++r) {
            vm::convert(out_dtype, row.data(), s.dtype, s.row(r), cols, PYPTO_ROUND_RINT);
            core->atomic_add(base, w.data + r * w.stride_bytes, out_dtype, row.data(), cols);
          }
        });
  AccessList acc;
  acc.add(s.access(false));
  acc.add(w.access(true));
  OpDesc store = gm_op(OpClass::kFixpipeGm, Link::kL0cToGm, w.rows, w.row_bytes);
  store.acc_row_bytes = s.valid_cols * s.esize;
  store.atomic = atomic_add;
  issue_op(PYPTO_FIXPIPE, store, op, acc, static_cast<uint64_t>(w.rows * w.row_bytes), s.addr);
}

AccessList mad_accesses(const TileView& a, const TileView& b, const TileView& c, bool accumulate) {
  AccessList accs;
  accs.add(a.access(false));
  accs.add(b.access(false));
  if (accumulate) accs.add(c.access(false));
  accs.add(c.access(true));
  return accs;
}

TileView check_bias(const pypto_tile* bias, int64_t n, const char* op) {
  TileView t = check_tile(bias, op, "bias", mem_bit(PYPTO_BIAS));
  if (t.dtype != PYPTO_FP32)
    fail(ErrorKind::kDType, op, std::string("bias must be fp32, got ") + dtype_name(t.dtype));
  if (t.valid_rows != 1 || t.valid_cols != n) {
    fail(ErrorKind::kShape, op,
         "bias has shape " + shape_text(t.valid_rows, t.valid_cols) + ", expected " +
             shape_text(1, n));
  }
  return t;
}

}  // namespace pypto::isa

namespace {

// A logical [rows, cols] operand, widened to fp32 row-major (transposed when asked): the
// whole storage is converted in one call (fp16/bf16 -> fp32 is exact), then gathered.
// Reads the storage in order; the element size as a constant turns the index math into shifts.
template <int64_t E>
void gather(float* out, const float* stored, const TileView& t, bool trans, int64_t rows,
            int64_t cols) {
  for_each_stored<E>(t.mem, t.rows, t.cols, [&](int64_t i, int64_t sr, int64_t sc) {
    const int64_t r = trans ? sc : sr, c = trans ? sr : sc;
    if (r < rows && c < cols) out[r * cols + c] = stored[i];
  });
}

// The common case — a whole, untransposed L0A/L0B tile — copied fractal by fractal with the
// sizes known at compile time (no per-element bounds checks); the same element placement as
// `gather`. False when the tile does not qualify.
template <int64_t E>
bool gather_whole(float* out, const float* stored, const TileView& t, bool trans, int64_t rows,
                  int64_t cols) {
  constexpr int64_t c0 = 32 / E;
  if (trans || rows != t.rows || cols != t.cols || rows % 16 != 0 || cols % 16 != 0 ||
      rows % c0 != 0 || cols % c0 != 0) {
    return false;
  }
  if (t.mem == PYPTO_LEFT) {  // [rows/16][cols/c0] fractals of [16 rows][c0 cols]
    for (int64_t r0 = 0; r0 < rows; r0 += 16)
      for (int64_t cb = 0; cb < cols; cb += c0)
        for (int64_t r = r0; r < r0 + 16; ++r, stored += c0)
          std::memcpy(out + r * cols + cb, stored, c0 * 4);
    return true;
  }
  if (t.mem == PYPTO_RIGHT) {  // [rows/c0][cols/16] fractals of [16 cols][c0 rows]
    for (int64_t rb = 0; rb < rows; rb += c0)
      for (int64_t cb = 0; cb < cols; cb += 16, stored += 16 * c0)
        for (int64_t r = 0; r < c0; ++r)
          for (int64_t c = 0; c < 16; ++c) out[(rb + r) * cols + cb + c] = stored[c * c0 + r];
    return true;
  }
  return false;
}

// A block of the 16 x 16 fractals of a whole fp16/bf16 L0A/L0B tile: fractal rows
// [band0, band1), fractal columns [fc0, fc1).
struct Fractals {
  int64_t band0, band1, fc0, fc1;
};

// The fractals `f` of a whole fp16/bf16 L0A/L0B tile widened into an operand window: `out` holds
// operand columns [col0, col0 + pitch) of every operand row, row pitch `pitch`. Each fractal is
// 16 lines of 16 elements in storage — tile rows in zZ (L0A), tile columns in nZ (L0B); both
// layouts store the fractals row by row — and a line lands as an operand row when it is a tile
// row of an untransposed operand or a tile column of a transposed one, else as an operand
// column (transposed and widened in one pass: an untransposed L0B operand, FlashAttention's V
// and the GEMM's B). False when a product of two of its values might not be exact in fp32
// (fp16: an inf/NaN; bf16: a value outside [2^-63, 2^63), fractal.hpp): the fused kernels need
// exact products, so the mad then converts both operands the general way.
bool widen_h16_fractals(float* out, int64_t pitch, int64_t col0, const TileView& t, bool trans,
                        Fractals f) {
  const bool lines_are_rows = (t.mem == PYPTO_LEFT) != trans, bf16 = t.dtype == PYPTO_BF16;
  using Widen = bool (*)(float*, int64_t, const uint16_t*, int64_t);
  const Widen widen = lines_are_rows
                          ? (bf16 ? widen_bf16_block : widen_f16_block)
                          : (bf16 ? widen_bf16_block_transposed : widen_f16_block_transposed);
  const auto* base = reinterpret_cast<const uint16_t*>(t.data);
  for (int64_t band = f.band0; band < f.band1; ++band) {
    const uint16_t* src = base + (band * (t.cols / 16) + f.fc0) * 256;
    for (int64_t fc = f.fc0; fc < f.fc1; ++fc, src += 256) {
      const int64_t r = trans ? fc * 16 : band * 16, c = (trans ? band * 16 : fc * 16) - col0;
      float* o = out + r * pitch + c;  // the fractal's origin
      if (!widen(o, pitch, src, 16)) return false;
    }
  }
  return true;
}

// Whether `t` is a whole fp16 or bf16 L0A/L0B tile holding a [rows, cols] operand (transposed
// when asked): the form widen_h16_fractals reads.
bool whole_h16(const TileView& t, bool trans, int64_t rows, int64_t cols) {
  if ((t.dtype != PYPTO_FP16 && t.dtype != PYPTO_BF16) ||
      (t.mem != PYPTO_LEFT && t.mem != PYPTO_RIGHT))
    return false;
  const int64_t tile_rows = trans ? cols : rows, tile_cols = trans ? rows : cols;
  return tile_rows == t.rows && tile_cols == t.cols && rows % 16 == 0 && cols % 16 == 0;
}

// Below this many elements a widening is not worth sharing between two host threads.
constexpr int64_t kSharedWidenElems = 8 << 10;

// A whole fp16/bf16 L0A/L0B tile widened, its fractal rows in two halves the run's thread may
// share (DataQueue::split): each half writes its own outputs, so the values are the same. False
// when the tile does not qualify or its products might not be exact (widen_h16_fractals; then
// `widen` converts it the general way).
bool widen_h16_whole(float* out, const TileView& t, bool trans, int64_t rows, int64_t cols) {
  if (!whole_h16(t, trans, rows, cols)) return false;
  const int64_t bands = t.rows / 16, fcs = t.cols / 16;
  if (t.rows * t.cols < kSharedWidenElems || bands < 2) {
    return widen_h16_fractals(out, cols, 0, t, trans, {0, bands, 0, fcs});
  }
  std::atomic<bool> exact{true};
  DataQueue::split(bands, (bands + 1) / 2, [&](int64_t f0, int64_t f1) {
    if (!widen_h16_fractals(out, cols, 0, t, trans, {f0, f1, 0, fcs})) exact.store(false);
  });
  return exact.load();
}

// An operand widened to fp32 row-major, in a per-thread buffer reused by every mad (`slot`
// 0 for left, 1 for right, 2 for the general way's staging) rather than allocated per mad,
// so it stays in the host's caches. `exact`: every value came from a finite fp16 or an in-range
// bf16 (widen_h16_fractals), so every product of two operands is exact in fp32 (at most 11- or
// 8-bit significands, exponents in range): the kernels may then fuse multiply and add.
struct Operand {
  const float* data;
  bool exact;
};

float* scratch(int slot, size_t n) {
  thread_local std::vector<float> buffers[3];
  std::vector<float>& b = buffers[slot];
  if (b.size() < n) b.resize(n);
  return b.data();
}

Operand widen(const TileView& t, bool trans, int64_t rows, int64_t cols, int slot) {
  float* out = scratch(slot, static_cast<size_t>(rows * cols));
  if (widen_h16_whole(out, t, trans, rows, cols)) return {out, true};
  // The general way: the whole storage converted in one call (fp16/bf16 -> fp32 is exact),
  // then gathered; every (r, c) of the operand lies inside the storage, so each is written.
  const auto n = static_cast<size_t>(t.rows * t.cols);
  float* stored = scratch(2, n);
  vm::convert(PYPTO_FP32, stored, t.dtype, t.data, n, PYPTO_ROUND_RINT);
  const bool whole = t.esize == 2 ? gather_whole<2>(out, stored, t, trans, rows, cols)
                                  : gather_whole<4>(out, stored, t, trans, rows, cols);
  if (whole) return {out, false};
  if (t.esize == 2) {
    gather<2>(out, stored, t, trans, rows, cols);
  } else {
    gather<4>(out, stored, t, trans, rows, cols);
  }
  return {out, false};
}

}  // namespace

std::pair<const float*, const float*> pypto::isa::gemv_operands(const TileView& a,
                                                                const TileView& b, int64_t k,
                                                                int64_t n) {
  float* row = scratch(0, static_cast<size_t>(k));
  vm::convert(PYPTO_FP32, row, a.dtype, a.data, static_cast<size_t>(k), PYPTO_ROUND_RINT);
  return {row, widen(b, false, k, n, 1).data};
}

namespace {

// C (+)= A x B, its output rows in 4 pieces the run's thread may share (DataQueue::split): a
// row's sums do not depend on the rows computed with it, so the bits are the same.
void matmul_rows(const Operand& A, const Operand& B, const TileView& c, int64_t m, int64_t k,
                 int64_t n, bool accumulate) {
  const int64_t grain = (m + 3) / 4;
  auto* C = reinterpret_cast<float*>(c.data);
  DataQueue::split(m, grain, [&](int64_t r0, int64_t r1) {
    vm::matmul_f32(A.data + r0 * k, B.data, C + r0 * c.cols, c.cols, r1 - r0, k, n, accumulate,
                   A.exact && B.exact);
  });
}

// A matmul whose operands are both whole fp16 (or both bf16) L0A/L0B tiles; `id` tells one matmul
// from the next, so that a thread widens the left operand once per matmul.
struct H16Matmul {
  TileView a, b, c;
  int64_t m, k, n;
  bool a_trans, b_trans, accumulate;
  uint64_t id;
};

// Output columns [j0, j1) of `g`, on whichever host thread claimed them: it widens the left
// operand (once per matmul) and these columns of the right one into its own buffers, so a
// widened operand never moves between host cores and the right one's columns stay in cache
// for the kernel.
void h16_columns(const H16Matmul& g, int64_t j0, int64_t j1) {
  struct Left {
    uint64_t id = 0;
    bool exact = false;
    std::vector<float> data;
  };
  thread_local Left left;
  thread_local std::vector<float> right;
  const int64_t m = g.m, k = g.k, w = j1 - j0;
  if (left.id != g.id) {
    if (left.data.size() < static_cast<size_t>(m * k)) left.data.resize(static_cast<size_t>(m * k));
    left.exact = widen_h16_fractals(left.data.data(), k, 0, g.a, g.a_trans,
                                    {0, g.a.rows / 16, 0, g.a.cols / 16});
    left.id = g.id;
  }
  if (right.size() < static_cast<size_t>(k * w)) right.resize(static_cast<size_t>(k * w));
  const Fractals cols = g.b_trans ? Fractals{j0 / 16, j1 / 16, 0, g.b.cols / 16}
                                  : Fractals{0, g.b.rows / 16, j0 / 16, j1 / 16};
  float* C = reinterpret_cast<float*>(g.c.data) + j0;
  if (left.exact && widen_h16_fractals(right.data(), w, j0, g.b, g.b_trans, cols)) {
    vm::matmul_f32(left.data.data(), right.data(), C, g.c.cols, m, k, w, g.accumulate, true);
    return;
  }
  // A product that might not be exact (an fp16 inf/NaN, a bf16 out of range): both operands the
  // general way (which keeps NaN payloads) and the unfused kernel, these columns copied out.
  const Operand A = widen(g.a, g.a_trans, m, k, 0), B = widen(g.b, g.b_trans, k, g.n, 1);
  for (int64_t r = 0; r < k; ++r) {
    std::memcpy(right.data() + r * w, B.data + r * g.n + j0, static_cast<size_t>(w) * 4);
  }
  vm::matmul_f32(A.data, right.data(), C, g.c.cols, m, k, w, g.accumulate, A.exact && B.exact);
}

// C (+)= A x B when both operands are whole fp16 or bf16 tiles, its output columns in pieces of at
// least 32 (about 4 pieces) the run's thread may share (DataQueue::split): a column's sums do
// not depend on the columns computed with it, so the bits are the same. False when an operand
// does not qualify.
bool matmul_h16(const TileView& a, const TileView& b, const TileView& c, int64_t m, int64_t k,
                int64_t n, bool a_trans, bool b_trans, bool accumulate) {
  if (!whole_h16(a, a_trans, m, k) || !whole_h16(b, b_trans, k, n)) return false;
  static std::atomic<uint64_t> matmuls{0};
  const H16Matmul g{
      a, b,       c,       m,          k,
      n, a_trans, b_trans, accumulate, matmuls.fetch_add(1, std::memory_order_relaxed) + 1};
  const int64_t fcs = n / 16;
  DataQueue::split(fcs, std::max<int64_t>(2, (fcs + 3) / 4),
                   [&g](int64_t f0, int64_t f1) { h16_columns(g, f0 * 16, f1 * 16); });
  return true;
}

// An 8-bit integer operand widened to int32 row-major (transposed when asked), in the storage
// order of its space's fractals (c0 = 32 elements of one byte).
const int32_t* widen_int8(const TileView& t, bool trans, int64_t rows, int64_t cols, int slot) {
  thread_local std::vector<int32_t> buffers[2];
  std::vector<int32_t>& out = buffers[slot];
  if (out.size() < static_cast<size_t>(rows * cols)) out.resize(static_cast<size_t>(rows * cols));
  const bool is_signed = t.dtype == PYPTO_INT8;
  for_each_stored<1>(t.mem, t.rows, t.cols, [&](int64_t i, int64_t sr, int64_t sc) {
    const int64_t r = trans ? sc : sr, c = trans ? sr : sc;
    if (r < rows && c < cols) {
      out[static_cast<size_t>(r * cols + c)] =
          is_signed ? static_cast<int8_t>(t.data[i]) : static_cast<int32_t>(t.data[i]);
    }
  });
  return out.data();
}

// C (+)= A x B of 8-bit integers into an int32 accumulator: the exact sum, wrapped to 32 bits
// as the hardware's int32 adders do. Summed by the fp32 kernel, exactly: every value and
// every partial sum is an integer of magnitude at most 2^24 (int8 products at most 2^14, 1,024
// terms a pass; uint8 ones below 2^16, 256 a pass), which fp32 holds exactly whatever the
// order of the sums, so each pass's result converts to the same integer. A scalar loop here
// ran at ~2 GOP/s, the fp32 kernel's rate is ~150.
void matmul_int8(const TileView& a, const TileView& b, const TileView& c, int64_t m, int64_t k,
                 int64_t n, bool a_trans, bool b_trans, bool accumulate) {
  const int32_t* A = widen_int8(a, a_trans, m, k, 0);
  const int32_t* B = widen_int8(b, b_trans, k, n, 1);
  const int64_t pass = a.dtype == PYPTO_INT8 ? 1024 : 256;
  float* Bf = scratch(1, static_cast<size_t>(k * n));
  for (int64_t i = 0; i < k * n; ++i) Bf[i] = static_cast<float>(B[i]);
  float* Af = scratch(0, static_cast<size_t>(m * std::min(k, pass)));
  float* sums = scratch(2, static_cast<size_t>(m * n));
  auto* C = reinterpret_cast<int32_t*>(c.data);
  for (int64_t x0 = 0; x0 < k; x0 += pass) {
    const int64_t w = std::min(pass, k - x0);
    for (int64_t r = 0; r < m; ++r)
      for (int64_t x = 0; x < w; ++x) Af[r * w + x] = static_cast<float>(A[r * k + x0 + x]);
    vm::matmul_f32(Af, Bf + x0 * n, sums, n, m, w, n, false, true);
    const bool add = accumulate || x0 > 0;  // wrapped: unsigned adds
    for (int64_t r = 0; r < m; ++r) {
      int32_t* row = C + r * c.cols;
      for (int64_t j = 0; j < n; ++j) {
        const auto part = static_cast<uint32_t>(static_cast<int32_t>(sums[r * n + j]));
        row[j] = static_cast<int32_t>((add ? static_cast<uint32_t>(row[j]) : 0u) + part);
      }
    }
  }
}

// fp16 / bf16 / fp32 inputs accumulate in fp32; int8 / uint8 inputs in int32.
void check_cube_operands(const TileView& a, const TileView& b, const TileView& c, int64_t m,
                         int64_t k, int64_t kb, int64_t n, const char* op) {
  if (a.dtype != b.dtype) fail(ErrorKind::kDType, op, "left and right dtypes differ");
  if (!cube_input_supported(a.dtype)) {
    fail(
        ErrorKind::kDType, op,
        std::string("cube inputs are fp16, bf16, fp32, int8 or uint8, not ") + dtype_name(a.dtype));
  }
  if (c.dtype != cube_acc_dtype(a.dtype)) {
    fail(ErrorKind::kDType, op,
         std::string(dtype_name(a.dtype)) + " inputs accumulate in " +
             dtype_name(cube_acc_dtype(a.dtype)) + ", not " + dtype_name(c.dtype));
  }
  if (k != kb) {
    fail(ErrorKind::kShape, op,
         "inner dims differ: left gives K = " + std::to_string(k) +
             ", right K = " + std::to_string(kb));
  }
  if (c.valid_rows != m || c.valid_cols != n) {
    fail(ErrorKind::kShape, op,
         "accumulator is " + shape_text(c.valid_rows, c.valid_cols) + " but left x right is " +
             shape_text(m, n));
  }
}

}  // namespace

extern "C" void pypto_tmatmul(const pypto_tile* acc, const pypto_tile* left,
                              const pypto_tile* right, int32_t a_trans, int32_t b_trans,
                              int32_t accumulate) {
  const char* op = accumulate ? "TMATMUL_ACC" : "TMATMUL";
  const Deferred q;
  TileView a = check_tile(left, op, "left", mem_bit(PYPTO_LEFT));
  TileView b = check_tile(right, op, "right", mem_bit(PYPTO_RIGHT));
  TileView c = check_tile(acc, op, "acc", mem_bit(PYPTO_ACC));
  const int64_t m = a_trans ? a.valid_cols : a.valid_rows,
                k = a_trans ? a.valid_rows : a.valid_cols;
  const int64_t kb = b_trans ? b.valid_cols : b.valid_rows,
                n = b_trans ? b.valid_rows : b.valid_cols;
  check_cube_operands(a, b, c, m, k, kb, n, op);
  q.run(m * k * n, [a, b, c, m, k, n, a_trans, b_trans, accumulate] {
    if (is_int8(a.dtype)) {
      matmul_int8(a, b, c, m, k, n, a_trans != 0, b_trans != 0, accumulate != 0);
      return;
    }
    if (matmul_h16(a, b, c, m, k, n, a_trans != 0, b_trans != 0, accumulate != 0)) return;
    const Operand A = widen(a, a_trans != 0, m, k, 0), B = widen(b, b_trans != 0, k, n, 1);
    matmul_rows(A, B, c, m, k, n, accumulate != 0);
  });
  issue_op(PYPTO_CUBE, mad_op(m, k, n, a.esize), op, mad_accesses(a, b, c, accumulate != 0),
           static_cast<uint64_t>(m * n * k), c.addr);
}

// ---- TMATMUL_BIAS: acc = left x right + bias[1, N], the bias table seeding the accumulator ----
extern "C" void pypto_tmatmul_bias(const pypto_tile* acc, const pypto_tile* left,
                                   const pypto_tile* right, const pypto_tile* bias) {
  const char* op = "TMATMUL_BIAS";
  const Deferred q;
  TileView a = check_tile(left, op, "left", mem_bit(PYPTO_LEFT));
  TileView b = check_tile(right, op, "right", mem_bit(PYPTO_RIGHT));
  TileView c = check_tile(acc, op, "acc", mem_bit(PYPTO_ACC));
  const int64_t m = a.valid_rows, k = a.valid_cols, n = b.valid_cols;
  check_cube_operands(a, b, c, m, k, b.valid_rows, n, op);
  if (is_int8(a.dtype)) fail(ErrorKind::kDType, op, "the fp32 bias table takes float inputs");
  TileView t = check_bias(bias, n, op);
  q.run(m * k * n, [a, b, c, t, m, k, n] {
    for (int64_t r = 0; r < m; ++r) std::memcpy(c.row(r), t.row(0), static_cast<size_t>(n * 4));
    if (matmul_h16(a, b, c, m, k, n, false, false, true)) return;
    const Operand A = widen(a, false, m, k, 0), B = widen(b, false, k, n, 1);
    matmul_rows(A, B, c, m, k, n, true);
  });
  AccessList accs;
  accs.add(a.access(false));
  accs.add(b.access(false));
  accs.add(t.access(false));
  accs.add(c.access(true));
  issue_op(PYPTO_CUBE, mad_op(m, k, n, a.esize), op, accs, static_cast<uint64_t>(m * n * k),
           c.addr);
}
