// Vector-unit numerics (see vec_math.hpp for the contract).
//
// Structure: per-element functions (vec_math_elem.hpp), hot loops over them (one clone per x86
// ISA level, vec_math_loops.cpp), and here the public entry points, which validate (op, dtype)
// and dispatch. fp16/bf16 go through 256-element fp32 stack buffers:
// decode, compute with the fp32 loop, encode — every stage is a vectorised loop and the
// buffers stay in L1.
#include "vec_math.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

#include "dtype.hpp"
#include "vec_math_elem.hpp"
#include "vec_math_loops.hpp"

namespace pypto::vm {
namespace {

using namespace detail;  // NOLINT: the numerics' own internals

// ---- drivers ------------------------------------------------------------------------------

void h16_binary(int op, bool bf, uint16_t* d, const uint16_t* a, const uint16_t* b, size_t n) {
  float fa[kChunk], fb[kChunk];
  for (size_t i = 0; i < n; i += kChunk) {
    size_t m = std::min(kChunk, n - i);
    h16_decode(bf, fa, a + i, m);
    h16_decode(bf, fb, b + i, m);
    f32_binary(op, fa, fa, fb, m);
    h16_encode(bf, d + i, fa, m);
  }
}

void h16_binary_s(int op, bool bf, uint16_t* d, const uint16_t* a, float s, size_t n) {
  float fa[kChunk];
  for (size_t i = 0; i < n; i += kChunk) {
    size_t m = std::min(kChunk, n - i);
    h16_decode(bf, fa, a + i, m);
    f32_binary_s(op, fa, fa, s, m);
    h16_encode(bf, d + i, fa, m);
  }
}

void h16_unary(int op, bool bf, uint16_t* d, const uint16_t* a, size_t n) {
  if (op == PYPTO_NEG || op == PYPTO_ABS || op == PYPTO_RELU)
    return h16_bits_unary(op, bf, d, a, n);
  float fa[kChunk];
  for (size_t i = 0; i < n; i += kChunk) {
    size_t m = std::min(kChunk, n - i);
    h16_decode(bf, fa, a + i, m);
    f32_unary(op, fa, fa, m);
    h16_encode(bf, d + i, fa, m);
  }
}

// fp32 values (a chunk already widened, or an fp32 source) -> any dtype.
void store_from_f32(int dd, void* dst, const float* f, size_t m, int mode) {
  if (dd == PYPTO_FP32) {
    if (dst != f) std::memmove(dst, f, m * sizeof(float));
  } else if (dd == PYPTO_FP16 || dd == PYPTO_BF16) {
    h16_encode(dd == PYPTO_BF16, static_cast<uint16_t*>(dst), f, m);
  } else {
    f32_to_int(dd, mode, dst, f, m);
  }
}

void convert_chunk(int dd, void* dst, int sd, const void* src, size_t m, int mode) {
  if (is_float(sd)) {
    float buf[kChunk];
    const float* f = static_cast<const float*>(src);
    if (sd != PYPTO_FP32) {
      float* out = dd == PYPTO_FP32 ? static_cast<float*>(dst) : buf;
      h16_decode(sd == PYPTO_BF16, out, static_cast<const uint16_t*>(src), m);
      if (dd == PYPTO_FP32) return;
      f = buf;
    }
    store_from_f32(dd, dst, f, m, mode);
  } else {
    int64_t buf[kChunk];
    const int64_t* v = static_cast<const int64_t*>(src);
    if (sd != PYPTO_INT64) {
      int_to_i64(sd, buf, src, m);
      v = buf;
    }
    i64_to_dtype(dd, dst, v, m);
  }
}

float combine(int op, float x, float y) {
  if (op == PYPTO_RSUM) return x + y;
  return op == PYPTO_RMAX ? bin<PYPTO_MAX>(x, y) : bin<PYPTO_MIN>(x, y);
}

// Pairwise over [lo, lo+n): halves split at a multiple of kLanes, leaves of <= kBlock.
template <class Leaf>
float pairwise(int op, size_t lo, size_t n, const Leaf& leaf) {
  if (n <= kBlock) return leaf(lo, n);
  size_t h = (n / 2 + kLanes - 1) / kLanes * kLanes;
  return combine(op, pairwise(op, lo, h, leaf), pairwise(op, lo + h, n - h, leaf));
}

}  // namespace

bool binary_supported(int op, int dtype) {
  return op >= PYPTO_ADD && op <= PYPTO_MIN && (is_float(dtype) || dtype == PYPTO_INT32);
}

bool unary_supported(int op, int dtype) {
  if (op == PYPTO_COPY) return dtype_size(dtype) != 0;
  if (is_float(dtype)) return op >= PYPTO_EXP && op <= PYPTO_ABS;
  return dtype == PYPTO_INT32 && (op == PYPTO_RELU || op == PYPTO_NEG || op == PYPTO_ABS);
}

bool reduce_supported(int dtype) { return is_float(dtype) || dtype == PYPTO_INT32; }

void binary(int op, int dtype, void* dst, const void* a, const void* b, size_t n) {
  if (!binary_supported(op, dtype)) unsupported("binary", op, dtype);
  if (dtype == PYPTO_FP32) {
    f32_binary(op, static_cast<float*>(dst), static_cast<const float*>(a),
               static_cast<const float*>(b), n);
  } else if (dtype == PYPTO_INT32) {
    i32_binary(op, static_cast<uint32_t*>(dst), static_cast<const uint32_t*>(a),
               static_cast<const uint32_t*>(b), n);
  } else {
    h16_binary(op, dtype == PYPTO_BF16, static_cast<uint16_t*>(dst),
               static_cast<const uint16_t*>(a), static_cast<const uint16_t*>(b), n);
  }
}

void binary_scalar(int op, int dtype, void* dst, const void* a, double s, size_t n) {
  if (!binary_supported(op, dtype)) unsupported("binary_scalar", op, dtype);
  if (dtype == PYPTO_FP32) {
    f32_binary_s(op, static_cast<float*>(dst), static_cast<const float*>(a), float(s), n);
  } else if (dtype == PYPTO_INT32) {
    i32_binary_s(op, static_cast<uint32_t*>(dst), static_cast<const uint32_t*>(a),
                 uint32_t(sat_from_double<int32_t>(s)), n);
  } else {
    bool bf = dtype == PYPTO_BF16;
    float sf = bf ? bf16_to_f32(f64_to_bf16(s)) : f16_to_f32(f64_to_f16(s));
    h16_binary_s(op, bf, static_cast<uint16_t*>(dst), static_cast<const uint16_t*>(a), sf, n);
  }
}

void unary(int op, int dtype, void* dst, const void* a, size_t n) {
  if (!unary_supported(op, dtype)) unsupported("unary", op, dtype);
  if (n == 0) return;
  if (op == PYPTO_COPY) {
    if (dst != a) std::memmove(dst, a, n * dtype_size(dtype));
  } else if (dtype == PYPTO_FP32) {
    f32_unary(op, static_cast<float*>(dst), static_cast<const float*>(a), n);
  } else if (dtype == PYPTO_INT32) {
    i32_unary(op, static_cast<uint32_t*>(dst), static_cast<const uint32_t*>(a), n);
  } else {
    h16_unary(op, dtype == PYPTO_BF16, static_cast<uint16_t*>(dst), static_cast<const uint16_t*>(a),
              n);
  }
}

template <class T>
static void fill_as(void* dst, T v, size_t n) {
  std::fill_n(static_cast<T*>(dst), n, v);
}

void fill(int dtype, void* dst, double v, size_t n) {
  switch (dtype) {
    case PYPTO_FP32:
      return fill_as<float>(dst, float(v), n);
    case PYPTO_FP16:
      return fill_as<uint16_t>(dst, f64_to_f16(v), n);
    case PYPTO_BF16:
      return fill_as<uint16_t>(dst, f64_to_bf16(v), n);
    case PYPTO_INT32:
      return fill_as<int32_t>(dst, sat_from_double<int32_t>(v), n);
    case PYPTO_INT8:
      return fill_as<int8_t>(dst, sat_from_double<int8_t>(v), n);
    case PYPTO_INT16:
      return fill_as<int16_t>(dst, sat_from_double<int16_t>(v), n);
    case PYPTO_INT64:
      return fill_as<int64_t>(dst, sat_from_double<int64_t>(v), n);
    case PYPTO_UINT8:
      return fill_as<uint8_t>(dst, sat_from_double<uint8_t>(v), n);
    case PYPTO_UINT32:
      return fill_as<uint32_t>(dst, sat_from_double<uint32_t>(v), n);
    case PYPTO_BOOL:
      return fill_as<uint8_t>(dst, uint8_t(v != 0.0), n);
    default:
      unsupported("fill", 0, dtype);
  }
}

void convert(int dst_dtype, void* dst, int src_dtype, const void* src, size_t n, int round_mode) {
  if (dtype_size(dst_dtype) == 0) unsupported("convert", round_mode, dst_dtype);
  if (dtype_size(src_dtype) == 0) unsupported("convert", round_mode, src_dtype);
  if (round_mode < PYPTO_ROUND_RINT || round_mode > PYPTO_ROUND_CEIL)
    throw std::invalid_argument("pypto::vm::convert: bad round_mode " + std::to_string(round_mode));
  if (n == 0) return;
  size_t ds = dtype_size(dst_dtype), ss = dtype_size(src_dtype);
  if (dst_dtype == src_dtype) {
    if (dst != src) std::memmove(dst, src, n * ds);
    return;
  }
  // Direct paths where no intermediate buffer is needed, then the generic chunked one.
  if (src_dtype == PYPTO_FP32)
    return store_from_f32(dst_dtype, dst, static_cast<const float*>(src), n, round_mode);
  if (dst_dtype == PYPTO_FP32 && is_float(src_dtype)) {
    return h16_decode(src_dtype == PYPTO_BF16, static_cast<float*>(dst),
                      static_cast<const uint16_t*>(src), n);
  }
  if (src_dtype == PYPTO_INT32 && dst_dtype == PYPTO_FP32)
    return i32_to_f32(static_cast<float*>(dst), static_cast<const int32_t*>(src), n);
  char* d = static_cast<char*>(dst);
  const char* s = static_cast<const char*>(src);
  for (size_t i = 0; i < n; i += kChunk) {
    size_t m = std::min(kChunk, n - i);
    convert_chunk(dst_dtype, d + i * ds, src_dtype, s + i * ss, m, round_mode);
  }
}

double reduce(int op, int dtype, const void* a, size_t n) {
  if (op < PYPTO_RSUM || op > PYPTO_RMIN || !binary_supported(PYPTO_ADD, dtype))
    unsupported("reduce", op, dtype);
  if (n == 0) return op == PYPTO_RSUM ? 0.0 : op == PYPTO_RMAX ? -HUGE_VAL : HUGE_VAL;
  if (dtype == PYPTO_INT32) return i32_reduce(op, static_cast<const int32_t*>(a), n);
  if (dtype == PYPTO_FP32) {
    const float* p = static_cast<const float*>(a);
    return pairwise(op, 0, n, [&](size_t lo, size_t m) { return f32_block(op, p + lo, m); });
  }
  const uint16_t* p = static_cast<const uint16_t*>(a);
  bool bf = dtype == PYPTO_BF16;
  return pairwise(op, 0, n, [&](size_t lo, size_t m) {
    float buf[kBlock];
    h16_decode(bf, buf, p + lo, m);
    return f32_block(op, buf, m);
  });
}

namespace {

// reduce_rows_f32 on any CPU: a call per row.
void reduce_rows_portable(int op, float* dst, size_t dp, const float* a, size_t ap, size_t rows,
                          size_t n) {
  for (size_t r = 0; r < rows; ++r) dst[r * dp] = float(reduce(op, PYPTO_FP32, a + r * ap, n));
}

}  // namespace

void reduce_rows_f32(int op, float* dst, size_t dp, const float* a, size_t ap, size_t rows,
                     size_t n) {
  if (op < PYPTO_RSUM || op > PYPTO_RMIN) unsupported("reduce", op, PYPTO_FP32);
  if (n <= kBlock && exp_f32_avx512_available()) {  // one block per row: same bits, faster
    return reduce_rows_f32_avx512(op, dst, dp, a, ap, rows, n);
  }
  reduce_rows_portable(op, dst, dp, a, ap, rows, n);
}

std::vector<std::string> reduce_rows_f32_forms() {
  if (exp_f32_avx512_available()) return {"avx512", "portable"};
  return {"portable"};
}

void reduce_rows_f32_form(const std::string& form, int op, float* dst, size_t dp, const float* a,
                          size_t ap, size_t rows, size_t n) {
  if (op < PYPTO_RSUM || op > PYPTO_RMIN) unsupported("reduce", op, PYPTO_FP32);
  const bool avx512 = form == "avx512" && exp_f32_avx512_available();
  if (!avx512 && form != "portable") {
    throw std::invalid_argument("no reduce_rows_f32 form " + form + " on this CPU");
  }
  if (avx512) return reduce_rows_f32(op, dst, dp, a, ap, rows, n);
  reduce_rows_portable(op, dst, dp, a, ap, rows, n);
}

std::vector<std::string> fp16_encode_forms() {
  if (f16_encode_f16c_available()) return {"f16c", "portable"};
  return {"portable"};
}

void fp16_encode_form(const std::string& form, uint16_t* out, const float* in, size_t n) {
  if (form == "f16c" && f16_encode_f16c_available()) return f16_encode_f16c(out, in, n);
  if (form != "portable")
    throw std::invalid_argument("no fp16_encode form " + form + " on this CPU");
  h16_encode_portable(false, out, in, n);
}

void binary_scalar_rows_f32(int op, float* dst, size_t dp, const float* a, size_t ap,
                            const float* s, size_t sp, size_t rows, size_t n) {
  if (!binary_supported(op, PYPTO_FP32)) unsupported("binary_scalar", op, PYPTO_FP32);
  f32_rows_binary_s(op, dst, dp, a, ap, s, sp, rows, n);
}

void accumulate(int dtype, void* dst, const void* src, size_t n) {
  if (!binary_supported(PYPTO_ADD, dtype)) unsupported("accumulate", PYPTO_ADD, dtype);
  binary(PYPTO_ADD, dtype, dst, dst, src, n);
}

}  // namespace pypto::vm
