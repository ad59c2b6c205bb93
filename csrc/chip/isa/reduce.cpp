// Row reductions (TROWSUM / TROWMAX / TROWMIN) and broadcast ops (TROWEXPAND*, TCOLEXPAND*,
// the fused exp-difference of pypto/ops/expdif.py).
#include <algorithm>
#include <cstring>

#include "chip/isa/checks.hpp"
#include "chip/isa/dtype.hpp"
#include "chip/isa/elem.hpp"
#include "chip/isa/vec_math.hpp"

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

// The scratch tile of a row reduction: src's dtype, with room for src's valid elements.
TileView check_scratch(const pypto_tile* tmp, const TileView& s, const char* op) {
  TileView t = check_tile(tmp, op, "tmp", mem_bit(PYPTO_VEC));
  check_same_dtype(t, s, op, "tmp and src");
  if (t.rows * t.cols < s.valid_elems()) {
    fail(ErrorKind::kShape, op,
         "scratch tile " + shape_text(t.rows, t.cols) + " is smaller than src " +
             shape_text(s.valid_rows, s.valid_cols));
  }
  return t;
}

}  // namespace

extern "C" void pypto_trowreduce(int32_t opc, const pypto_tile* dst, const pypto_tile* src,
                                 const pypto_tile* tmp) {
  const char* op = op_name(kReduceNames, opc, "TROWREDUCE");
  const Deferred q;
  TileView d = check_tile(dst, op, "dst", mem_bit(PYPTO_VEC));
  TileView s = check_tile(src, op, "src", mem_bit(PYPTO_VEC));
  check_same_dtype(d, s, op, "dst and src");
  TileView t = check_scratch(tmp, s, op);
  check_vector_shape(d, s.valid_rows, 1, op);
  check_supported(vm::reduce_supported(s.dtype), op, s.dtype);
  q.run(s.valid_bytes(), [opc, d, s] {
    if (s.dtype == PYPTO_FP32) {  // one call for the tile, not one per row
      return vm::reduce_rows_f32(opc, reinterpret_cast<float*>(d.data), static_cast<size_t>(d.cols),
                                 reinterpret_cast<const float*>(s.data),
                                 static_cast<size_t>(s.cols), static_cast<size_t>(s.valid_rows),
                                 static_cast<size_t>(s.valid_cols));
    }
    for (int64_t r = 0; r < s.valid_rows; ++r) {
      double v = vm::reduce(opc, s.dtype, s.row(r), static_cast<size_t>(s.valid_cols));
      write_element(d, d.row(r), 0, v);
    }
  });
  // t is clobbered, as on the device; opc follows kReduceNames
  const RowReduceKind kinds[] = {RowReduceKind::kSum, RowReduceKind::kMax, RowReduceKind::kMin};
  issue_row_op(op, OpClass::kRowReduce, s, &t, d, kinds[opc]);
}

static void expand(bool by_row, int32_t opc, const pypto_tile* dst, const pypto_tile* a,
                   const pypto_tile* v) {
  const char* op = op_name(by_row ? kRowExpandNames : kColExpandNames, opc, "TEXPAND");
  const Deferred q;
  TileView d = check_tile(dst, op, "dst", mem_bit(PYPTO_VEC));
  TileView x = check_input_a(a, d, op);
  TileView y = check_tile(v, op, "v", mem_bit(PYPTO_VEC));
  check_same_dtype(y, x, op, "v and a");
  check_supported(vm::binary_supported(opc, d.dtype), op, d.dtype);
  const size_t n = static_cast<size_t>(x.valid_cols);
  check_vector_shape(y, by_row ? x.valid_rows : 1, by_row ? 1 : x.valid_cols, op);
  q.run(d.valid_bytes(), [by_row, opc, d, x, y, n] {
    if (by_row && d.dtype == PYPTO_FP32) {  // one call for the tile, not one per row
      return vm::binary_scalar_rows_f32(
          opc, reinterpret_cast<float*>(d.data), static_cast<size_t>(d.cols),
          reinterpret_cast<const float*>(x.data), static_cast<size_t>(x.cols),
          reinterpret_cast<const float*>(y.data), static_cast<size_t>(y.cols),
          static_cast<size_t>(x.valid_rows), n);
    }
    for (int64_t r = 0; r < x.valid_rows; ++r) {
      if (by_row) {
        vm::binary_scalar(opc, d.dtype, d.row(r), x.row(r), element(y, y.row(r), 0), n);
      } else {
        vm::binary(opc, d.dtype, d.row(r), x.row(r), y.row(0), n);
      }
    }
  });
  const VecClass c = opc == PYPTO_DIV ? VecClass::kDiv : VecClass::kBinary;
  issue_vector_op(op, c, d.valid_bytes(), d, &x, &y);
}

extern "C" void pypto_trowexpand(int32_t opc, const pypto_tile* dst, const pypto_tile* a,
                                 const pypto_tile* v) {
  expand(true, opc, dst, a, v);
}

extern "C" void pypto_tcolexpand(int32_t opc, const pypto_tile* dst, const pypto_tile* a,
                                 const pypto_tile* v) {
  expand(false, opc, dst, a, v);
}

// dst = exp(a - v), v broadcast (TROWEXPANDEXPDIF / TCOLEXPANDEXPDIF): the difference and the
// exp in one pass, as the device's fused instruction; priced as one exp pass over dst.
extern "C" void pypto_texpand_expdif(const pypto_tile* dst, const pypto_tile* a,
                                     const pypto_tile* v, int32_t by_row) {
  const char* op = by_row != 0 ? "TROWEXPANDEXPDIF" : "TCOLEXPANDEXPDIF";
  const Deferred q;
  TileView d = check_tile(dst, op, "dst", mem_bit(PYPTO_VEC));
  TileView x = check_input_a(a, d, op);
  TileView y = check_tile(v, op, "v", mem_bit(PYPTO_VEC));
  check_same_dtype(y, x, op, "v and a");
  check_supported(is_float_dtype(d.dtype) && vm::unary_supported(PYPTO_EXP, d.dtype), op, d.dtype);
  check_vector_shape(y, by_row != 0 ? x.valid_rows : 1, by_row != 0 ? 1 : x.valid_cols, op);
  const size_t n = static_cast<size_t>(x.valid_cols);
  q.run(d.valid_bytes(), [by_row, d, x, y, n] {
    for (int64_t r = 0; r < x.valid_rows; ++r) {
      if (by_row != 0) {
        vm::binary_scalar(PYPTO_SUB, d.dtype, d.row(r), x.row(r), element(y, y.row(r), 0), n);
      } else {
        vm::binary(PYPTO_SUB, d.dtype, d.row(r), x.row(r), y.row(0), n);
      }
      vm::unary(PYPTO_EXP, d.dtype, d.row(r), d.row(r), n);
    }
  });
  issue_vector_op(op, VecClass::kExp, d.valid_bytes(), d, &x, &y);
}
