// Row reductions (TROWSUM / TROWMAX / TROWMIN) and broadcast ops (TROWEXPAND*, TCOLEXPAND*).
#include <algorithm>
#include <cstring>

#include "runtime/isa/checks.hpp"
#include "runtime/isa/dtype.hpp"
#include "runtime/isa/vec_math.hpp"

using namespace pypto;
using namespace pypto::isa;

namespace {

const char* const kReduceNames[] = {"TROWSUM", "TROWMAX", "TROWMIN"};
const char* const kRowExpandNames[] = {"TROWEXPANDADD", "TROWEXPANDSUB", "TROWEXPANDMUL",
                                       "TROWEXPANDDIV", "TROWEXPANDMAX", "TROWEXPANDMIN"};
const char* const kColExpandNames[] = {"TCOLEXPANDADD", "TCOLEXPANDSUB", "TCOLEXPANDMUL",
                                       "TCOLEXPANDDIV", "TCOLEXPANDMAX", "TCOLEXPANDMIN"};

// Reads element `i` of a row as double (the broadcast operand of an expand op).
double element(const TileView& t, const uint8_t* row, int64_t i) {
  const uint8_t* p = row + i * t.esize;
  if (t.dtype == PYPTO_INT32) {
    int32_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
  }
  float f;
  vm::convert(PYPTO_FP32, &f, t.dtype, p, 1, PYPTO_ROUND_RINT);
  return f;
}

void write_element(const TileView& t, uint8_t* row, int64_t i, double v) {
  vm::fill(t.dtype, row + i * t.esize, v, 1);
}

void check_vector_shape(const TileView& v, int64_t rows, int64_t cols, const char* op) {
  if (v.valid_rows != rows || v.valid_cols != cols) {
    fail(ErrorKind::kShape, op,
         "operand 'v' has shape " + shape_text(v.valid_rows, v.valid_cols) + ", expected " +
             shape_text(rows, cols));
  }
}

void issue(const char* op, const OpDesc& cost, const TileView& d,
           std::initializer_list<const TileView*> in, int64_t bytes) {
  AccessList acc;
  for (const TileView* t : in) acc.add(t->access(false));
  acc.add(d.access(true));
  issue_op(PYPTO_VECTOR, cost, op, acc, static_cast<uint64_t>(bytes), d.addr);
}

}  // namespace

extern "C" void pypto_trowreduce(int32_t opc, const pypto_tile* dst, const pypto_tile* src,
                                 const pypto_tile* tmp) {
  if (opc < PYPTO_RSUM || opc > PYPTO_RMIN) fail(ErrorKind::kInternal, "TROWREDUCE", "unknown op");
  const char* op = kReduceNames[opc];
  TileView d = check_tile(dst, op, "dst", mem_bit(PYPTO_VEC));
  TileView s = check_tile(src, op, "src", mem_bit(PYPTO_VEC));
  TileView t = check_tile(tmp, op, "tmp", mem_bit(PYPTO_VEC));
  check_same_dtype(d, s, op, "dst and src");
  check_same_dtype(t, s, op, "tmp and src");
  if (t.rows * t.cols < s.valid_elems()) {
    fail(ErrorKind::kShape, op,
         "scratch tile " + shape_text(t.rows, t.cols) + " is smaller than src " +
             shape_text(s.valid_rows, s.valid_cols));
  }
  check_vector_shape(d, s.valid_rows, 1, op);
  if (s.dtype != PYPTO_FP32 && s.dtype != PYPTO_FP16 && s.dtype != PYPTO_BF16 &&
      s.dtype != PYPTO_INT32) {
    fail(ErrorKind::kDType, op, std::string("dtype ") + dtype_name(s.dtype) + " is not supported");
  }
  for (int64_t r = 0; r < s.valid_rows; ++r) {
    double v = vm::reduce(opc, s.dtype, s.row(r), static_cast<size_t>(s.valid_cols));
    write_element(d, d.row(r), 0, v);
  }
  AccessList acc;  // the scratch tile is clobbered, as on the device
  acc.add(s.access(false));
  acc.add(t.access(true));
  acc.add(d.access(true));
  OpDesc rr;
  rr.cls = OpClass::kRowReduce;
  rr.bytes = s.valid_bytes();
  rr.rows = s.valid_rows;
  issue_op(PYPTO_VECTOR, rr, op, acc, static_cast<uint64_t>(s.valid_bytes()), d.addr);
}

static void expand(bool by_row, int32_t opc, const pypto_tile* dst, const pypto_tile* a,
                   const pypto_tile* v) {
  if (opc < PYPTO_ADD || opc > PYPTO_MIN) fail(ErrorKind::kInternal, "TEXPAND", "unknown op");
  const char* op = by_row ? kRowExpandNames[opc] : kColExpandNames[opc];
  TileView d = check_tile(dst, op, "dst", mem_bit(PYPTO_VEC));
  TileView x = check_tile(a, op, "a", mem_bit(PYPTO_VEC));
  TileView y = check_tile(v, op, "v", mem_bit(PYPTO_VEC));
  check_same_dtype(d, x, op, "dst and a");
  check_same_dtype(y, x, op, "v and a");
  check_same_valid_shape(d, x, op, "dst and a");
  if (!vm::binary_supported(opc, d.dtype)) {
    fail(ErrorKind::kDType, op, std::string("dtype ") + dtype_name(d.dtype) + " is not supported");
  }
  const size_t n = static_cast<size_t>(x.valid_cols);
  if (by_row) {
    check_vector_shape(y, x.valid_rows, 1, op);
    for (int64_t r = 0; r < x.valid_rows; ++r) {
      vm::binary_scalar(opc, d.dtype, d.row(r), x.row(r), element(y, y.row(r), 0), n);
    }
  } else {
    check_vector_shape(y, 1, x.valid_cols, op);
    for (int64_t r = 0; r < x.valid_rows; ++r)
      vm::binary(opc, d.dtype, d.row(r), x.row(r), y.row(0), n);
  }
  issue(op, vector_op(opc == PYPTO_DIV ? VecClass::kDiv : VecClass::kBinary, d.valid_bytes()), d,
        {&x, &y}, d.valid_bytes());
}

extern "C" void pypto_trowexpand(int32_t opc, const pypto_tile* dst, const pypto_tile* a,
                                 const pypto_tile* v) {
  expand(true, opc, dst, a, v);
}

extern "C" void pypto_tcolexpand(int32_t opc, const pypto_tile* dst, const pypto_tile* a,
                                 const pypto_tile* v) {
  expand(false, opc, dst, a, v);
}
