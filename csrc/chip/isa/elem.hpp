// Single-element access in any dtype, for the ops whose work is per element rather than a
// vectorised stream (compare, select, gather, sort, bitwise, scalar reads and writes).
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "chip/isa/dtype.hpp"
#include "pypto/abi.h"

namespace pypto::isa {

template <typename T>
inline T load_as(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

template <typename T>
inline void store_as(uint8_t* p, T v) {
  std::memcpy(p, &v, sizeof v);
}

inline bool is_float_dtype(int dt) {
  return dt == PYPTO_FP32 || dt == PYPTO_FP16 || dt == PYPTO_BF16;
}
inline bool is_int_dtype(int dt) {
  return dt == PYPTO_INT8 || dt == PYPTO_INT16 || dt == PYPTO_INT32 || dt == PYPTO_INT64 ||
         dt == PYPTO_UINT8 || dt == PYPTO_UINT32;
}

// An integer element, sign-extended (zero-extended for uint8, uint32 and bool).
inline int64_t load_i64(int dt, const uint8_t* p) {
  switch (dt) {
    case PYPTO_INT8:
      return load_as<int8_t>(p);
    case PYPTO_INT16:
      return load_as<int16_t>(p);
    case PYPTO_INT32:
      return load_as<int32_t>(p);
    case PYPTO_INT64:
      return load_as<int64_t>(p);
    case PYPTO_UINT32:
      return load_as<uint32_t>(p);
    default:
      return load_as<uint8_t>(p);  // uint8, bool
  }
}

// Keeps the low bits (two's complement wrap, like numpy astype between integer types).
inline void store_i64(int dt, uint8_t* p, int64_t v) {
  switch (dt) {
    case PYPTO_INT8:
      store_as<int8_t>(p, static_cast<int8_t>(v));
      break;
    case PYPTO_INT16:
      store_as<int16_t>(p, static_cast<int16_t>(v));
      break;
    case PYPTO_INT32:
      store_as<int32_t>(p, static_cast<int32_t>(v));
      break;
    case PYPTO_UINT32:
      store_as<uint32_t>(p, static_cast<uint32_t>(v));
      break;
    case PYPTO_INT64:
      store_as<int64_t>(p, v);
      break;
    case PYPTO_BOOL:
      store_as<uint8_t>(p, v != 0);
      break;
    default:
      store_as<uint8_t>(p, static_cast<uint8_t>(v));
      break;
  }
}

// Any element as double: exact for every dtype but int64 beyond 2^53.
inline double load_f64(int dt, const uint8_t* p) {
  switch (dt) {
    case PYPTO_FP32:
      return load_as<float>(p);
    case PYPTO_FP16:
      return f16_to_f32(load_as<uint16_t>(p));
    case PYPTO_BF16:
      return bf16_to_f32(load_as<uint16_t>(p));
    default:
      return static_cast<double>(load_i64(dt, p));
  }
}

// Stores v correctly rounded (RNE) into a float dtype; an integer dtype takes it truncated
// toward zero and saturated (NaN -> 0), as the scalar unit converts.
inline void store_f64(int dt, uint8_t* p, double v) {
  switch (dt) {
    case PYPTO_FP32:
      store_as<float>(p, static_cast<float>(v));
      return;
    case PYPTO_FP16:
      store_as<uint16_t>(p, f64_to_f16(v));
      return;
    case PYPTO_BF16:
      store_as<uint16_t>(p, f64_to_bf16(v));
      return;
    default:
      break;
  }
  if (dt == PYPTO_BOOL) {
    store_as<uint8_t>(p, v != 0);
    return;
  }
  if (std::isnan(v)) v = 0;
  const int bits = static_cast<int>(dtype_size(dt)) * 8;
  const bool is_unsigned = dt == PYPTO_UINT8 || dt == PYPTO_UINT32;
  double lo = is_unsigned ? 0.0 : -std::ldexp(1.0, bits - 1);
  double hi = is_unsigned ? std::ldexp(1.0, bits) - 1 : std::ldexp(1.0, bits - 1) - 1;
  v = std::trunc(v);
  if (v < lo) v = lo;
  if (v > hi) v = hi;
  store_i64(
      dt, p,
      bits == 64 && v >= 9.2e18 ? std::numeric_limits<int64_t>::max() : static_cast<int64_t>(v));
}

}  // namespace pypto::isa
