// TMATMUL on the CUBE pipe, the L0 layouts, and FIXPIPE stores out of L0C.
#include "runtime/isa/cube.hpp"

#include <cstring>
#include <string>
#include <vector>

#include "runtime/isa/dtype.hpp"
#include "runtime/isa/vec_math.hpp"
#include "simulator/cost_model.hpp"

using namespace pypto;
using namespace pypto::isa;

namespace pypto::isa {

void store_from_acc(const pypto_tensor* dst, int64_t row0, int64_t col0, const pypto_tile* src,
                    bool atomic_add) {
  const char* op = atomic_add ? "TSTORE.atomic_add" : "TSTORE";
  TileView s = check_tile(src, op, "src", mem_bit(PYPTO_ACC));
  if (dst == nullptr) fail(ErrorKind::kOutOfBounds, op, "null GM tensor");
  // The window is checked in the tensor's dtype: FIXPIPE converts on the way out.
  TileView as_out = s;
  as_out.dtype = dst->dtype;
  as_out.esize = static_cast<int64_t>(dtype_size(dst->dtype));
  if (dst->dtype != PYPTO_FP32 && dst->dtype != PYPTO_FP16 && dst->dtype != PYPTO_BF16) {
    fail(ErrorKind::kDType, op, std::string("FIXPIPE writes fp32/fp16/bf16, not ") + dtype_name(dst->dtype));
  }
  GmWindow w = check_window(dst, row0, col0, as_out, op);
  std::vector<uint8_t> row(static_cast<size_t>(w.row_bytes));
  for (int64_t r = 0; r < w.rows; ++r) {
    vm::convert(dst->dtype, row.data(), s.dtype, s.row(r), static_cast<size_t>(s.valid_cols), PYPTO_ROUND_RINT);
    uint8_t* out = w.data + r * w.stride_bytes;
    if (atomic_add) {
      current_core().atomic_add(dst->data, out, dst->dtype, row.data(), static_cast<size_t>(s.valid_cols));
    } else {
      std::memcpy(out, row.data(), row.size());
    }
  }
  const Platform& p = current_core().platform;
  AccessList acc;
  acc.add(s.access(false));
  acc.add(w.access(true));
  issue_op(PYPTO_FIXPIPE, cost::fixpipe(p, w.rows, w.rows * w.row_bytes, p.bw_l0c_to_gm), op, acc,
           static_cast<uint64_t>(w.rows * w.row_bytes), s.addr);
}

}  // namespace pypto::isa

namespace {

// A logical [rows, cols] operand, widened to fp32 row-major (transposed when asked): the
// whole storage is converted in one call (fp16/bf16 -> fp32 is exact), then gathered.
template <int64_t E>  // the element size as a constant turns the index math into shifts
void gather(float* out, const float* stored, const TileView& t, bool trans, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    float* o = out + r * cols;
    for (int64_t c = 0; c < cols; ++c) o[c] = stored[layout_index(t.mem, trans ? c : r, trans ? r : c, t.cols, E)];
  }
}

std::vector<float> widen(const TileView& t, bool trans, int64_t rows, int64_t cols) {
  std::vector<float> stored(static_cast<size_t>(t.rows * t.cols));
  vm::convert(PYPTO_FP32, stored.data(), t.dtype, t.data, stored.size(), PYPTO_ROUND_RINT);
  std::vector<float> out(static_cast<size_t>(rows * cols));
  if (t.esize == 2) {
    gather<2>(out.data(), stored.data(), t, trans, rows, cols);
  } else {
    gather<4>(out.data(), stored.data(), t, trans, rows, cols);
  }
  return out;
}

using v8 = float __attribute__((vector_size(32)));  // two SSE or one AVX register

// By reference, not by value: a v8 in a return slot would be an AVX-dependent ABI (-Wpsabi).
inline __attribute__((always_inline)) void load8(v8& v, const float* p) { std::memcpy(&v, p, sizeof v); }

// Output rows [R, 16] (+)= A[R, k] x B[k, 16]: each sum starts at 0 and runs in k order, the
// products rounding before the adds (no FMA), so every build and CPU gives the bits of a plain
// k loop; the blocking only keeps R x 16 sums in registers.
template <int R>
inline __attribute__((always_inline)) void block16(const float* A, int64_t k, const float* B, int64_t n,
                                                   float* C, int64_t ldc, bool accumulate) {
  v8 s[R][2] = {};
  for (int64_t kk = 0; kk < k; ++kk) {
    v8 b0, b1;
    load8(b0, B + kk * n);
    load8(b1, B + kk * n + 8);
    for (int r = 0; r < R; ++r) {
      const float a = A[r * k + kk];
      s[r][0] += a * b0;
      s[r][1] += a * b1;
    }
  }
  for (int r = 0; r < R; ++r) {
    float* c = C + r * ldc;
    if (accumulate) {  // out + sum, as the unblocked loop (addition commutes exactly)
      v8 c0, c1;
      load8(c0, c);
      load8(c1, c + 8);
      s[r][0] += c0;
      s[r][1] += c1;
    }
    std::memcpy(c, &s[r][0], sizeof(v8));
    std::memcpy(c + 8, &s[r][1], sizeof(v8));
  }
}

// One output column of R rows, for widths that are not a multiple of 16.
template <int R>
inline __attribute__((always_inline)) void block1(const float* A, int64_t k, const float* B, int64_t n,
                                                  float* C, int64_t ldc, bool accumulate) {
  for (int r = 0; r < R; ++r) {
    float sum = 0.0f;
    for (int64_t kk = 0; kk < k; ++kk) sum += A[r * k + kk] * B[kk * n];
    C[r * ldc] = accumulate ? C[r * ldc] + sum : sum;
  }
}

template <int R>
inline __attribute__((always_inline)) void block_rows(const float* A, int64_t k, const float* B, int64_t n,
                                                      float* C, int64_t ldc, bool accumulate) {
  int64_t j = 0;
  for (; j + 16 <= n; j += 16) block16<R>(A, k, B + j, n, C + j, ldc, accumulate);
  for (; j < n; ++j) block1<R>(A, k, B + j, n, C + j, ldc, accumulate);
}

// C[m, n] = (C +) A[m, k] x B[k, n] in fp32, cloned for AVX2 (chosen when the CPU has it).
__attribute__((target_clones("avx2", "default"))) void matmul_f32(const float* A, const float* B, float* C,
                                                                  int64_t ldc, int64_t m, int64_t k, int64_t n,
                                                                  bool accumulate) {
  int64_t i = 0;
  for (; i + 4 <= m; i += 4) block_rows<4>(A + i * k, k, B, n, C + i * ldc, ldc, accumulate);
  for (; i < m; ++i) block_rows<1>(A + i * k, k, B, n, C + i * ldc, ldc, accumulate);
}

void check_cube_operands(const TileView& a, const TileView& b, const TileView& c, int64_t m, int64_t k,
                         int64_t kb, int64_t n, const char* op) {
  if (a.dtype != b.dtype) fail(ErrorKind::kDType, op, "left and right dtypes differ");
  if (a.dtype != PYPTO_FP16 && a.dtype != PYPTO_BF16 && a.dtype != PYPTO_FP32) {
    fail(ErrorKind::kDType, op, std::string("cube inputs are fp16, bf16 or fp32, not ") + dtype_name(a.dtype));
  }
  if (c.dtype != PYPTO_FP32) fail(ErrorKind::kDType, op, "the accumulator must be fp32");
  if (k != kb) {
    fail(ErrorKind::kShape, op, "inner dims differ: left gives K = " + std::to_string(k) + ", right K = " +
                                    std::to_string(kb));
  }
  if (c.valid_rows != m || c.valid_cols != n) {
    fail(ErrorKind::kShape, op, "accumulator is " + shape_text(c.valid_rows, c.valid_cols) + " but left x right is " +
                                    shape_text(m, n));
  }
}

}  // namespace

extern "C" void pypto_tmatmul(const pypto_tile* acc, const pypto_tile* left, const pypto_tile* right,
                              int32_t a_trans, int32_t b_trans, int32_t accumulate) {
  const char* op = accumulate ? "TMATMUL_ACC" : "TMATMUL";
  TileView a = check_tile(left, op, "left", mem_bit(PYPTO_LEFT));
  TileView b = check_tile(right, op, "right", mem_bit(PYPTO_RIGHT));
  TileView c = check_tile(acc, op, "acc", mem_bit(PYPTO_ACC));
  const int64_t m = a_trans ? a.valid_cols : a.valid_rows, k = a_trans ? a.valid_rows : a.valid_cols;
  const int64_t kb = b_trans ? b.valid_cols : b.valid_rows, n = b_trans ? b.valid_rows : b.valid_cols;
  check_cube_operands(a, b, c, m, k, kb, n, op);
  std::vector<float> A = widen(a, a_trans != 0, m, k), B = widen(b, b_trans != 0, k, n);
  matmul_f32(A.data(), B.data(), reinterpret_cast<float*>(c.data), c.cols, m, k, n, accumulate != 0);
  AccessList accs;
  accs.add(a.access(false));
  accs.add(b.access(false));
  if (accumulate) accs.add(c.access(false));
  accs.add(c.access(true));
  issue_op(PYPTO_CUBE, cost::matmul(current_core().platform, m, k, n, a.esize), op, accs,
           static_cast<uint64_t>(m * n * k), c.addr);
}
