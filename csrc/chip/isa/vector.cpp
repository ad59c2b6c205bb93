// Elementwise vector ops: TADD/TSUB/TMUL/TDIV/TMAX/TMIN, their scalar forms, unary math,
// TEXPANDS and TCVT. All operands live in Vec; the work is done by vec_math on whole
// tiles when rows are full, row by row otherwise.
#include "chip/isa/checks.hpp"
#include "chip/isa/dtype.hpp"
#include "chip/isa/elem.hpp"
#include "chip/isa/vec_math.hpp"
#include "chip/isa/vec_math_loops.hpp"

using namespace pypto;
using namespace pypto::isa;

namespace {

const char* const kBinaryNames[] = {"TADD", "TSUB", "TMUL", "TDIV", "TMAX", "TMIN"};
const char* const kScalarNames[] = {"TADDS", "TSUBS", "TMULS", "TDIVS", "TMAXS", "TMINS"};

const char* const kUnaryNames[] = {"TEXP",  "TLOG", "TSQRT", "TRECIP",
                                   "TRELU", "TNEG", "TABS",  "TCOPY"};
// The one-input op families, for the operands a core keeps (check_one_input).
constexpr int32_t kScalarFamily = 1, kUnaryFamily = 2;

VecClass unary_class(int op) {
  if (op == PYPTO_EXP || op == PYPTO_LOG || op == PYPTO_SQRT) return VecClass::kExp;
  if (op == PYPTO_RECIP) return VecClass::kDiv;
  if (op == PYPTO_COPY) return VecClass::kCopy;
  return VecClass::kUnary;
}

// Calls fn(dst_row, a_row, b_row, n) over the valid region: once when rows are full.
template <typename Fn>
void for_rows(const TileView& d, const TileView* a, const TileView* b, Fn fn) {
  bool whole = d.full_rows() && (!a || a->full_rows()) && (!b || b->full_rows());
  if (whole) {
    fn(d.data, a ? a->data : nullptr, b ? b->data : nullptr, static_cast<size_t>(d.valid_elems()));
    return;
  }
  for (int64_t r = 0; r < d.valid_rows; ++r) {
    fn(d.row(r), a ? a->row(r) : nullptr, b ? b->row(r) : nullptr,
       static_cast<size_t>(d.valid_cols));
  }
}

// vm::binary and vm::binary_scalar of an (op, dtype) the op has checked with binary_supported:
// fp32 calls its loop directly, as the public entry points would check the pair again and
// dispatch on the dtype for every row (a tenth of a tiny op's host instructions).
void binary_checked(int op, int dtype, uint8_t* d, const uint8_t* a, const uint8_t* b, size_t n) {
  if (dtype == PYPTO_FP32) {
    vm::detail::f32_binary(op, reinterpret_cast<float*>(d), reinterpret_cast<const float*>(a),
                           reinterpret_cast<const float*>(b), n);
  } else {
    vm::binary(op, dtype, d, a, b, n);
  }
}
void binary_scalar_checked(int op, int dtype, uint8_t* d, const uint8_t* a, double s, size_t n) {
  if (dtype == PYPTO_FP32) {
    vm::detail::f32_binary_s(op, reinterpret_cast<float*>(d), reinterpret_cast<const float*>(a),
                             float(s), n);
  } else {
    vm::binary_scalar(op, dtype, d, a, s, n);
  }
}

// Float -> integer with ties away from zero, element by element (elem.hpp saturates).
void convert_away(const TileView& d, const TileView& s) {
  for (int64_t r = 0; r < d.valid_rows; ++r) {
    for (int64_t c = 0; c < d.valid_cols; ++c) {
      store_f64(d.dtype, d.row(r) + c * d.esize,
                std::round(load_f64(s.dtype, s.row(r) + c * s.esize)));
    }
  }
}

}  // namespace

extern "C" void pypto_tbinary(int32_t opc, const pypto_tile* dst, const pypto_tile* a,
                              const pypto_tile* b) {
  const char* op = op_name(kBinaryNames, opc, "TBINARY");
  const Deferred q;
  CoreContext& core = q.core();
  TileView d = check_tile(q, dst, op, "dst", mem_bit(PYPTO_VEC));
  TileView x = check_next_tile(core, a, op, "a", mem_bit(PYPTO_VEC));
  TileView y = check_next_tile(core, b, op, "b", mem_bit(PYPTO_VEC));
  check_elementwise(d, x, &y, op);
  check_supported(vm::binary_supported(opc, d.dtype), op, d.dtype);
  q.run_with(
      d.valid_bytes(),
      [opc](const TileView& d, const TileView& x, const TileView& y) {
        for_rows(d, &x, &y, [&](uint8_t* o, const uint8_t* p, const uint8_t* r, size_t n) {
          binary_checked(opc, d.dtype, o, p, r, n);
        });
      },
      d, x, y);
  const VecClass c = opc == PYPTO_DIV   ? VecClass::kDiv
                     : opc == PYPTO_ADD ? VecClass::kAdd
                                        : VecClass::kBinary;
  issue_vector_op(core, op, c, d.valid_bytes(), d, &x, &y);
}

extern "C" void pypto_tbinary_scalar(int32_t opc, const pypto_tile* dst, const pypto_tile* a,
                                     double s) {
  const char* op = op_name(kScalarNames, opc, "TBINARYS");
  const Deferred q;
  const OneInputOperands& k =
      check_one_input(q, one_input_op(kScalarFamily, opc), dst, a, op, vm::binary_supported);
  q.run_with(
      k.bytes,
      [opc, s](const TileView& d, const TileView& x) {
        for_rows(d, &x, nullptr, [&](uint8_t* o, const uint8_t* p, const uint8_t*, size_t n) {
          binary_scalar_checked(opc, d.dtype, o, p, s, n);
        });
      },
      k.d, k.x);
  const VecClass c = opc == PYPTO_DIV ? VecClass::kDiv : VecClass::kUnary;
  issue_vector_op(q.core(), op, c, k);
}

extern "C" void pypto_tunary(int32_t opc, const pypto_tile* dst, const pypto_tile* a) {
  const char* op = op_name(kUnaryNames, opc, "TUNARY");
  const Deferred q;
  const OneInputOperands& k =
      check_one_input(q, one_input_op(kUnaryFamily, opc), dst, a, op, vm::unary_supported);
  q.run_with(
      k.bytes,
      [opc](const TileView& d, const TileView& x) {
        for_rows(d, &x, nullptr, [&](uint8_t* o, const uint8_t* p, const uint8_t*, size_t n) {
          vm::unary(opc, d.dtype, o, p, n);
        });
      },
      k.d, k.x);
  issue_vector_op(q.core(), op, unary_class(opc), k);
}

extern "C" void pypto_texpands(const pypto_tile* dst, double value) {
  const char* op = "TEXPANDS";
  const Deferred q;
  CoreContext& core = q.core();
  TileView d = check_tile(q, dst, op, "dst", mem_bit(PYPTO_VEC));
  q.run_with(
      d.valid_bytes(),
      [value](const TileView& d) {
        for_rows(d, nullptr, nullptr, [&](uint8_t* o, const uint8_t*, const uint8_t*, size_t n) {
          vm::fill(d.dtype, o, value, n);
        });
      },
      d);
  issue_vector_op(core, op, VecClass::kCopy, d.valid_bytes(), d, nullptr, nullptr);
}

extern "C" void pypto_tcvt(const pypto_tile* dst, const pypto_tile* src, int32_t round_mode) {
  const char* op = "TCVT";
  const Deferred q;
  CoreContext& core = q.core();
  TileView d = check_tile(q, dst, op, "dst", mem_bit(PYPTO_VEC));
  TileView s = check_next_tile(core, src, op, "src", mem_bit(PYPTO_VEC));
  check_same_valid_shape(d, s, op, "dst and src");
  if (accesses_overlap(d.access(true), s.access(false)) &&
      (d.data != s.data || d.esize != s.esize)) {
    fail(ErrorKind::kMemorySpace, op,
         "dst and src overlap partially; convert into a separate tile");
  }
  if (round_mode < PYPTO_ROUND_RINT || round_mode > PYPTO_ROUND_AWAY) {
    fail(ErrorKind::kInternal, op, "unknown round mode " + std::to_string(round_mode));
  }
  const int64_t bytes = std::max(d.valid_bytes(), s.valid_bytes());
  q.run(bytes, [d, s, round_mode] {
    if (round_mode == PYPTO_ROUND_AWAY && is_float_dtype(s.dtype) && is_int_dtype(d.dtype)) {
      convert_away(d, s);  // ties away from zero, then saturate (NaN -> 0) as the other modes
    } else {
      const int mode = round_mode == PYPTO_ROUND_AWAY ? PYPTO_ROUND_RINT : round_mode;
      for_rows(d, &s, nullptr, [&](uint8_t* o, const uint8_t* p, const uint8_t*, size_t n) {
        vm::convert(d.dtype, o, s.dtype, p, n, mode);
      });
    }
  });
  issue_vector_op(core, op, VecClass::kCvt, bytes, d, &s, nullptr);
}
