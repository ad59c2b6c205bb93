// Vector-unit numerics, internal: the clone macros, the staging sizes and the per-element
// functions (templates on the op, so every loop body is straight-line code) that the hot
// loops (vec_math_loops.cpp) and the entry points (vec_math.cpp) share.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "dtype.hpp"
#include "vec_exp_avx512.hpp"

// Hot loops are cloned per ISA level and picked once at load time (ifunc), so one binary runs
// AVX-512 where it can without requiring it. The levels are x86-64-v4 (AVX-512 F/BW/DQ/VL) and
// v3 (AVX2 + FMA + F16C) rather than plain "avx512f"/"avx2": GCC's "avx2" excludes FMA, and
// exp/log use explicit fma so that they give the same bits on every machine (see exp_f32).
// Clang takes the plain path (its target_clones spelling of these levels differs).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define VM_HOT __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define VM_HOT
#endif
// Element helpers must be inlined into the clones to be compiled for the clone's ISA.
#define VM_INLINE inline __attribute__((always_inline))
#define VM_INLINE_LAMBDA __attribute__((always_inline))  // after a lambda's parameter list

namespace pypto::vm::detail {

constexpr size_t kChunk = 256;   // fp16/bf16 elements staged through fp32 per step (1 KiB)
constexpr size_t kLanes = 64;    // independent partial sums in a reduction block
constexpr size_t kBlock = 2048;  // leaf size of the pairwise reduction
constexpr float kInf = std::numeric_limits<float>::infinity();

inline bool is_float(int dt) { return dt == PYPTO_FP32 || dt == PYPTO_FP16 || dt == PYPTO_BF16; }

[[noreturn]] inline void unsupported(const char* what, int op, int dtype) {
  throw std::invalid_argument(std::string("pypto::vm::") + what + ": op " + std::to_string(op) +
                              " is not supported on dtype " + dtype_name(dtype));
}

// ---- per-element math -------------------------------------------------------------------

// Every multiply-add in exp/log is an explicit fma: left to the compiler, a*b+c is fused on
// FMA targets and not on others, so the last bit would depend on the machine. std::fma is
// exact everywhere (one instruction on the v3/v4 clones and aarch64, libm in the baseline
// x86 clone), so exp/log are bit-identical across machines like every other op here.

// e^x: x = k*ln2 + r with |r| <= ln2/2, e^r = 1 + r + r^2*P(r) (P fitted for this file by
// minimax on that interval, rel. error 3e-9), then * 2^k as two exponent-field multiplies so
// that k = 128 and subnormal results (k down to -150) need no branch. Outside the clamp the
// result is inf or 0 anyway; the clamp keeps NaN. (It is written with select_f32: as std::min/
// max GCC threads it into branches that only AVX-512 masking can if-convert.)
VM_INLINE float exp_f32(float x) {
  using namespace exp_coef;
  float xc = select_f32(x < kLo, kLo, x);
  xc = select_f32(xc > kHi, kHi, xc);
  float t = std::fma(xc, kLog2e, kMagic);
  float k = t - kMagic;
  int32_t n = int32_t(f32_bits(t) - f32_bits(kMagic));
  // Cody-Waite: ln2 split so that k * hi is exact (hi has 9 significant bits).
  float r = std::fma(k, kLn2Hi, xc);
  r = std::fma(k, kLn2Lo, r);
  float p = std::fma(kP0, r, kP1);
  p = std::fma(p, r, kP2);
  p = std::fma(p, r, kP3);
  p = std::fma(p, r, kP4);
  float e = std::fma(r * r, p, r) + 1.0f;
  int32_t n1 = n >> 1;
  float s1 = f32_from_bits(uint32_t(n1 + 127) << 23);
  float s2 = f32_from_bits(uint32_t(n - n1 + 127) << 23);
  return e * s1 * s2;
}

// ln x: x = m * 2^e with m in [sqrt(1/2), sqrt(2)), ln(1+f) = f - f^2/2 + f^3*Q(f) with f = m-1
// (exact), Q fitted by minimax (rel. error 6e-9), plus e*ln2 split as in exp. Subnormals are
// scaled by 2^23 first; x <= 0, inf and NaN are patched in by one final select. (Every select
// involving a float result is a select_f32/select_bits blend; see select_bits.)
VM_INLINE float log_f32(float x) {
  bool tiny = x < 0x1p-126f;
  uint32_t ix = select_bits(tiny, f32_bits(x * 0x1p23f), f32_bits(x));
  // Offsetting the pattern by 1.0 - sqrt(1/2) moves the exponent's step from 2^k to
  // sqrt(2)*2^k, so the mantissa lands in [sqrt(1/2), sqrt(2)) without a compare.
  uint32_t u = ix + (0x3f800000u - 0x3f3504f3u);
  int32_t e = int32_t(u >> 23) - (tiny ? 150 : 127);
  float f = f32_from_bits((u & 0x007fffffu) + 0x3f3504f3u) - 1.0f;
  float z = f * f;
  float q = std::fma(-7.63449743e-2f, f, 1.27615824e-1f);
  q = std::fma(q, f, -1.31601840e-1f);
  q = std::fma(q, f, 1.42017573e-1f);
  q = std::fma(q, f, -1.66233569e-1f);
  q = std::fma(q, f, 2.00012267e-1f);
  q = std::fma(q, f, -2.50008196e-1f);
  q = std::fma(q, f, 3.33333313e-1f);
  float fe = float(e);
  float y = std::fma(f * z, q, fe * -2.12194440e-4f);
  y = std::fma(-0.5f, z, y);
  float r = std::fma(fe, 0.693359375f, f + y);
  float special = x == 0.0f ? -kInf : x < 0.0f ? std::numeric_limits<float>::quiet_NaN() : x;
  return select_f32((x > 0.0f) & (x < kInf), r, special);
}

// int32 quotient truncated toward zero, computed in double: the true quotient is never
// within double rounding of an integer it is not, so truncating the rounded one is exact (and
// it vectorises; integer division does not). b == 0 gives 0, b == -1 gives -a (wrapping).
VM_INLINE int32_t idiv(int32_t a, int32_t b) {
  int32_t bs = int32_t(select_bits((b == 0) | (b == -1), 1u, uint32_t(b)));
  uint32_t q = uint32_t(int32_t(double(a) / double(bs)));
  uint32_t r = select_bits(b == -1, 0u - uint32_t(a), q);
  return int32_t(select_bits(b == 0, 0u, r));
}

// x OP y on fp32, or on int32 held in uint32 (where wrap-around is defined): S is the value's
// own type, for the division and the order. MAX/MIN are np.maximum/np.minimum: a NaN wins.
template <int OP, class T>
VM_INLINE T bin(T x, T y) {
  constexpr bool kInt = std::is_same_v<T, uint32_t>;
  using S = std::conditional_t<kInt, int32_t, float>;
  if constexpr (OP == PYPTO_ADD)
    return x + y;
  else if constexpr (OP == PYPTO_SUB)
    return x - y;
  else if constexpr (OP == PYPTO_MUL)
    return x * y;
  else if constexpr (OP == PYPTO_DIV && kInt)
    return uint32_t(idiv(int32_t(x), int32_t(y)));
  else if constexpr (OP == PYPTO_DIV)
    return x / y;
  else if constexpr (OP == PYPTO_MAX)
    return (S(x) > S(y) || x != x) ? x : y;
  else
    return (S(x) < S(y) || x != x) ? x : y;
}

template <int OP>
VM_INLINE float unary(float x) {
  if constexpr (OP == PYPTO_EXP)
    return exp_f32(x);
  else if constexpr (OP == PYPTO_LOG)
    return log_f32(x);
  else if constexpr (OP == PYPTO_SQRT)
    return std::sqrt(x);  // sqrtps with -fno-math-errno
  else if constexpr (OP == PYPTO_RECIP)
    return 1.0f / x;
  else if constexpr (OP == PYPTO_RELU)
    return (x > 0.0f || x != x) ? x : 0.0f;
  else if constexpr (OP == PYPTO_NEG)
    return -x;
  else
    return std::fabs(x);
}

template <int OP>
VM_INLINE uint32_t unary(uint32_t x) {
  if constexpr (OP == PYPTO_RELU)
    return int32_t(x) > 0 ? x : 0u;
  else if constexpr (OP == PYPTO_NEG)
    return 0u - x;
  else
    return int32_t(x) < 0 ? 0u - x : x;  // abs(INT32_MIN) wraps to itself, like numpy
}

// Round to an integral float by the pypto_round_mode MODE. Only nearbyint vectorises in GCC 12
// (to vroundps/vrndscaleps on the x86 clones, frinti on aarch64; trunc/floor/ceil stay scalar),
// so the other modes correct its result by +-1: the add of a 1.0-or-0.0 blend, so that GCC
// cannot turn it into a float op under a branch. (The baseline x86 clone calls libm for
// nearbyint: SSE2 has no rounding instruction.)
VM_INLINE float one_if(bool c) { return select_f32(c, 1.0f, 0.0f); }

template <int MODE>
VM_INLINE float round_int(float x) {
  float r = std::nearbyint(x);  // the default rounding mode, RNE
  if constexpr (MODE == PYPTO_ROUND_TRUNC)
    r = r - std::copysign(one_if(std::fabs(r) > std::fabs(x)), x);
  else if constexpr (MODE == PYPTO_ROUND_FLOOR)
    r = r - one_if(r > x);
  else if constexpr (MODE == PYPTO_ROUND_CEIL)
    r = r + one_if(r < x);
  return r;
}

// Integral float -> T, saturating; NaN -> 0. T's max may not be a float (2^31 - 1 is not), so
// clamp to the largest float below 2^bits and, for 32/64-bit T, add the remainder back when the
// input was out of range. (An add rather than a select keeps the conversion out of a branch.)
template <class T>
VM_INLINE T sat_from_float(float x) {
  constexpr T kMax = std::numeric_limits<T>::max();
  constexpr float lo = float(std::numeric_limits<T>::min());
  constexpr float top = 2.0f * float(kMax / 2 + 1);  // 2^bits (or 2^(bits-1) if signed)
  constexpr float hi = top * (1.0f - 0x1p-24f);      // largest float below top
  float c = x > lo ? x : lo;  // maxps; NaN becomes lo and is zeroed at the end
  c = c < hi ? c : hi;
  T r = T(c);
  if constexpr (sizeof(T) >= 4) r = T(r + (x >= top ? T(kMax - T(hi)) : T(0)));
  return x == x ? r : T(0);
}

// Scalar double -> T, truncating toward zero, saturating; NaN -> 0.
template <class T>
T sat_from_double(double v) {
  constexpr double lo = double(std::numeric_limits<T>::min());
  constexpr double top = 2.0 * double(std::numeric_limits<T>::max() / 2 + 1);
  if (v != v) return T(0);
  if (v >= top) return std::numeric_limits<T>::max();
  if (v <= lo) return std::numeric_limits<T>::min();
  return T(v);
}

}  // namespace pypto::vm::detail
