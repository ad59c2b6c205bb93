// The matrix-vector form of the cube: TGEMV acc[1,N] (+)= left[1,K] x right[K,N], and the
// MTE1 move that places a [1,K] row vector in L0A. A row vector is held row-major (one
// partial fractal row), so it is not a TMATMUL operand; the cube still spends a full 16-row
// fractal pass on it (a mad with m = 1).
#include <cstring>
#include <string>

#include "chip/isa/cube.hpp"
#include "chip/isa/dtype.hpp"
#include "chip/isa/matmul_f32.hpp"

using namespace pypto;
using namespace pypto::isa;

namespace {

void need_row_vector(const TileView& t, const char* op, const char* what) {
  if (t.rows != 1) {
    fail(ErrorKind::kShape, op,
         std::string(what) + " must be a [1, K] row vector, got " + shape_text(t.rows, t.cols));
  }
}

}  // namespace

extern "C" void pypto_tmov_row_vector(const pypto_tile* dst, const pypto_tile* src) {
  const char* op = "TMOV";
  const Deferred q;
  TileView s = check_tile(src, op, "src", mem_bit(PYPTO_MAT));
  TileView d = check_tile(dst, op, "dst", mem_bit(PYPTO_LEFT));
  need_row_vector(d, op, "a Left row vector");
  check_same_dtype(d, s, op, "dst and src");
  check_same_valid_shape(d, s, op, "dst and src");
  q.run(s.valid_bytes(),
        [d, s] { std::memcpy(d.data, s.data, static_cast<size_t>(s.valid_bytes())); });
  AccessList acc;
  acc.add(s.access(false));
  acc.add(d.access(true));
  issue_op(PYPTO_MTE1, l1_to_l0a_op(s.valid_bytes()), op, acc,
           static_cast<uint64_t>(s.valid_bytes()), d.addr);
}

namespace {

// acc[1,N] (+)= left[1,K] x right[K,N]; a bias row (when given) seeds the accumulator, as the
// bias table does in the same mad.
void gemv(const pypto_tile* acc, const pypto_tile* left, const pypto_tile* right,
          const pypto_tile* bias, bool accumulate, const char* op) {
  const Deferred q;  // the work is queued, as a mad's: the data thread never waits for it
  TileView a = check_tile(left, op, "left", mem_bit(PYPTO_LEFT));
  TileView b = check_tile(right, op, "right", mem_bit(PYPTO_RIGHT));
  TileView c = check_tile(acc, op, "acc", mem_bit(PYPTO_ACC));
  need_row_vector(a, op, "left");
  const int64_t k = a.valid_cols, n = b.valid_cols;
  if (a.dtype != b.dtype) fail(ErrorKind::kDType, op, "left and right dtypes differ");
  if (!gemv_input_supported(a.dtype)) {
    fail(ErrorKind::kDType, op,
         std::string("gemv inputs are fp16, bf16 or fp32, not ") + dtype_name(a.dtype));
  }
  if (c.dtype != cube_acc_dtype(a.dtype)) {
    fail(ErrorKind::kDType, op, "the accumulator must be fp32");
  }
  if (b.valid_rows != k) {
    fail(ErrorKind::kShape, op,
         "inner dims differ: left gives K = " + std::to_string(k) +
             ", right K = " + std::to_string(b.valid_rows));
  }
  if (c.valid_rows != 1 || c.valid_cols != n) {
    fail(ErrorKind::kShape, op,
         "accumulator is " + shape_text(c.valid_rows, c.valid_cols) + ", expected " +
             shape_text(1, n));
  }
  AccessList accs = mad_accesses(a, b, c, accumulate);
  TileView t{};  // the bias row, if any: it seeds the accumulator
  const bool seeded = bias != nullptr;
  if (seeded) {
    t = check_bias(bias, n, op);
    accs.add(t.access(false));
  }
  q.run(k * n, [a, b, c, t, k, n, accumulate, seeded] {
    if (seeded) std::memcpy(c.row(0), t.row(0), static_cast<size_t>(n * 4));
    const auto [row, right] = gemv_operands(a, b, k, n);
    vm::matmul_f32(row, right, reinterpret_cast<float*>(c.data), c.cols, 1, k, n,
                   accumulate || seeded);
  });
  issue_op(PYPTO_CUBE, mad_op(1, k, n, a.esize), op, accs, static_cast<uint64_t>(n * k), c.addr);
}

}  // namespace

extern "C" void pypto_tgemv(const pypto_tile* acc, const pypto_tile* left, const pypto_tile* right,
                            int32_t accumulate) {
  gemv(acc, left, right, nullptr, accumulate != 0, accumulate ? "TGEMV_ACC" : "TGEMV");
}

extern "C" void pypto_tgemv_bias(const pypto_tile* acc, const pypto_tile* left,
                                 const pypto_tile* right, const pypto_tile* bias) {
  gemv(acc, left, right, bias, false, "TGEMV_BIAS");
}
