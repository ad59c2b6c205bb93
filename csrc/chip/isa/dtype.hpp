// Element types: sizes, names, and the fp16 / bf16 <-> fp32 conversions the vector unit uses.
//
// The conversions are plain bit manipulation on uint32 with selects instead of branches (see
// select_bits), so a loop over them auto-vectorises. Narrowing conversions round to nearest,
// ties to even (RNE), turn overflow into inf and NaN into a quiet NaN; widening is exact and
// keeps NaN payloads. fp16 subnormals are produced and consumed exactly, also when the process
// runs with denormals flushed (FTZ/DAZ).
#pragma once
#include <pypto/abi.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "simulator/hardware.hpp"

namespace pypto {

inline uint32_t f32_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

inline float f32_from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// c ? a : b as a bit blend. Used wherever an operand depends on a float operation: with a
// plain `?:` GCC sinks that operation into a branch, and under the default -ftrapping-math it
// then refuses to if-convert the branch, so the loop would not vectorise.
inline uint32_t select_bits(bool c, uint32_t a, uint32_t b) {
  uint32_t m = 0u - uint32_t(c);
  return (a & m) | (b & ~m);
}

inline float select_f32(bool c, float a, float b) {
  return f32_from_bits(select_bits(c, f32_bits(a), f32_bits(b)));
}

// fp16 -> fp32, exact. Every float op here has normal operands and results, so the result is
// right even if the process runs with denormals flushed (FTZ/DAZ, as some -ffast-math
// libraries set): rebiasing the subnormal through an fp32 subnormal would be cheaper but not.
inline float f16_to_f32(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t ah = h & 0x7fffu;
  // Normal: move the fields into place and rebias the exponent from 15 to 127.
  uint32_t norm = (ah << 13) + (112u << 23);
  // Inf/NaN: keep the payload (so a quiet NaN stays quiet), force the exponent to all ones.
  uint32_t infnan = (ah << 13) | 0x7f800000u;
  // Zero/subnormal: mantissa * 2^-24 is exact in fp32 and lets the FPU normalise it.
  uint32_t sub = f32_bits(float(int32_t(ah)) * 0x1p-24f);
  uint32_t r = select_bits(ah < 0x0400u, sub, norm);
  r = select_bits(ah >= 0x7c00u, infnan, r);
  return f32_from_bits(r | sign);
}

// fp32 -> fp16 bits (RNE) in the low half of a uint32. Loops that store many of these are
// faster staging them as uint32 first: left to narrow early, GCC packs to 16-bit lanes midway.
// |x| >= 65520 gives inf; NaN gives a quiet NaN keeping the top payload bits.
inline uint32_t f32_to_f16_u32(float f) {
  uint32_t x = f32_bits(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t ax = x & 0x7fffffffu;
  // Normal: adding 0xfff plus the lowest kept bit rounds the 13 dropped bits to nearest-even;
  // a carry out of the mantissa bumps the exponent, which is exactly what rounding wants.
  // Overflow, inf and NaN all clamp to 0x7c00 here. (Subnormal inputs wrap; replaced below.)
  uint32_t norm = (ax + 0x0fffu + ((ax >> 13) & 1u) - (112u << 23)) >> 13;
  norm = norm < 0x7c00u ? norm : 0x7c00u;
  // Subnormal (|x| < 2^-14): in x + 0.5 the float's last bit weighs 2^-24, the fp16 subnormal
  // step, so the FPU's own RNE does the rounding; rounding up to 2^-14 yields 0x400 (correct).
  // (Under DAZ an fp32-subnormal x reads as 0, which is also its correct fp16 value.)
  uint32_t sub = f32_bits(f32_from_bits(ax) + 0.5f) - 0x3f000000u;
  uint32_t r = select_bits(ax < 0x38800000u, sub, norm);
  // NaN: set the quiet bit and the payload on top of the clamped 0x7c00.
  r |= ax > 0x7f800000u ? 0x0200u | ((ax >> 13) & 0x03ffu) : 0u;
  return r | sign;
}

inline uint16_t f32_to_f16(float f) { return uint16_t(f32_to_f16_u32(f)); }

// bf16 -> fp32, exact: bf16 is the top half of an fp32.
inline float bf16_to_f32(uint16_t h) { return f32_from_bits(uint32_t(h) << 16); }

// fp32 -> bf16 bits (RNE) in the low half of a uint32 (see f32_to_f16_u32). bf16 shares fp32's
// exponent, so subnormals and overflow fall out of the integer rounding; NaN gets the quiet bit
// so that a payload living only in the dropped half still leaves a NaN.
inline uint32_t f32_to_bf16_u32(float f) {
  uint32_t x = f32_bits(f);
  uint32_t r = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
  uint32_t nan = (x >> 16) | 0x0040u;
  return (x & 0x7fffffffu) > 0x7f800000u ? nan : r;
}

inline uint16_t f32_to_bf16(float f) { return uint16_t(f32_to_bf16_u32(f)); }

// double -> fp32 with round-to-odd: an inexact result is the odd neighbour. Rounding that value
// again (RNE) to a format with <= 22 significant bits equals rounding the double directly, so
// double -> fp16/bf16 through it has no double-rounding error.
inline float f64_to_f32_odd(double d) {
  float f = float(d);
  uint32_t b = f32_bits(f);
  bool fixable = (b & 0x7f800000u) != 0x7f800000u;  // finite result (also excludes NaN)
  bool inexact = double(f) != d;
  uint32_t toward = (d < 0 ? -d : d) > double(f < 0 ? -f : f) ? b + 1 : b - 1;
  return f32_from_bits(fixable && inexact && (b & 1u) == 0 ? toward : b);
}

// int64 -> fp32 with round-to-odd (see above): truncate to 24 significant bits and OR a sticky
// bit for whatever was dropped; the 24-bit integer times 2^shift is then exact.
inline float i64_to_f32_odd(int64_t v) {
  uint64_t u = v < 0 ? 0 - uint64_t(v) : uint64_t(v);
  int len = u ? 64 - __builtin_clzll(u) : 0;
  int s = len > 24 ? len - 24 : 0;
  uint64_t t = (u >> s) | ((u & ((uint64_t(1) << s) - 1)) != 0 ? 1u : 0u);
  float f = float(t) * f32_from_bits(uint32_t(127 + s) << 23);
  return v < 0 ? -f : f;
}

// Correctly rounded (RNE) double -> fp16 / bf16, for scalars (fill values, scalar operands).
inline uint16_t f64_to_f16(double d) { return f32_to_f16(f64_to_f32_odd(d)); }
inline uint16_t f64_to_bf16(double d) { return f32_to_bf16(f64_to_f32_odd(d)); }

// Bytes per element; 0 for an unknown dtype.
inline size_t dtype_size(int dtype) {
  for (const hw::DType& d : hw::kDTypes) {
    if (d.code == dtype) return d.size;
  }
  return 0;
}

// Bytes from a GM tensor's first element to one past its last (0 when it is empty).
inline int64_t tensor_bytes(const pypto_tensor& t) {
  int64_t last = 0;
  for (int i = 0; i < t.ndim; ++i) {
    if (t.shape[i] == 0) return 0;
    last += (t.shape[i] - 1) * t.strides[i];
  }
  return (last + 1) * static_cast<int64_t>(dtype_size(t.dtype));
}

// Short name as the Python side spells it; "unknown" for an unknown dtype.
inline const char* dtype_name(int dtype) {
  for (const hw::DType& d : hw::kDTypes) {
    if (d.code == dtype) return d.name;
  }
  return "unknown";
}

}  // namespace pypto
