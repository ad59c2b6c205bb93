// Vector ops beyond the tutorial set: TRSQRT/TSIN/TCOS, TCMP/TCMPS, TSEL, the column
// reductions TCOLSUM/TCOLMAX/TCOLMIN and the broadcasts TROWEXPAND/TCOLEXPAND. All operands
// live in Vec; the work is per element over the valid region (see elem.hpp), queued for the
// data thread as every vector op's is (done on the run's thread, each had waited for the
// queued work first: a drain per op).
#include <cmath>
#include <cstring>

#include "chip/isa/checks.hpp"
#include "chip/isa/elem.hpp"
#include "chip/isa/vec_math.hpp"

using namespace pypto;
using namespace pypto::isa;

namespace {

constexpr unsigned kVec = mem_bit(PYPTO_VEC);

void issue_vec(const char* op, const OpDesc& cost, const TileView& d,
               std::initializer_list<const TileView*> in) {
  AccessList acc;
  for (const TileView* t : in) acc.add(t->access(false));
  acc.add(d.access(true));
  issue_op(PYPTO_VECTOR, cost, op, acc, static_cast<uint64_t>(d.valid_bytes()), d.addr);
}

void need_float(const TileView& t, const char* op) {
  if (!is_float_dtype(t.dtype)) {
    fail(ErrorKind::kDType, op,
         std::string("needs fp32, fp16 or bf16, got ") + dtype_name(t.dtype));
  }
}

void need_numeric(const TileView& t, const char* op) {
  if (t.dtype == PYPTO_BOOL)
    fail(ErrorKind::kDType, op, "bool tiles cannot be compared or reduced");
}

// Calls f(dst_elem, a_elem, b_elem) over the valid region of d (a and b may be null).
template <typename F>
void each(const TileView& d, const TileView* a, const TileView* b, F f) {
  for (int64_t r = 0; r < d.valid_rows; ++r) {
    for (int64_t c = 0; c < d.valid_cols; ++c) {
      f(d.row(r) + c * d.esize, a ? a->row(r) + c * a->esize : nullptr,
        b ? b->row(r) + c * b->esize : nullptr);
    }
  }
}

bool compare(int mode, double a, double b) {
  switch (mode) {
    case PYPTO_CMP_EQ:
      return a == b;
    case PYPTO_CMP_NE:
      return a != b;
    case PYPTO_CMP_LT:
      return a < b;
    case PYPTO_CMP_LE:
      return a <= b;
    case PYPTO_CMP_GT:
      return a > b;
    default:
      return a >= b;
  }
}

// The op in double, rounded once into the tile's dtype by the caller.
template <int Op>
double math_of(double x) {
  if constexpr (Op == PYPTO_RSQRT) {
    return 1.0 / std::sqrt(x);
  } else if constexpr (Op == PYPTO_SIN) {
    return std::sin(x);
  } else {
    return std::cos(x);
  }
}

double math(int op, double x) {
  if (op == PYPTO_RSQRT) return math_of<PYPTO_RSQRT>(x);
  return op == PYPTO_SIN ? math_of<PYPTO_SIN>(x) : math_of<PYPTO_COS>(x);
}

// `f` over fp32 rows, in double as `math` computes (the same bits): typed loops, which the
// compiler vectorises for TRSQRT, where a dtype dispatch per element had cost ~10x.
template <typename F>
void rows_f32(const TileView& d, const TileView& x, F f) {
  for (int64_t r = 0; r < d.valid_rows; ++r) {
    auto* o = reinterpret_cast<float*>(d.row(r));
    const auto* p = reinterpret_cast<const float*>(x.row(r));
    for (int64_t c = 0; c < d.valid_cols; ++c)
      o[c] = static_cast<float>(f(static_cast<double>(p[c])));
  }
}

void apply_math(int op, const TileView& d, const TileView& x) {
  if (d.dtype == PYPTO_FP32 && x.dtype == PYPTO_FP32) {
    if (op == PYPTO_RSQRT) return rows_f32(d, x, math_of<PYPTO_RSQRT>);
    if (op == PYPTO_SIN) return rows_f32(d, x, math_of<PYPTO_SIN>);
    return rows_f32(d, x, math_of<PYPTO_COS>);
  }
  each(d, &x, nullptr, [&](uint8_t* o, const uint8_t* p, const uint8_t*) {
    store_f64(d.dtype, o, math(op, load_f64(x.dtype, p)));
  });
}

void apply_cmp(int mode, const TileView& d, const TileView& x, const TileView& y) {
  each(d, &x, &y, [&](uint8_t* o, const uint8_t* p, const uint8_t* q) {
    *o = compare(mode, load_f64(x.dtype, p), load_f64(y.dtype, q));
  });
}

void apply_cmps(int mode, const TileView& d, const TileView& x, double sv) {
  each(d, &x, nullptr, [&](uint8_t* o, const uint8_t* p, const uint8_t*) {
    *o = compare(mode, load_f64(x.dtype, p), sv);
  });
}

void apply_sel(const TileView& d, const TileView& m, const TileView& x, const TileView& y) {
  for (int64_t r = 0; r < d.valid_rows; ++r) {
    for (int64_t c = 0; c < d.valid_cols; ++c) {
      const uint8_t* src = m.row(r)[c] ? x.row(r) + c * x.esize : y.row(r) + c * y.esize;
      std::memmove(d.row(r) + c * d.esize, src, static_cast<size_t>(d.esize));
    }
  }
}

// Row by row into dst, each step rounded in the dtype, as the vector unit accumulates.
void apply_colreduce(int binop, const TileView& d, const TileView& s) {
  const size_t n = static_cast<size_t>(s.valid_cols);
  std::memmove(d.row(0), s.row(0), n * static_cast<size_t>(s.esize));
  for (int64_t r = 1; r < s.valid_rows; ++r)
    vm::binary(binop, d.dtype, d.row(0), d.row(0), s.row(r), n);
}

// Each row of dst filled with the row's value of `x` (by_row), or with x's one row.
void apply_broadcast(bool by_row, const TileView& d, const TileView& x) {
  const auto e = static_cast<size_t>(d.esize);
  for (int64_t r = 0; r < d.valid_rows; ++r) {
    uint8_t* o = d.row(r);
    if (!by_row) {
      std::memcpy(o, x.row(0), static_cast<size_t>(d.valid_cols) * e);
      continue;
    }
    for (int64_t c = 0; c < d.valid_cols; ++c) std::memcpy(o + c * e, x.row(r), e);
  }
}

const char* cmp_name(bool scalar) { return scalar ? "TCMPS" : "TCMP"; }

void check_mode(int32_t mode, const char* op) {
  if (mode < PYPTO_CMP_EQ || mode > PYPTO_CMP_GE) {
    fail(ErrorKind::kInternal, op,
         "compare mode " + std::to_string(mode) + " is not 0..5 (eq ne lt le gt ge)");
  }
}

TileView check_mask_dst(const pypto_tile* dst, const TileView& a, const char* op) {
  TileView d = check_tile(dst, op, "dst", kVec);
  if (d.dtype != PYPTO_BOOL)
    fail(ErrorKind::kDType, op, std::string("dst must be bool, got ") + dtype_name(d.dtype));
  check_same_valid_shape(d, a, op, "dst and a");
  return d;
}

}  // namespace

extern "C" void pypto_tmath(int32_t opc, const pypto_tile* dst, const pypto_tile* a) {
  static const char* const names[] = {"TRSQRT", "TSIN", "TCOS"};
  const char* op = op_name(names, opc, "TMATH");
  const Deferred q;
  TileView d = check_tile(dst, op, "dst", kVec);
  TileView x = check_input_a(a, d, op);
  need_float(d, op);
  q.run(d.valid_bytes(), [opc, d, x] { apply_math(opc, d, x); });
  issue_vec(op, vector_op(opc == PYPTO_RSQRT ? VecClass::kDiv : VecClass::kTrig, d.valid_bytes()),
            d, {&x});
}

extern "C" void pypto_tcmp(int32_t mode, const pypto_tile* dst, const pypto_tile* a,
                           const pypto_tile* b) {
  const char* op = cmp_name(false);
  check_mode(mode, op);
  const Deferred q;
  TileView x = check_tile(a, op, "a", kVec);
  TileView y = check_tile(b, op, "b", kVec);
  check_same_dtype(x, y, op, "a and b");
  check_same_valid_shape(x, y, op, "a and b");
  need_numeric(x, op);
  TileView d = check_mask_dst(dst, x, op);
  q.run(x.valid_bytes(), [mode, d, x, y] { apply_cmp(mode, d, x, y); });
  issue_vec(op, vector_op(VecClass::kCmp, x.valid_bytes()), d, {&x, &y});
}

extern "C" void pypto_tcmps(int32_t mode, const pypto_tile* dst, const pypto_tile* a, double s) {
  const char* op = cmp_name(true);
  check_mode(mode, op);
  const Deferred q;
  TileView x = check_tile(a, op, "a", kVec);
  need_numeric(x, op);
  TileView d = check_mask_dst(dst, x, op);
  uint8_t cell[8];  // the scalar register holds a value of the operand's dtype
  store_f64(x.dtype, cell, s);
  const double sv = load_f64(x.dtype, cell);
  q.run(x.valid_bytes(), [mode, d, x, sv] { apply_cmps(mode, d, x, sv); });
  issue_vec(op, vector_op(VecClass::kCmp, x.valid_bytes()), d, {&x});
}

extern "C" void pypto_tsel(const pypto_tile* dst, const pypto_tile* mask, const pypto_tile* a,
                           const pypto_tile* b) {
  const char* op = "TSEL";
  const Deferred q;
  TileView d = check_tile(dst, op, "dst", kVec);
  TileView m = check_tile(mask, op, "mask", kVec);
  TileView x = check_tile(a, op, "a", kVec);
  TileView y = check_tile(b, op, "b", kVec);
  if (m.dtype != PYPTO_BOOL)
    fail(ErrorKind::kDType, op, std::string("mask must be bool, got ") + dtype_name(m.dtype));
  check_elementwise(d, x, &y, op);
  check_same_valid_shape(m, x, op, "mask and a");
  q.run(d.valid_bytes(), [d, m, x, y] { apply_sel(d, m, x, y); });
  issue_vec(op, vector_op(VecClass::kSel, d.valid_bytes()), d, {&m, &x, &y});
}

extern "C" void pypto_tcolreduce(int32_t opc, const pypto_tile* dst, const pypto_tile* src) {
  static const char* const names[] = {"TCOLSUM", "TCOLMAX", "TCOLMIN"};
  static const int binop[] = {PYPTO_ADD, PYPTO_MAX, PYPTO_MIN};
  const char* op = op_name(names, opc, "TCOLREDUCE");
  const Deferred q;
  TileView d = check_tile(dst, op, "dst", kVec);
  TileView s = check_tile(src, op, "src", kVec);
  check_same_dtype(d, s, op, "dst and src");
  if (d.valid_rows != 1 || d.valid_cols != s.valid_cols) {
    fail(ErrorKind::kShape, op,
         "dst has shape " + shape_text(d.valid_rows, d.valid_cols) + ", expected " +
             shape_text(1, s.valid_cols));
  }
  check_supported(vm::binary_supported(binop[opc], s.dtype), op, s.dtype);
  if (s.valid_rows == 0) fail(ErrorKind::kShape, op, "src has no valid rows");
  q.run(s.valid_bytes(), [b = binop[opc], d, s] { apply_colreduce(b, d, s); });
  issue_vector_op(op, VecClass::kBinary, s.valid_bytes(), d, &s, nullptr);
}

extern "C" void pypto_tbroadcast(int32_t by_row, const pypto_tile* dst, const pypto_tile* v) {
  const char* op = by_row ? "TROWEXPAND" : "TCOLEXPAND";
  const Deferred q;
  TileView d = check_tile(dst, op, "dst", kVec);
  TileView x = check_tile(v, op, "v", kVec);
  check_same_dtype(d, x, op, "dst and v");
  const int64_t want_r = by_row ? d.valid_rows : 1, want_c = by_row ? 1 : d.valid_cols;
  if (x.valid_rows != want_r || x.valid_cols != want_c) {
    fail(ErrorKind::kShape, op,
         "operand 'v' has shape " + shape_text(x.valid_rows, x.valid_cols) + ", expected " +
             shape_text(want_r, want_c));
  }
  if (accesses_overlap(d.access(true), x.access(false))) {
    fail(ErrorKind::kMemorySpace, op, "dst and v overlap; broadcast into a separate tile");
  }
  q.run(d.valid_bytes(), [row = by_row != 0, d, x] { apply_broadcast(row, d, x); });
  issue_vec(op, vector_op(VecClass::kUnary, d.valid_bytes()), d, {&x});
}
