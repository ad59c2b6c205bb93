// Layout ops on Vec tiles: TTRANS (transpose on VECTOR), TFILLPAD (pad outside the valid
// region on VECTOR) and TRESHAPE (the same bytes seen with another shape: checks, no data
// moves, no instruction).
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "chip/isa/checks.hpp"
#include "chip/isa/dtype.hpp"
#include "chip/isa/vec_math.hpp"

using namespace pypto;
using namespace pypto::isa;

namespace {

template <typename T>
void transpose_as(const TileView& d, const TileView& s) {
  const T* src = reinterpret_cast<const T*>(s.data);
  T* dst = reinterpret_cast<T*>(d.data);
  for (int64_t r = 0; r < s.valid_rows; ++r)
    for (int64_t c = 0; c < s.valid_cols; ++c) dst[c * d.cols + r] = src[r * s.cols + c];
}

double pad_value(int dtype, int32_t mode) {
  if (mode == PYPTO_PAD_ZERO) return 0.0;
  const bool is_float = dtype == PYPTO_FP32 || dtype == PYPTO_FP16 || dtype == PYPTO_BF16;
  const double inf = std::numeric_limits<double>::infinity();
  if (is_float) return mode == PYPTO_PAD_MAX ? inf : -inf;
  switch (dtype) {  // integers: the dtype's own extreme
    case PYPTO_INT8:
      return mode == PYPTO_PAD_MAX ? 127.0 : -128.0;
    case PYPTO_UINT8:
      return mode == PYPTO_PAD_MAX ? 255.0 : 0.0;
    case PYPTO_INT16:
      return mode == PYPTO_PAD_MAX ? 32767.0 : -32768.0;
    case PYPTO_INT32:
      return mode == PYPTO_PAD_MAX ? 2147483647.0 : -2147483648.0;
    case PYPTO_UINT32:
      return mode == PYPTO_PAD_MAX ? 4294967295.0 : 0.0;
    case PYPTO_BOOL:
      return mode == PYPTO_PAD_MAX ? 1.0 : 0.0;
    default:
      return mode == PYPTO_PAD_MAX ? 9.2233720368547758e18 : -9.2233720368547758e18;
  }
}

// The transposes and the padding below never fail on data, so their work is queued for the data
// thread (done on the run's thread, each waited for the queued work first).
void transpose(const TileView& d, const TileView& s) {
  if (s.esize == 1) transpose_as<uint8_t>(d, s);
  if (s.esize == 2) transpose_as<uint16_t>(d, s);
  if (s.esize == 4) transpose_as<uint32_t>(d, s);
  if (s.esize == 8) transpose_as<uint64_t>(d, s);
}

void fill_pad(const TileView& d, const TileView& s, double v) {
  for (int64_t r = 0; r < d.valid_rows; ++r) {
    const int64_t keep = r < s.valid_rows ? s.valid_cols : 0;
    if (keep > 0 && d.addr != s.addr)
      std::memmove(d.row(r), s.row(r), static_cast<size_t>(keep * s.esize));
    vm::fill(d.dtype, d.row(r) + keep * d.esize, v, static_cast<size_t>(d.valid_cols - keep));
  }
}

}  // namespace

extern "C" void pypto_ttrans(const pypto_tile* dst, const pypto_tile* src) {
  const char* op = "TTRANS";
  const Deferred q;
  TileView s = check_tile(src, op, "src", mem_bit(PYPTO_VEC));
  TileView d = check_tile(dst, op, "dst", mem_bit(PYPTO_VEC));
  check_same_dtype(d, s, op, "dst and src");
  if (d.valid_rows != s.valid_cols || d.valid_cols != s.valid_rows) {
    fail(ErrorKind::kShape, op,
         "dst " + shape_text(d.valid_rows, d.valid_cols) + " is not the transpose of src " +
             shape_text(s.valid_rows, s.valid_cols));
  }
  if (d.addr == s.addr)
    fail(ErrorKind::kShape, op, "cannot transpose in place (dst and src share storage)");
  q.run(s.valid_bytes(), [d, s] { transpose(d, s); });
  issue_row_op(op, OpClass::kTranspose, s, nullptr, d);
}

extern "C" void pypto_tfillpad(const pypto_tile* dst, const pypto_tile* src, int32_t pad_mode) {
  const char* op = "TFILLPAD";
  const Deferred q;
  TileView s = check_tile(src, op, "src", mem_bit(PYPTO_VEC));
  TileView d = check_tile(dst, op, "dst", mem_bit(PYPTO_VEC));
  check_same_dtype(d, s, op, "dst and src");
  if (d.valid_rows < s.valid_rows || d.valid_cols < s.valid_cols) {
    fail(ErrorKind::kShape, op,
         "dst " + shape_text(d.valid_rows, d.valid_cols) + " is smaller than src's valid " +
             shape_text(s.valid_rows, s.valid_cols));
  }
  if (pad_mode < PYPTO_PAD_ZERO || pad_mode > PYPTO_PAD_MIN)
    fail(ErrorKind::kInternal, op, "unknown pad mode");
  q.run(d.valid_bytes(), [d, s, v = pad_value(d.dtype, pad_mode)] { fill_pad(d, s, v); });
  issue_vector_op(op, VecClass::kCopy, d.valid_bytes(), d, &s, nullptr);
}

extern "C" void pypto_treshape(const pypto_tile* dst, const pypto_tile* src) {
  const char* op = "TRESHAPE";
  const unsigned row_major = mem_bit(PYPTO_VEC) | mem_bit(PYPTO_MAT) | mem_bit(PYPTO_ACC);
  // A view touches no data: its checks need not wait for the queued work (as an op's own
  // queued work does not). Waiting there had the run's thread wait for the data thread at each
  // reshape: a third of its time in upstream's paged-attention decode.
  const Deferred q;
  TileView s = check_tile(q, src, op, "src", row_major);
  TileView d = check_tile(q, dst, op, "dst", row_major);
  check_same_dtype(d, s, op, "dst and src");
  if (d.mem != s.mem || d.addr != s.addr) {
    fail(ErrorKind::kMemorySpace, op,
         "a reshape is a view: dst must be src's storage (" + std::string(mem_name(s.mem)) + " @" +
             std::to_string(s.addr) + "), got " + mem_name(d.mem) + " @" + std::to_string(d.addr));
  }
  if (d.rows * d.cols != s.rows * s.cols || !d.full_rows() || d.valid_rows != d.rows ||
      !s.full_rows() || s.valid_rows != s.rows) {
    fail(ErrorKind::kShape, op,
         "cannot view " + shape_text(s.rows, s.cols) + " (valid " +
             shape_text(s.valid_rows, s.valid_cols) + ") as " + shape_text(d.rows, d.cols) +
             ": element counts must match and both tiles be fully valid");
  }
}
