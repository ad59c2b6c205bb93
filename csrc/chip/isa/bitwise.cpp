// Bitwise ops on integer tiles: TAND/TOR/TXOR/TSHL/TSHR, their scalar forms, and TNOT.
// Elements are widened to int64 (sign-extended; uint8 zero-extended), combined, and stored
// back keeping the low bits, so every result equals numpy's on the same dtype.
#include <string>

#include "chip/isa/checks.hpp"
#include "chip/isa/elem.hpp"

using namespace pypto;
using namespace pypto::isa;

namespace {

constexpr unsigned kVec = mem_bit(PYPTO_VEC);
const char* const kNames[] = {"TAND", "TOR", "TXOR", "TSHL", "TSHR"};
const char* const kScalarNames[] = {"TANDS", "TORS", "TXORS", "TSHLS", "TSHRS"};

int64_t apply(int op, int dt, int64_t a, int64_t b, const char* name) {
  const int bits = static_cast<int>(dtype_size(dt)) * 8;
  switch (op) {
    case PYPTO_AND:
      return a & b;
    case PYPTO_OR:
      return a | b;
    case PYPTO_XOR:
      return a ^ b;
    default:
      break;
  }
  if (b < 0)
    fail(ErrorKind::kOutOfBounds, name, "shift count " + std::to_string(b) + " is negative");
  if (op == PYPTO_SHL) return b >= bits ? 0 : static_cast<int64_t>(static_cast<uint64_t>(a) << b);
  if (b >= bits) return a < 0 ? -1 : 0;  // a is sign-extended (uint8: zero-extended, a >= 0)
  return a >> b;
}

void need_int(const TileView& t, const char* op) {
  if (!is_int_dtype(t.dtype)) {
    fail(ErrorKind::kDType, op, std::string("needs an integer tile, got ") + dtype_name(t.dtype));
  }
}

void issue(const char* op, const TileView& d, const TileView* a, const TileView* b = nullptr) {
  issue_vector_op(op, VecClass::kBitwise, d.valid_bytes(), d, a, b);
}

TileView operand(const pypto_tile* t, const char* op, const char* name, const TileView* like) {
  TileView v = check_tile(t, op, name, kVec);
  need_int(v, op);
  if (like) {
    check_same_dtype(v, *like, op, "operands");
    check_same_valid_shape(v, *like, op, "operands");
  }
  return v;
}

}  // namespace

extern "C" void pypto_tbitwise(int32_t opc, const pypto_tile* dst, const pypto_tile* a,
                               const pypto_tile* b) {
  const char* op = op_name(kNames, opc, "TBITWISE");
  TileView x = operand(a, op, "a", nullptr);
  TileView y = operand(b, op, "b", &x);
  TileView d = operand(dst, op, "dst", &x);
  for (int64_t r = 0; r < d.valid_rows; ++r) {
    for (int64_t c = 0; c < d.valid_cols; ++c) {
      int64_t v = apply(opc, d.dtype, load_i64(x.dtype, x.row(r) + c * x.esize),
                        load_i64(y.dtype, y.row(r) + c * y.esize), op);
      store_i64(d.dtype, d.row(r) + c * d.esize, v);
    }
  }
  issue(op, d, &x, &y);
}

extern "C" void pypto_tbitwise_scalar(int32_t opc, const pypto_tile* dst, const pypto_tile* a,
                                      int64_t s) {
  const char* op = op_name(kScalarNames, opc, "TBITWISES");
  const Deferred q;
  TileView x = operand(a, op, "a", nullptr);
  TileView d = operand(dst, op, "dst", &x);
  if ((opc == PYPTO_SHL || opc == PYPTO_SHR) && s < 0) {
    fail(ErrorKind::kOutOfBounds, op, "shift count " + std::to_string(s) + " is negative");
  }
  // Checked above, the scalar form never fails on data: its work is queued.
  q.run(d.valid_bytes(), [opc, d, x, s, op] {
    for (int64_t r = 0; r < d.valid_rows; ++r) {
      for (int64_t c = 0; c < d.valid_cols; ++c) {
        int64_t v = apply(opc, d.dtype, load_i64(x.dtype, x.row(r) + c * x.esize), s, op);
        store_i64(d.dtype, d.row(r) + c * d.esize, v);
      }
    }
  });
  issue(op, d, &x);
}

extern "C" void pypto_tnot(const pypto_tile* dst, const pypto_tile* a) {
  const char* op = "TNOT";
  const Deferred q;
  TileView x = operand(a, op, "a", nullptr);
  TileView d = operand(dst, op, "dst", &x);
  q.run(d.valid_bytes(), [d, x] {
    for (int64_t r = 0; r < d.valid_rows; ++r) {
      for (int64_t c = 0; c < d.valid_cols; ++c) {
        store_i64(d.dtype, d.row(r) + c * d.esize, ~load_i64(x.dtype, x.row(r) + c * x.esize));
      }
    }
  });
  issue(op, d, &x);
}
