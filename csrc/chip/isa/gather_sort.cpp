// TCI (index sequences), TGATHER (index and mask forms), TSORT / TSORT32, TMRGSORT and
// TROWARGMAX / TROWARGMIN: per-element data movement and row extremum indices on the vector
// unit. The declarations are generated from the
// family's table, pypto/ops/sort.py.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "chip/isa/checks.hpp"
#include "chip/isa/elem.hpp"

using namespace pypto;
using namespace pypto::isa;

namespace {
constexpr unsigned kVec = mem_bit(PYPTO_VEC);

// Descending, NaN first (as the largest), as TSORT orders a row: a merge keeps that order.
bool before(float x, float y) {
  if (std::isnan(x) || std::isnan(y)) return std::isnan(x) && !std::isnan(y);
  return x > y;
}

// A sorted list of 8-byte (fp32 value, index bits) pairs.
struct PairList {
  const uint8_t* data;
  int64_t pairs;
  float value(int64_t i) const { return load_as<float>(data + 8 * i); }
};

// Merges `lists` into `out` (ties: the earlier list first). With `exhausted`, stops when one
// list runs out. Returns the pairs written.
int64_t merge(std::vector<PairList> lists, uint8_t* out, bool exhausted) {
  std::vector<int64_t> at(lists.size(), 0);
  int64_t written = 0;
  for (;;) {
    int best = -1;
    for (size_t j = 0; j < lists.size(); ++j) {
      if (at[j] == lists[j].pairs) {
        if (exhausted) return written;
        continue;
      }
      if (best < 0 || before(lists[j].value(at[j]), lists[best].value(at[best])))
        best = static_cast<int>(j);
    }
    if (best < 0) return written;
    std::memcpy(out + 8 * written++, lists[best].data + 8 * at[best]++, 8);
  }
}

TileView check_pair_row(const pypto_tile* t, const char* op, const char* name) {
  TileView v = check_tile(t, op, name, kVec);
  if (v.dtype != PYPTO_FP32 || v.valid_rows != 1 || v.valid_cols % 2 != 0) {
    fail(ErrorKind::kShape, op,
         std::string(name) + " must be one fp32 row of (value, index) pairs, got " +
             dtype_name(v.dtype) + " " + shape_text(v.valid_rows, v.valid_cols));
  }
  return v;
}

void check_apart(const TileView& d, const TileView& s, const char* op) {
  if (accesses_overlap(d.access(true), s.access(false)))
    fail(ErrorKind::kMemorySpace, op, "dst overlaps a source; merge into a separate tile");
}
}  // namespace

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

namespace {

// The operands of an index gather, checked: Vec tiles, dst of src's dtype and idx's shape, idx
// int32, dst apart from src; src_name and idx_name are what the op's form calls them.
struct GatherOperands {
  TileView d, s, ix;
};
GatherOperands gather_operands(const pypto_tile* dst, const pypto_tile* src, const pypto_tile* idx,
                               const char* src_name, const char* idx_name) {
  const char* op = "TGATHER";
  GatherOperands g{check_tile(dst, op, "dst", kVec), check_tile(src, op, src_name, kVec),
                   check_tile(idx, op, idx_name, kVec)};
  check_same_dtype(g.d, g.s, op, (std::string("dst and ") + src_name).c_str());
  check_same_valid_shape(g.d, g.ix, op, (std::string("dst and ") + idx_name).c_str());
  if (g.ix.dtype != PYPTO_INT32)
    fail(ErrorKind::kDType, op,
         std::string(idx_name) + " must be int32, got " + dtype_name(g.ix.dtype));
  if (accesses_overlap(g.d.access(true), g.s.access(false))) {
    fail(ErrorKind::kMemorySpace, op,
         std::string("dst and ") + src_name + " overlap; gather into a separate tile");
  }
  return g;
}

}  // namespace

namespace {

// dst[r, c] = the element of src that `at(r, c, k)` picks for the index k = idx[r, c] (null: k
// is out of range, an error saying so in `range`'s words); then the instruction is described.
template <class At>
void gather_each(const GatherOperands& g, const std::string& range, At at) {
  const char* op = "TGATHER";
  const TileView& d = g.d;
  for (int64_t r = 0; r < d.valid_rows; ++r) {
    for (int64_t c = 0; c < d.valid_cols; ++c) {
      const int64_t k = load_as<int32_t>(g.ix.row(r) + c * 4);
      const uint8_t* from = at(r, c, k);
      if (from == nullptr) {
        fail(ErrorKind::kOutOfBounds, op,
             "index " + std::to_string(k) + " at " + shape_text(r, c) + " is outside " + range);
      }
      std::memcpy(d.row(r) + c * d.esize, from, static_cast<size_t>(d.esize));
    }
  }
  AccessList acc;
  acc.add(g.s.access(false));
  acc.add(g.ix.access(false));
  acc.add(d.access(true));
  issue_op(PYPTO_VECTOR, vector_op(VecClass::kGather, d.valid_bytes()), op, acc,
           static_cast<uint64_t>(d.valid_bytes()), d.addr);
}

}  // namespace

extern "C" void pypto_tgather(const pypto_tile* dst, const pypto_tile* src, const pypto_tile* idx) {
  const GatherOperands g = gather_operands(dst, src, idx, "src", "indices");
  const TileView& s = g.s;
  const int64_t n = s.valid_elems();
  gather_each(g, "src's " + std::to_string(n) + " elements",
              [&](int64_t, int64_t, int64_t k) -> const uint8_t* {
                if (k < 0 || k >= n) return nullptr;
                return s.row(k / s.valid_cols) + (k % s.valid_cols) * s.esize;
              });
}

extern "C" void pypto_tgather_dim(const pypto_tile* dst, const pypto_tile* src,
                                  const pypto_tile* idx, int32_t dim) {
  const GatherOperands g = gather_operands(dst, src, idx, "input", "index");
  const TileView& s = g.s;
  const bool along_cols = dim == 1 || dim == -1;  // torch.gather: index picks along `dim`
  gather_each(g, "input's " + shape_text(s.valid_rows, s.valid_cols),
              [&](int64_t r, int64_t c, int64_t k) -> const uint8_t* {
                if (k < 0 || k >= (along_cols ? s.valid_cols : s.valid_rows)) return nullptr;
                if (along_cols ? r >= s.valid_rows : c >= s.valid_cols) return nullptr;
                return along_cols ? s.row(r) + k * s.esize : s.row(k) + c * s.esize;
              });
}

extern "C" void pypto_tsort(int32_t block, const pypto_tile* dst, const pypto_tile* src,
                            const pypto_tile* idx) {
  const char* op = block ? "TSORT32" : "TSORT";
  TileView d = check_tile(dst, op, "dst", kVec);
  TileView s = check_tile(src, op, "src", kVec);
  TileView ix = check_tile(idx, op, "idx", kVec);
  if (s.dtype != PYPTO_FP32)
    fail(ErrorKind::kDType, op, std::string("sorts fp32 values, got ") + dtype_name(s.dtype));
  if (ix.dtype != PYPTO_INT32 && ix.dtype != PYPTO_UINT32)
    fail(ErrorKind::kDType, op,
         std::string("idx must be int32 or uint32, got ") + dtype_name(ix.dtype));
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

// Format 1: groups of four runs of block_len elements, each merged into one run. One merge
// pass over the row at the sort rate (the cost of one merge step of TSORT).
extern "C" void pypto_tmrgsort(const pypto_tile* dst, const pypto_tile* src, int32_t block_len) {
  const char* op = "TMRGSORT";
  TileView d = check_pair_row(dst, op, "dst");
  TileView s = check_pair_row(src, op, "src");
  check_same_valid_shape(d, s, op, "dst and src");
  check_apart(d, s, op);
  const int64_t width = s.valid_cols, group = 4 * int64_t{block_len};
  if (block_len <= 0 || block_len % 64 != 0 || width % group != 0) {
    fail(ErrorKind::kShape, op,
         "block_len " + std::to_string(block_len) +
             " must be a positive multiple of 64 whose 4 runs tile the row of " +
             std::to_string(width));
  }
  for (int64_t g = 0; g < width; g += group) {
    std::vector<PairList> runs;
    for (int64_t r = 0; r < 4; ++r)
      runs.push_back({s.row(0) + 4 * (g + r * block_len), block_len / 2});
    merge(runs, d.row(0) + 4 * g, false);
  }
  AccessList acc;
  acc.add(s.access(false));
  acc.add(d.access(true));
  OpDesc desc = vector_op(VecClass::kSort, d.valid_bytes());
  desc.k = width / group;  // one merge repeat per group of four runs
  issue_op(PYPTO_VECTOR, desc, op, acc, static_cast<uint64_t>(d.valid_bytes()), d.addr);
}

// Format 2: 2 to 4 sorted rows merged into dst (one pass over dst at the sort rate).
extern "C" void pypto_tmrgsort_lists(const pypto_tile* dst, const pypto_tile* src0,
                                     const pypto_tile* src1, const pypto_tile* src2,
                                     const pypto_tile* src3, int32_t exhausted) {
  const char* op = "TMRGSORT";
  TileView d = check_pair_row(dst, op, "dst");
  std::vector<PairList> lists;
  AccessList acc;
  int64_t total = 0;
  const char* names[] = {"src0", "src1", "src2", "src3"};
  const pypto_tile* srcs[] = {src0, src1, src2, src3};
  for (int i = 0; i < 4 && srcs[i] != nullptr; ++i) {
    TileView s = check_pair_row(srcs[i], op, names[i]);
    check_apart(d, s, op);
    lists.push_back({s.row(0), s.valid_cols / 2});
    acc.add(s.access(false));
    total += s.valid_cols;
  }
  if (lists.size() < 2 || d.valid_cols != total) {
    fail(ErrorKind::kShape, op,
         "merges 2 to 4 lists into dst of their total width " + std::to_string(total) +
             ", got dst " + shape_text(d.valid_rows, d.valid_cols));
  }
  merge(lists, d.row(0), exhausted != 0);
  acc.add(d.access(true));
  issue_op(PYPTO_VECTOR, vector_op(VecClass::kSort, d.valid_bytes()), op, acc,
           static_cast<uint64_t>(d.valid_bytes()), d.addr);
}

namespace {

// The columns a mask pattern keeps: every `stride`-th one from `first` (pattern 7 keeps all).
std::pair<int64_t, int64_t> mask_columns(const char* op, int32_t mask_pattern) {
  static const int kStride[] = {0, 2, 2, 4, 4, 4, 4, 1}, kFirst[] = {0, 0, 1, 0, 1, 2, 3, 0};
  if (mask_pattern < 1 || mask_pattern > 7)
    fail(ErrorKind::kShape, op, "mask_pattern must be 1..7, got " + std::to_string(mask_pattern));
  return {kStride[mask_pattern], kFirst[mask_pattern]};
}

}  // namespace

// Mask form: the columns a pattern keeps, packed. assumption (no public per-op figure): the
// selection streams the source once, at the copy rate.
extern "C" void pypto_tgather_mask(const pypto_tile* dst, const pypto_tile* src,
                                   int32_t mask_pattern) {
  const char* op = "TGATHER";
  TileView d = check_tile(dst, op, "dst", kVec);
  TileView s = check_tile(src, op, "src", kVec);
  const auto [stride, first] = mask_columns(op, mask_pattern);
  if (d.esize != s.esize || d.valid_rows != s.valid_rows || d.valid_cols * stride != s.valid_cols) {
    fail(ErrorKind::kShape, op,
         "dst " + shape_text(d.valid_rows, d.valid_cols) + " " + dtype_name(d.dtype) +
             " cannot hold every " + std::to_string(stride) + " of src " +
             shape_text(s.valid_rows, s.valid_cols) + " " + dtype_name(s.dtype));
  }
  if (accesses_overlap(d.access(true), s.access(false)))
    fail(ErrorKind::kMemorySpace, op, "dst and src overlap; gather into a separate tile");
  for (int64_t r = 0; r < d.valid_rows; ++r) {
    for (int64_t c = 0; c < d.valid_cols; ++c) {
      std::memcpy(d.row(r) + c * d.esize, s.row(r) + (c * stride + first) * s.esize,
                  static_cast<size_t>(d.esize));
    }
  }
  AccessList acc;
  acc.add(s.access(false));
  acc.add(d.access(true));
  OpDesc desc = vector_op(VecClass::kGatherMask, s.valid_bytes());
  desc.rows = d.valid_rows;
  issue_op(PYPTO_VECTOR, desc, op, acc, static_cast<uint64_t>(d.valid_bytes()), d.addr);
}

// The inverse of the mask-form TGATHER: out keeps dst's values and takes src's in the columns
// mask_pattern selects. It writes every column of out once, so it is priced as a copy of out.
extern "C" void pypto_tscatter_mask(const pypto_tile* out, const pypto_tile* dst,
                                    const pypto_tile* src, int32_t mask_pattern) {
  const char* op = "TSCATTER";
  TileView o = check_tile(out, op, "out", kVec);
  TileView d = check_tile(dst, op, "dst", kVec);
  TileView s = check_tile(src, op, "src", kVec);
  const auto [stride, first] = mask_columns(op, mask_pattern);
  check_same_dtype(d, s, op, "dst and src");
  check_same_dtype(o, d, op, "out and dst");
  check_same_valid_shape(o, d, op, "out and dst");
  if (s.valid_rows != d.valid_rows || s.valid_cols * stride != d.valid_cols) {
    fail(ErrorKind::kShape, op,
         "src " + shape_text(s.valid_rows, s.valid_cols) + " cannot fill every " +
             std::to_string(stride) + " column of dst " + shape_text(d.valid_rows, d.valid_cols));
  }
  if (accesses_overlap(o.access(true), s.access(false)))
    fail(ErrorKind::kMemorySpace, op, "out and src overlap; scatter from a separate tile");
  const auto esize = static_cast<size_t>(o.esize);
  for (int64_t r = 0; r < o.valid_rows; ++r) {
    if (o.row(r) != d.row(r)) std::memmove(o.row(r), d.row(r), esize * o.valid_cols);
    for (int64_t c = 0; c < s.valid_cols; ++c)
      std::memcpy(o.row(r) + (c * stride + first) * o.esize, s.row(r) + c * s.esize, esize);
  }
  issue_vector_op(op, VecClass::kCopy, o.valid_bytes(), o, &d, &s);
}

// The index of a row's extremum is a row reduction on the device, priced as TROWMAX is; ties
// and NaN: the first column that compares strictly better wins (a NaN never does).
extern "C" void pypto_trowarg(const pypto_tile* dst, const pypto_tile* src, const pypto_tile* tmp,
                              int32_t is_max) {
  const char* op = is_max != 0 ? "TROWARGMAX" : "TROWARGMIN";
  const Deferred q;
  TileView d = check_tile(dst, op, "dst", kVec);
  TileView s = check_tile(src, op, "src", kVec);
  TileView t = check_tile(tmp, op, "tmp", kVec);
  check_same_dtype(t, s, op, "tmp and src");
  check_supported(s.dtype == PYPTO_FP32 || s.dtype == PYPTO_FP16 || s.dtype == PYPTO_INT32, op,
                  s.dtype);
  if (d.dtype != PYPTO_INT32 || d.valid_rows != s.valid_rows || d.valid_cols != 1) {
    fail(ErrorKind::kShape, op,
         "dst must be int32 " + shape_text(s.valid_rows, 1) + ", got " + dtype_name(d.dtype) + " " +
             shape_text(d.valid_rows, d.valid_cols));
  }
  q.run(s.valid_bytes(), [d, s, is_max] {
    for (int64_t r = 0; r < s.valid_rows; ++r) {
      int32_t best = 0;
      double held = load_f64(s.dtype, s.row(r));
      for (int64_t c = 1; c < s.valid_cols; ++c) {
        const double v = load_f64(s.dtype, s.row(r) + c * s.esize);
        if (is_max != 0 ? v > held || std::isnan(held) : v < held || std::isnan(held)) {
          best = static_cast<int32_t>(c);
          held = v;
        }
      }
      std::memcpy(d.row(r), &best, sizeof best);
    }
  });
  issue_row_op(op, OpClass::kRowReduce, s, &t, d);  // t is clobbered, as on the device
}
