// Vector-unit numerics: the hot loops (see vec_math_loops.hpp). Each is a switch over the op
// into a straight-line loop of per-element calls, so every case vectorises.
#include "vec_math_loops.hpp"

#include "vec_math_elem.hpp"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

namespace pypto::vm::detail {

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

// d = a OP b, or a OP s, on fp32 or on int32 held in uint32 (see bin).
template <class T>
VM_INLINE void binary_loop(int op, T* d, const T* a, const T* b, size_t n) {
#define VM_CALL(OP) \
  for (size_t i = 0; i < n; ++i) d[i] = bin<OP>(a[i], b[i])
  VM_BINARY_CASES(op, VM_CALL)
#undef VM_CALL
}

template <class T>
VM_INLINE void binary_scalar_loop(int op, T* d, const T* a, T s, size_t n) {
#define VM_CALL(OP) \
  for (size_t i = 0; i < n; ++i) d[i] = bin<OP>(a[i], s)
  VM_BINARY_CASES(op, VM_CALL)
#undef VM_CALL
}

VM_HOT void f32_binary(int op, float* d, const float* a, const float* b, size_t n) {
  binary_loop(op, d, a, b, n);
}

VM_HOT void f32_binary_s(int op, float* d, const float* a, float s, size_t n) {
  binary_scalar_loop(op, d, a, s, n);
}

VM_HOT void f32_rows_binary_s(int op, float* d, size_t dp, const float* a, size_t ap,
                              const float* s, size_t sp, size_t rows, size_t n) {
#define VM_CALL(OP)                                            \
  for (size_t r = 0; r < rows; ++r) {                          \
    float* dr = d + r * dp;                                    \
    const float* ar = a + r * ap;                              \
    const float sr = s[r * sp];                                \
    for (size_t i = 0; i < n; ++i) dr[i] = bin<OP>(ar[i], sr); \
  }
  VM_BINARY_CASES(op, VM_CALL)
#undef VM_CALL
}

VM_HOT void i32_binary(int op, uint32_t* d, const uint32_t* a, const uint32_t* b, size_t n) {
  binary_loop(op, d, a, b, n);
}

VM_HOT void i32_binary_s(int op, uint32_t* d, const uint32_t* a, uint32_t s, size_t n) {
  binary_scalar_loop(op, d, a, s, n);
}

// relu, neg and abs, the unary ops of both fp32 and int32-in-uint32.
template <class T>
VM_INLINE void sign_unary_loop(int op, T* d, const T* a, size_t n) {
#define VM_CALL(OP) \
  for (size_t i = 0; i < n; ++i) d[i] = unary<OP>(a[i])
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

VM_HOT void f32_unary(int op, float* d, const float* a, size_t n) {
#define VM_CALL(OP) \
  for (size_t i = 0; i < n; ++i) d[i] = unary<OP>(a[i])
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
    default:
      sign_unary_loop(op, d, a, n);
      break;
  }
#undef VM_CALL
}

VM_HOT void i32_unary(int op, uint32_t* d, const uint32_t* a, size_t n) {
  sign_unary_loop(op, d, a, n);
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

#if defined(__x86_64__) && defined(__GNUC__)
// vcvtps2ph with round-to-nearest-even in its immediate (MXCSR's rounding mode is not read)
// gives f32_to_f16_u32's bits for every input: overflow to inf, fp16 subnormals correctly
// rounded, fp32 subnormals to a signed zero, and NaN quieted with the payload's top bits kept.
__attribute__((target("avx2,f16c"))) void f16_encode_f16c(uint16_t* out, const float* in,
                                                          size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), h);
  }
  for (; i < n; ++i) out[i] = uint16_t(f32_to_f16_u32(in[i]));
}

bool f16_encode_f16c_available() {
  static const bool ok = __builtin_cpu_supports("f16c") != 0 && __builtin_cpu_supports("avx2") != 0;
  return ok;
}
#else
void f16_encode_f16c(uint16_t* out, const float* in, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = uint16_t(f32_to_f16_u32(in[i]));
}
bool f16_encode_f16c_available() { return false; }
#endif

VM_HOT void h16_encode(bool bf, uint16_t* out, const float* in, size_t n) {
  if (!bf && f16_encode_f16c_available()) return f16_encode_f16c(out, in, n);  // same bits
  h16_encode_portable(bf, out, in, n);
}

// Staged through uint32 (see f32_to_f16_u32): about twice as fast as narrowing in the loop.
VM_HOT void h16_encode_portable(bool bf, uint16_t* out, const float* in, size_t n) {
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

// One level of a reduction's tree: lane j takes lane j + W. A constant trip count over
// disjoint halves, so it compiles to whole-vector operations.
template <int OP, size_t W>
VM_INLINE void tree_level(float* acc) {
  for (size_t j = 0; j < W; ++j) acc[j] = bin<OP>(acc[j], acc[j + W]);
}

// One reduction block: kLanes interleaved accumulators (lane j takes elements j, j + kLanes,
// ... in order: they vectorise without reassociating anything), then a pairwise tree over the
// lanes (lane j takes lane j + w for w = kLanes / 2, ..., 1), one level at a time.
template <int OP>
VM_INLINE float block_reduce(const float* a, size_t n) {
  static_assert(kLanes == 64, "the tree's levels below");
  constexpr int kOp = OP == PYPTO_RSUM ? PYPTO_ADD : OP == PYPTO_RMAX ? PYPTO_MAX : PYPTO_MIN;
  float acc[kLanes];
  const float init = OP == PYPTO_RSUM ? 0.0f : OP == PYPTO_RMAX ? -kInf : kInf;
  for (size_t j = 0; j < kLanes; ++j) acc[j] = init;
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (size_t j = 0; j < kLanes; ++j) acc[j] = bin<kOp>(acc[j], a[i + j]);
  for (size_t j = 0; i + j < n; ++j) acc[j] = bin<kOp>(acc[j], a[i + j]);
  tree_level<kOp, 32>(acc);
  tree_level<kOp, 16>(acc);
  tree_level<kOp, 8>(acc);
  tree_level<kOp, 4>(acc);
  tree_level<kOp, 2>(acc);
  tree_level<kOp, 1>(acc);
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

// Calls f(T()) with T the C type of the integer dtype dt and returns true; false for any other
// dtype. Each call is a separate straight-line loop; f must be an always-inline lambda
// (VM_INLINE_LAMBDA), or its body would be compiled outside the caller's ISA clone.
template <class F>
VM_INLINE bool with_int_type(int dt, F&& f) {
  switch (dt) {
    case PYPTO_INT32:
      f(int32_t());
      return true;
    case PYPTO_INT8:
      f(int8_t());
      return true;
    case PYPTO_INT16:
      f(int16_t());
      return true;
    case PYPTO_INT64:
      f(int64_t());
      return true;
    case PYPTO_UINT8:
      f(uint8_t());
      return true;
    case PYPTO_UINT32:
      f(uint32_t());
      return true;
    default:
      return false;
  }
}

// Floats -> an integer dtype (round by mode, then saturate), or -> bool (x != 0).
VM_HOT void f32_to_int(int dt, int mode, void* dst, const float* in, size_t n) {
  auto to_int = [&](auto t) VM_INLINE_LAMBDA { round_sat<decltype(t)>(mode, dst, in, n); };
  if (!with_int_type(dt, to_int)) {
    uint8_t* d = static_cast<uint8_t*>(dst);
    for (size_t i = 0; i < n; ++i) d[i] = in[i] != 0.0f;
  }
}

template <class T>
VM_INLINE void widen(int64_t* out, const void* src, size_t n) {
  const T* s = static_cast<const T*>(src);
  for (size_t i = 0; i < n; ++i) out[i] = int64_t(s[i]);
}

// An integer dtype or bool -> int64.
VM_HOT void int_to_i64(int dt, int64_t* out, const void* src, size_t n) {
  auto to_i64 = [&](auto t) VM_INLINE_LAMBDA { widen<decltype(t)>(out, src, n); };
  if (!with_int_type(dt, to_i64)) {
    const uint8_t* s = static_cast<const uint8_t*>(src);
    for (size_t i = 0; i < n; ++i) out[i] = s[i] != 0;
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
    case PYPTO_UINT32:
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

}  // namespace pypto::vm::detail
