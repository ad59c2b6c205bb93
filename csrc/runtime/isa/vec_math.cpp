// Vector-unit numerics (see vec_math.hpp for the contract).
//
// Structure: per-element functions (templates on the op, so every loop body is straight-line
// code), hot loops over them (one clone per x86 ISA level), and the public entry points, which
// validate (op, dtype) and dispatch. fp16/bf16 go through 256-element fp32 stack buffers:
// decode, compute with the fp32 loop, encode — every stage is a vectorised loop and the
// buffers stay in L1.
#include "vec_math.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

#include "dtype.hpp"
#include "vec_exp_avx512.hpp"

namespace pypto::vm {
namespace {

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

constexpr size_t kChunk = 256;   // fp16/bf16 elements staged through fp32 per step (1 KiB)
constexpr size_t kLanes = 64;    // independent partial sums in a reduction block
constexpr size_t kBlock = 2048;  // leaf size of the pairwise reduction
constexpr float kInf = std::numeric_limits<float>::infinity();

bool is_float(int dt) { return dt == PYPTO_FP32 || dt == PYPTO_FP16 || dt == PYPTO_BF16; }

[[noreturn]] void unsupported(const char* what, int op, int dtype) {
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

template <int OP>
VM_INLINE float fbin(float x, float y) {
  if constexpr (OP == PYPTO_ADD)
    return x + y;
  else if constexpr (OP == PYPTO_SUB)
    return x - y;
  else if constexpr (OP == PYPTO_MUL)
    return x * y;
  else if constexpr (OP == PYPTO_DIV)
    return x / y;
  else if constexpr (OP == PYPTO_MAX)
    return (x > y || x != x) ? x : y;  // np.maximum
  else
    return (x < y || x != x) ? x : y;  // np.minimum
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

// int32 ops in uint32, where wrap-around is defined.
template <int OP>
VM_INLINE uint32_t ibin(uint32_t x, uint32_t y) {
  if constexpr (OP == PYPTO_ADD)
    return x + y;
  else if constexpr (OP == PYPTO_SUB)
    return x - y;
  else if constexpr (OP == PYPTO_MUL)
    return x * y;
  else if constexpr (OP == PYPTO_DIV)
    return uint32_t(idiv(int32_t(x), int32_t(y)));
  else if constexpr (OP == PYPTO_MAX)
    return int32_t(x) > int32_t(y) ? x : y;
  else
    return int32_t(x) < int32_t(y) ? x : y;
}

template <int OP>
VM_INLINE float funary(float x) {
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
VM_INLINE uint32_t iunary(uint32_t x) {
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

// ---- hot loops ----------------------------------------------------------------------------

#define VM_BINARY_CASES(op, CALL) \
  switch (op) {                   \
    case PYPTO_ADD:               \
      CALL(PYPTO_ADD);            \
      break;                      \
    case PYPTO_SUB:               \
      CALL(PYPTO_SUB);            \
      break;                      \
    case PYPTO_MUL:               \
      CALL(PYPTO_MUL);            \
      break;                      \
    case PYPTO_DIV:               \
      CALL(PYPTO_DIV);            \
      break;                      \
    case PYPTO_MAX:               \
      CALL(PYPTO_MAX);            \
      break;                      \
    default:                      \
      CALL(PYPTO_MIN);            \
      break;                      \
  }

VM_HOT void f32_binary(int op, float* d, const float* a, const float* b, size_t n) {
#define VM_CALL(OP) \
  for (size_t i = 0; i < n; ++i) d[i] = fbin<OP>(a[i], b[i])
  VM_BINARY_CASES(op, VM_CALL)
#undef VM_CALL
}

VM_HOT void f32_binary_s(int op, float* d, const float* a, float s, size_t n) {
#define VM_CALL(OP) \
  for (size_t i = 0; i < n; ++i) d[i] = fbin<OP>(a[i], s)
  VM_BINARY_CASES(op, VM_CALL)
#undef VM_CALL
}

VM_HOT void i32_binary(int op, uint32_t* d, const uint32_t* a, const uint32_t* b, size_t n) {
#define VM_CALL(OP) \
  for (size_t i = 0; i < n; ++i) d[i] = ibin<OP>(a[i], b[i])
  VM_BINARY_CASES(op, VM_CALL)
#undef VM_CALL
}

VM_HOT void i32_binary_s(int op, uint32_t* d, const uint32_t* a, uint32_t s, size_t n) {
#define VM_CALL(OP) \
  for (size_t i = 0; i < n; ++i) d[i] = ibin<OP>(a[i], s)
  VM_BINARY_CASES(op, VM_CALL)
#undef VM_CALL
}

VM_HOT void f32_unary(int op, float* d, const float* a, size_t n) {
#define VM_CALL(OP) \
  for (size_t i = 0; i < n; ++i) d[i] = funary<OP>(a[i])
  switch (op) {
    case PYPTO_EXP:
      if (exp_f32_avx512_available()) return exp_f32_avx512(d, a, n);  // same bits, faster
      VM_CALL(PYPTO_EXP);
      break;
    case PYPTO_LOG:
      VM_CALL(PYPTO_LOG);
      break;
    case PYPTO_SQRT:
      VM_CALL(PYPTO_SQRT);
      break;
    case PYPTO_RECIP:
      VM_CALL(PYPTO_RECIP);
      break;
    case PYPTO_RELU:
      VM_CALL(PYPTO_RELU);
      break;
    case PYPTO_NEG:
      VM_CALL(PYPTO_NEG);
      break;
    default:
      VM_CALL(PYPTO_ABS);
      break;
  }
#undef VM_CALL
}

VM_HOT void i32_unary(int op, uint32_t* d, const uint32_t* a, size_t n) {
#define VM_CALL(OP) \
  for (size_t i = 0; i < n; ++i) d[i] = iunary<OP>(a[i])
  switch (op) {
    case PYPTO_RELU:
      VM_CALL(PYPTO_RELU);
      break;
    case PYPTO_NEG:
      VM_CALL(PYPTO_NEG);
      break;
    default:
      VM_CALL(PYPTO_ABS);
      break;
  }
#undef VM_CALL
}

// neg/abs/relu on fp16/bf16 need no arithmetic: they are exact on the bit patterns.
VM_HOT void h16_bits_unary(int op, bool bf, uint16_t* d, const uint16_t* a, size_t n) {
  const uint32_t inf = bf ? 0x7f80u : 0x7c00u;  // magnitudes above this are NaN
  if (op == PYPTO_NEG) {
    for (size_t i = 0; i < n; ++i) d[i] = uint16_t(a[i] ^ 0x8000u);
  } else if (op == PYPTO_ABS) {
    for (size_t i = 0; i < n; ++i) d[i] = uint16_t(a[i] & 0x7fffu);
  } else {  // relu: negative numbers and -0 become +0, NaN stays
    for (size_t i = 0; i < n; ++i) {
      uint32_t h = a[i];
      d[i] = (h & 0x8000u) == 0 || (h & 0x7fffu) > inf ? uint16_t(h) : uint16_t(0);
    }
  }
}

VM_HOT void h16_decode(bool bf, float* out, const uint16_t* in, size_t n) {
  if (bf) {
    for (size_t i = 0; i < n; ++i) out[i] = bf16_to_f32(in[i]);
  } else {
    for (size_t i = 0; i < n; ++i) out[i] = f16_to_f32(in[i]);
  }
}

// Staged through uint32 (see f32_to_f16_u32): about twice as fast as narrowing in the loop.
VM_HOT void h16_encode(bool bf, uint16_t* out, const float* in, size_t n) {
  uint32_t buf[kChunk];
  for (size_t i0 = 0; i0 < n; i0 += kChunk) {
    size_t m = std::min(kChunk, n - i0);
    if (bf) {
      for (size_t i = 0; i < m; ++i) buf[i] = f32_to_bf16_u32(in[i0 + i]);
    } else {
      for (size_t i = 0; i < m; ++i) buf[i] = f32_to_f16_u32(in[i0 + i]);
    }
    for (size_t i = 0; i < m; ++i) out[i0 + i] = uint16_t(buf[i]);
  }
}

// One reduction block: kLanes interleaved accumulators (they vectorise without reassociating
// anything), then a pairwise tree over the lanes.
template <int OP>
VM_INLINE float block_reduce(const float* a, size_t n) {
  constexpr int kOp = OP == PYPTO_RSUM ? PYPTO_ADD : OP == PYPTO_RMAX ? PYPTO_MAX : PYPTO_MIN;
  float acc[kLanes];
  const float init = OP == PYPTO_RSUM ? 0.0f : OP == PYPTO_RMAX ? -kInf : kInf;
  for (size_t j = 0; j < kLanes; ++j) acc[j] = init;
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (size_t j = 0; j < kLanes; ++j) acc[j] = fbin<kOp>(acc[j], a[i + j]);
  for (size_t j = 0; i + j < n; ++j) acc[j] = fbin<kOp>(acc[j], a[i + j]);
  for (size_t w = kLanes / 2; w > 0; w /= 2)
    for (size_t j = 0; j < w; ++j) acc[j] = fbin<kOp>(acc[j], acc[j + w]);
  return acc[0];
}

VM_HOT float f32_block(int op, const float* a, size_t n) {
  if (op == PYPTO_RSUM) return block_reduce<PYPTO_RSUM>(a, n);
  if (op == PYPTO_RMAX) return block_reduce<PYPTO_RMAX>(a, n);
  return block_reduce<PYPTO_RMIN>(a, n);
}

VM_HOT int32_t i32_reduce(int op, const int32_t* a, size_t n) {
  if (op == PYPTO_RSUM) {
    uint32_t s = 0;
    for (size_t i = 0; i < n; ++i) s += uint32_t(a[i]);
    return int32_t(s);
  }
  int32_t m = a[0];
  if (op == PYPTO_RMAX) {
    for (size_t i = 1; i < n; ++i) m = a[i] > m ? a[i] : m;
  } else {
    for (size_t i = 1; i < n; ++i) m = a[i] < m ? a[i] : m;
  }
  return m;
}

// ---- conversion stages -----------------------------------------------------------------------

template <class T>
VM_INLINE void round_sat(int mode, void* dst, const float* in, size_t n) {
  T* d = static_cast<T*>(dst);
#define VM_CALL(M) \
  for (size_t i = 0; i < n; ++i) d[i] = sat_from_float<T>(round_int<M>(in[i]))
  switch (mode) {
    case PYPTO_ROUND_RINT:
      VM_CALL(PYPTO_ROUND_RINT);
      break;
    case PYPTO_ROUND_TRUNC:
      VM_CALL(PYPTO_ROUND_TRUNC);
      break;
    case PYPTO_ROUND_FLOOR:
      VM_CALL(PYPTO_ROUND_FLOOR);
      break;
    default:
      VM_CALL(PYPTO_ROUND_CEIL);
      break;
  }
#undef VM_CALL
}

// Floats -> an integer dtype (round by mode, then saturate), or -> bool (x != 0).
VM_HOT void f32_to_int(int dt, int mode, void* dst, const float* in, size_t n) {
  switch (dt) {
    case PYPTO_INT32:
      round_sat<int32_t>(mode, dst, in, n);
      break;
    case PYPTO_INT8:
      round_sat<int8_t>(mode, dst, in, n);
      break;
    case PYPTO_INT16:
      round_sat<int16_t>(mode, dst, in, n);
      break;
    case PYPTO_INT64:
      round_sat<int64_t>(mode, dst, in, n);
      break;
    case PYPTO_UINT8:
      round_sat<uint8_t>(mode, dst, in, n);
      break;
    default: {
      uint8_t* d = static_cast<uint8_t*>(dst);
      for (size_t i = 0; i < n; ++i) d[i] = in[i] != 0.0f;
    }
  }
}

template <class T>
VM_INLINE void widen(int64_t* out, const void* src, size_t n) {
  const T* s = static_cast<const T*>(src);
  for (size_t i = 0; i < n; ++i) out[i] = int64_t(s[i]);
}

VM_HOT void int_to_i64(int dt, int64_t* out, const void* src, size_t n) {
  switch (dt) {
    case PYPTO_INT32:
      widen<int32_t>(out, src, n);
      break;
    case PYPTO_INT8:
      widen<int8_t>(out, src, n);
      break;
    case PYPTO_INT16:
      widen<int16_t>(out, src, n);
      break;
    case PYPTO_UINT8:
      widen<uint8_t>(out, src, n);
      break;
    case PYPTO_BOOL: {
      const uint8_t* s = static_cast<const uint8_t*>(src);
      for (size_t i = 0; i < n; ++i) out[i] = s[i] != 0;
      break;
    }
    default:
      std::memmove(out, src, n * sizeof(int64_t));
  }
}

// Keep the low bits (two's complement wrap), as numpy's astype does.
template <class U>
VM_INLINE void narrow(void* dst, const int64_t* in, size_t n) {
  U* d = static_cast<U*>(dst);
  for (size_t i = 0; i < n; ++i) d[i] = U(uint64_t(in[i]));
}

VM_HOT void i64_to_dtype(int dt, void* dst, const int64_t* in, size_t n) {
  switch (dt) {
    case PYPTO_INT32:
      narrow<uint32_t>(dst, in, n);
      break;
    case PYPTO_INT8:
    case PYPTO_UINT8:
      narrow<uint8_t>(dst, in, n);
      break;
    case PYPTO_INT16:
      narrow<uint16_t>(dst, in, n);
      break;
    case PYPTO_INT64:
      std::memmove(dst, in, n * sizeof(int64_t));
      break;
    case PYPTO_FP32: {
      float* d = static_cast<float*>(dst);
      for (size_t i = 0; i < n; ++i) d[i] = float(in[i]);  // correctly rounded
      break;
    }
    case PYPTO_FP16:
    case PYPTO_BF16: {
      // Round-to-odd to fp32 first so the second rounding is the only one that counts.
      uint16_t* d = static_cast<uint16_t*>(dst);
      bool bf = dt == PYPTO_BF16;
      for (size_t i = 0; i < n; ++i) {
        float f = i64_to_f32_odd(in[i]);
        d[i] = bf ? f32_to_bf16(f) : f32_to_f16(f);
      }
      break;
    }
    default: {
      uint8_t* d = static_cast<uint8_t*>(dst);
      for (size_t i = 0; i < n; ++i) d[i] = in[i] != 0;
    }
  }
}

VM_HOT void i32_to_f32(float* d, const int32_t* s, size_t n) {
  for (size_t i = 0; i < n; ++i) d[i] = float(s[i]);
}

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
  return op == PYPTO_RMAX ? fbin<PYPTO_MAX>(x, y) : fbin<PYPTO_MIN>(x, y);
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

void accumulate(int dtype, void* dst, const void* src, size_t n) {
  if (!binary_supported(PYPTO_ADD, dtype)) unsupported("accumulate", PYPTO_ADD, dtype);
  binary(PYPTO_ADD, dtype, dst, dst, src, n);
}

}  // namespace pypto::vm
