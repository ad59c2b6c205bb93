// TCI (index sequences), TGATHER (index form) and TSORT / TSORT32: per-element data movement on
// the vector unit. The declarations are generated from the family's table, pypto/ops/sort.py.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "runtime/isa/checks.hpp"
#include "runtime/isa/elem.hpp"

using namespace pypto;
using namespace pypto::isa;

namespace {
constexpr unsigned kVec = mem_bit(PYPTO_VEC);
}

OpDesc sort_op(int64_t bytes, int64_t row_len, int64_t block) {
  OpDesc d;
  d.cls = OpClass::kSort;
  d.bytes = bytes;
  d.rows = row_len;
  d.k = block;
  return d;
}

// An index sequence is written like a fill (TEXPANDS): one streamed pass over dst.
extern "C" void pypto_tci(const pypto_tile* dst, int64_t start, int32_t descending) {
  const char* op = "TCI";
  TileView d = check_tile(dst, op, "dst", kVec);
  if (d.dtype != PYPTO_INT16 && d.dtype != PYPTO_INT32 && d.dtype != PYPTO_UINT32) {
    fail(ErrorKind::kDType, op,
         std::string("generates int16, int32 or uint32 sequences, got ") + dtype_name(d.dtype));
  }
  if (d.valid_rows != 1) {
    fail(ErrorKind::kShape, op,
         "dst has shape " + shape_text(d.valid_rows, d.valid_cols) +
             "; the sequence fills one row (its length is the row's valid width)");
  }
  const int64_t step = descending ? -1 : 1;
  for (int64_t c = 0; c < d.valid_cols; ++c)
    store_i64(d.dtype, d.row(0) + c * d.esize, start + step * c);
  issue_vector_op(op, VecClass::kCopy, d.valid_bytes(), d, nullptr, nullptr);
}

extern "C" void pypto_tgather(const pypto_tile* dst, const pypto_tile* src, const pypto_tile* idx) {
  const char* op = "TGATHER";
  TileView d = check_tile(dst, op, "dst", kVec);
  TileView s = check_tile(src, op, "src", kVec);
  TileView ix = check_tile(idx, op, "indices", kVec);
  check_same_dtype(d, s, op, "dst and src");
  check_same_valid_shape(d, ix, op, "dst and indices");
  if (ix.dtype != PYPTO_INT32)
    fail(ErrorKind::kDType, op, std::string("indices must be int32, got ") + dtype_name(ix.dtype));
  if (accesses_overlap(d.access(true), s.access(false))) {
    fail(ErrorKind::kMemorySpace, op, "dst and src overlap; gather into a separate tile");
  }
  const int64_t n = s.valid_elems();
  for (int64_t r = 0; r < d.valid_rows; ++r) {
    for (int64_t c = 0; c < d.valid_cols; ++c) {
      const int64_t k = load_as<int32_t>(ix.row(r) + c * 4);
      if (k < 0 || k >= n) {
        fail(ErrorKind::kOutOfBounds, op,
             "index " + std::to_string(k) + " at " + shape_text(r, c) + " is outside src's " +
                 std::to_string(n) + " elements");
      }
      const uint8_t* from = s.row(k / s.valid_cols) + (k % s.valid_cols) * s.esize;
      std::memcpy(d.row(r) + c * d.esize, from, static_cast<size_t>(d.esize));
    }
  }
  AccessList acc;
  acc.add(s.access(false));
  acc.add(ix.access(false));
  acc.add(d.access(true));
  issue_op(PYPTO_VECTOR, vector_op(VecClass::kGather, d.valid_bytes()), op, acc,
           static_cast<uint64_t>(d.valid_bytes()), d.addr);
}

extern "C" void pypto_tsort(int32_t block, const pypto_tile* dst, const pypto_tile* src,
                            const pypto_tile* idx) {
  const char* op = block ? "TSORT32" : "TSORT";
  TileView d = check_tile(dst, op, "dst", kVec);
  TileView s = check_tile(src, op, "src", kVec);
  TileView ix = check_tile(idx, op, "idx", kVec);
  if (s.dtype != PYPTO_FP32)
    fail(ErrorKind::kDType, op, std::string("sorts fp32 values, got ") + dtype_name(s.dtype));
  if (ix.dtype != PYPTO_INT32)
    fail(ErrorKind::kDType, op, std::string("idx must be int32, got ") + dtype_name(ix.dtype));
  check_same_dtype(d, s, op, "dst and src");
  check_same_valid_shape(s, ix, op, "src and idx");
  if (d.valid_rows != s.valid_rows || d.valid_cols != 2 * s.valid_cols) {
    fail(ErrorKind::kShape, op,
         "dst has shape " + shape_text(d.valid_rows, d.valid_cols) + ", expected " +
             shape_text(s.valid_rows, 2 * s.valid_cols) + " (value, index) pairs");
  }
  if (accesses_overlap(d.access(true), s.access(false)) ||
      accesses_overlap(d.access(true), ix.access(false))) {
    fail(ErrorKind::kMemorySpace, op, "dst overlaps src or idx; sort into a separate tile");
  }
  const int64_t n = s.valid_cols, run = block > 0 ? block : n;
  std::vector<int64_t> order(static_cast<size_t>(n));
  for (int64_t r = 0; r < s.valid_rows; ++r) {
    const float* v = reinterpret_cast<const float*>(s.row(r));
    std::iota(order.begin(), order.end(), 0);
    // Descending; NaN first (as the largest); ties keep their input order.
    auto before = [&](int64_t a, int64_t b) {
      const float x = v[a], y = v[b];
      if (std::isnan(x) || std::isnan(y)) return std::isnan(x) && !std::isnan(y);
      return x > y;
    };
    for (int64_t b0 = 0; b0 < n; b0 += run) {
      std::stable_sort(order.begin() + b0, order.begin() + std::min(n, b0 + run), before);
    }
    uint8_t* out = d.row(r);
    for (int64_t c = 0; c < n; ++c) {
      std::memcpy(out + 8 * c, &v[order[static_cast<size_t>(c)]], 4);
      std::memcpy(out + 8 * c + 4, ix.row(r) + 4 * order[static_cast<size_t>(c)], 4);
    }
  }
  AccessList acc;
  acc.add(s.access(false));
  acc.add(ix.access(false));
  acc.add(d.access(true));
  issue_op(PYPTO_VECTOR, sort_op(s.valid_bytes(), n, block), op, acc,
           static_cast<uint64_t>(d.valid_bytes()), d.addr);
}
