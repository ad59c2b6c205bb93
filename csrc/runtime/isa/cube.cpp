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

int64_t layout_index(int mem, int64_t r, int64_t c, int64_t cols, int64_t esize) {
  const int64_t c0 = 32 / esize;
  if (mem == PYPTO_LEFT) {  // zZ: 16 x c0 fractals, fractals row-major, elements row-major
    return ((r / 16) * (cols / c0) + c / c0) * 16 * c0 + (r % 16) * c0 + c % c0;
  }
  if (mem == PYPTO_RIGHT) {  // nZ: c0 x 16 fractals, fractals row-major, elements column-major
    return ((r / c0) * (cols / 16) + c / 16) * 16 * c0 + (c % 16) * c0 + r % c0;
  }
  return r * cols + c;
}

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

// A logical [rows, cols] operand, widened to fp32 row-major (transposed when asked).
std::vector<float> widen(const TileView& t, bool trans, int64_t rows, int64_t cols) {
  std::vector<float> out(static_cast<size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      int64_t sr = trans ? c : r, sc = trans ? r : c;
      const uint8_t* p = t.data + layout_index(t.mem, sr, sc, t.cols, t.esize) * t.esize;
      vm::convert(PYPTO_FP32, &out[static_cast<size_t>(r * cols + c)], t.dtype, p, 1, PYPTO_ROUND_RINT);
    }
  }
  return out;
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
  for (int64_t i = 0; i < m; ++i) {
    float* out = reinterpret_cast<float*>(c.row(i));
    std::vector<float> sum(static_cast<size_t>(n), 0.0f);
    for (int64_t kk = 0; kk < k; ++kk) {  // fp32 accumulate in k order, vectorised over n
      const float x = A[static_cast<size_t>(i * k + kk)];
      const float* brow = &B[static_cast<size_t>(kk * n)];
      for (int64_t j = 0; j < n; ++j) sum[static_cast<size_t>(j)] += x * brow[j];
    }
    for (int64_t j = 0; j < n; ++j) out[j] = accumulate ? out[j] + sum[static_cast<size_t>(j)] : sum[static_cast<size_t>(j)];
  }
  AccessList accs;
  accs.add(a.access(false));
  accs.add(b.access(false));
  if (accumulate) accs.add(c.access(false));
  accs.add(c.access(true));
  issue_op(PYPTO_CUBE, cost::matmul(current_core().platform, m, k, n, a.esize), op, accs,
           static_cast<uint64_t>(m * n * k), c.addr);
}
