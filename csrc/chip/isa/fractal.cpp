// Whole-fractal moves for the cube's 2-byte layouts (see fractal.hpp). The relayout into L0B
// and the widening of every mad's operands run once per fractal, so a scalar element loop
// here costs more than the rest of the move; the register forms do a fractal in ~40
// instructions. Picked once per process: AVX2 for the transpose, AVX-512F or F16C for the
// widening (vcvtph2ps, one or two per row), portable loops otherwise.
#include "chip/isa/fractal.hpp"

#include <cstring>
#include <stdexcept>

#include "chip/isa/dtype.hpp"

#if defined(__x86_64__) && defined(__GNUC__)
#define PYPTO_FRACTAL_X86 1
#include <immintrin.h>
#endif

namespace pypto::isa {
namespace {

void transpose_portable(uint16_t* dst, int64_t dp, const uint16_t* src, int64_t sp) {
  for (int64_t c = 0; c < 16; ++c)
    for (int64_t r = 0; r < 16; ++r) dst[c * dp + r] = src[r * sp + c];
}

bool widen_portable(float* dst, int64_t dp, const uint16_t* src, int64_t sp) {
  unsigned nonfinite = 0;
  for (int64_t r = 0; r < 16; ++r) {
    for (int64_t c = 0; c < 16; ++c) {
      const uint16_t h = src[r * sp + c];
      nonfinite |= (h & 0x7c00u) == 0x7c00u;
      dst[r * dp + c] = f16_to_f32(h);
    }
  }
  return nonfinite == 0;
}

bool widen_transposed_portable(float* dst, int64_t dp, const uint16_t* src, int64_t sp) {
  uint16_t t[256];
  transpose_portable(t, 16, src, sp);
  return widen_portable(dst, dp, t, 16);
}

// bf16 -> fp32 moves the bits up 16 (exact for every value, NaN payloads kept). A value keeps
// every product with another exact in fp32 when it is zero or its magnitude lies in
// [2^-63, 2^63): biased exponent 64..189, so a product lies in [2^-126, 2^126).
constexpr uint32_t kBf16LowExp = 64, kBf16ExpSpan = 125;

bool bf16_exact_factor(uint32_t w) {
  return (w & 0x7fffffffu) == 0 || ((w >> 23) & 0xffu) - kBf16LowExp <= kBf16ExpSpan;
}

bool widen_bf16_portable(float* dst, int64_t dp, const uint16_t* src, int64_t sp) {
  bool exact = true;
  for (int64_t r = 0; r < 16; ++r) {
    for (int64_t c = 0; c < 16; ++c) {
      const uint32_t w = uint32_t{src[r * sp + c]} << 16;
      exact = exact && bf16_exact_factor(w);
      std::memcpy(dst + r * dp + c, &w, 4);
    }
  }
  return exact;
}

bool widen_bf16_transposed_portable(float* dst, int64_t dp, const uint16_t* src, int64_t sp) {
  uint16_t t[256];
  transpose_portable(t, 16, src, sp);
  return widen_bf16_portable(dst, dp, t, 16);
}

#ifdef PYPTO_FRACTAL_X86
// Two 8 x 8 transposes side by side: each register holds a row of the top half (rows 0-7) in
// its low 128-bit lane and the same row of the bottom half (rows 8-15) in its high lane, loaded
// straight there, so three unpack stages (16-, 32-, 64-bit) inside the lanes leave output row j
// — column j of rows 0-7, then of rows 8-15 — whole in one register, with no cross-lane
// shuffle: out[j] = column c0 + j of the fractal, for c0 = 0 or 8. 24 unpacks and 8 lane
// inserts a half, against the 64 unpacks and 16 lane permutes of a 16-lane-row form: ~15%
// faster a fractal (a 32 KiB tile's fractals, best of 7: in cache 50 -> 43 ns, from uncached
// rows 172 -> 158 ns).
__attribute__((target("avx2"), always_inline)) inline void columns8_avx2(__m256i out[8],
                                                                         const uint16_t* src,
                                                                         int64_t sp) {
  __m256i a[8], t[8];
  for (int i = 0; i < 8; ++i) {
    const __m128i top = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i * sp));
    const __m128i bottom = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + (i + 8) * sp));
    a[i] = _mm256_inserti128_si256(_mm256_castsi128_si256(top), bottom, 1);
  }
  for (int i = 0; i < 8; i += 2) {  // t[i]: cols 0-3 of rows i, i+1; t[i+1]: cols 4-7
    t[i] = _mm256_unpacklo_epi16(a[i], a[i + 1]);
    t[i + 1] = _mm256_unpackhi_epi16(a[i], a[i + 1]);
  }
  for (int g = 0; g < 8; g += 4) {                         // rows g..g+3, two columns a register
    a[g] = _mm256_unpacklo_epi32(t[g], t[g + 2]);          // cols 0, 1
    a[g + 1] = _mm256_unpackhi_epi32(t[g], t[g + 2]);      // cols 2, 3
    a[g + 2] = _mm256_unpacklo_epi32(t[g + 1], t[g + 3]);  // cols 4, 5
    a[g + 3] = _mm256_unpackhi_epi32(t[g + 1], t[g + 3]);  // cols 6, 7
  }
  for (int q = 0; q < 4; ++q) {  // rows 0-3 with rows 4-7: column 2q, then 2q + 1
    out[2 * q] = _mm256_unpacklo_epi64(a[q], a[q + 4]);
    out[2 * q + 1] = _mm256_unpackhi_epi64(a[q], a[q + 4]);
  }
}

__attribute__((target("avx2"))) void transpose_avx2(uint16_t* dst, int64_t dp, const uint16_t* src,
                                                    int64_t sp) {
  for (int c0 = 0; c0 < 16; c0 += 8) {
    __m256i rows[8];
    columns8_avx2(rows, src + c0, sp);
    for (int j = 0; j < 8; ++j)
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + (c0 + j) * dp), rows[j]);
  }
}

// vcvtph2ps is exact for every finite fp16, subnormals included (it ignores MXCSR.DAZ); it
// quiets a signalling NaN, hence the inf/NaN answer.
__attribute__((target("avx512f"), always_inline)) inline __mmask16 widen_row_avx512(float* dst,
                                                                                    __m256i h) {
  const __m512i exp = _mm512_set1_epi32(0x7f800000);
  const __m512 f = _mm512_cvtph_ps(h);
  _mm512_storeu_ps(dst, f);
  return _mm512_cmpeq_epi32_mask(_mm512_and_si512(_mm512_castps_si512(f), exp), exp);
}

// A form's loops over the 16 rows (or, transposed, the 16 columns) of a fractal, with `Row`
// widening 16 elements and flagging the lanes the mad's fused kernels cannot take: true when
// none is flagged.
using Row512 = __mmask16 (*)(float*, __m256i);

template <Row512 Row>
__attribute__((target("avx2,avx512f"))) bool rows_avx512(float* dst, int64_t dp,
                                                         const uint16_t* src, int64_t sp) {
  __mmask16 flagged = 0;
  for (int64_t r = 0; r < 16; ++r) {
    flagged |=
        Row(dst + r * dp, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + r * sp)));
  }
  return flagged == 0;
}

// The transpose's rows widened from the registers: one pass, no transposed copy in memory.
template <Row512 Row>
__attribute__((target("avx2,avx512f"))) bool columns_avx512(float* dst, int64_t dp,
                                                            const uint16_t* src, int64_t sp) {
  __mmask16 flagged = 0;
  for (int c0 = 0; c0 < 16; c0 += 8) {
    __m256i rows[8];
    columns8_avx2(rows, src + c0, sp);
    for (int j = 0; j < 8; ++j) flagged |= Row(dst + (c0 + j) * dp, rows[j]);
  }
  return flagged == 0;
}

// A bf16 row moved up 16 bits; the lanes whose value is not an exact factor (bf16_exact_factor).
__attribute__((target("avx512f"), always_inline)) inline __mmask16 widen_bf16_row_avx512(
    float* dst, __m256i h) {
  const __m512i w = _mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16);
  _mm512_storeu_si512(dst, w);
  const __m512i e = _mm512_and_si512(_mm512_srli_epi32(w, 23), _mm512_set1_epi32(0xff));
  const __mmask16 outside = _mm512_cmpgt_epu32_mask(
      _mm512_sub_epi32(e, _mm512_set1_epi32(kBf16LowExp)), _mm512_set1_epi32(kBf16ExpSpan));
  return _mm512_mask_test_epi32_mask(outside, w, _mm512_set1_epi32(0x7fffffff));  // and not 0
}

// Eight bf16 values moved up 16 bits; all-ones lanes where the value is not an exact factor
// (AVX2 compares signed: the exponent outside 64..189, and the magnitude not 0).
__attribute__((target("avx2"), always_inline)) inline __m256i widen_bf16_half_avx2(float* dst,
                                                                                   __m128i h) {
  const __m256i w = _mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst), w);
  const __m256i e = _mm256_and_si256(_mm256_srli_epi32(w, 23), _mm256_set1_epi32(0xff));
  const __m256i outside =
      _mm256_or_si256(_mm256_cmpgt_epi32(_mm256_set1_epi32(kBf16LowExp), e),
                      _mm256_cmpgt_epi32(e, _mm256_set1_epi32(kBf16LowExp + kBf16ExpSpan)));
  const __m256i zero = _mm256_cmpeq_epi32(_mm256_and_si256(w, _mm256_set1_epi32(0x7fffffff)),
                                          _mm256_setzero_si256());
  return _mm256_andnot_si256(zero, outside);
}

__attribute__((target("avx2,f16c"), always_inline)) inline __m256i widen_half_f16c(float* dst,
                                                                                   __m128i h) {
  const __m256i exp = _mm256_set1_epi32(0x7f800000);
  const __m256 f = _mm256_cvtph_ps(h);
  _mm256_storeu_ps(dst, f);
  return _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_castps_si256(f), exp), exp);
}

// The same loops for 8-lane rows (two a fractal row), `Half` flagging lanes with all ones.
using Half256 = __m256i (*)(float*, __m128i);

template <Half256 Half>
__attribute__((target("avx2,f16c"))) bool rows_avx2(float* dst, int64_t dp, const uint16_t* src,
                                                    int64_t sp) {
  __m256i flagged = _mm256_setzero_si256();
  for (int64_t r = 0; r < 16; ++r) {
    for (int64_t h = 0; h < 16; h += 8) {
      const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + r * sp + h));
      flagged = _mm256_or_si256(flagged, Half(dst + r * dp + h, x));
    }
  }
  return _mm256_testz_si256(flagged, flagged) != 0;
}

template <Half256 Half>
__attribute__((target("avx2,f16c"))) bool columns_avx2(float* dst, int64_t dp, const uint16_t* src,
                                                       int64_t sp) {
  __m256i flagged = _mm256_setzero_si256();
  for (int c0 = 0; c0 < 16; c0 += 8) {
    __m256i rows[8];
    columns8_avx2(rows, src + c0, sp);
    for (int j = 0; j < 8; ++j) {
      float* o = dst + (c0 + j) * dp;
      flagged = _mm256_or_si256(flagged, Half(o, _mm256_castsi256_si128(rows[j])));
      flagged = _mm256_or_si256(flagged, Half(o + 8, _mm256_extracti128_si256(rows[j], 1)));
    }
  }
  return _mm256_testz_si256(flagged, flagged) != 0;
}

#endif

using Transpose = void (*)(uint16_t*, int64_t, const uint16_t*, int64_t);
using Widen = bool (*)(float*, int64_t, const uint16_t*, int64_t);

struct Form {
  const char* name;
  Transpose transpose;
  Widen widen, widen_transposed;      // fp16
  Widen widen_bf16, bf16_transposed;  // bf16
  bool (*runs_here)();
};

// Best first. The transpose needs only AVX2 (one 16-element row per register).
const Form kForms[] = {
#ifdef PYPTO_FRACTAL_X86
    {"avx512f", transpose_avx2, rows_avx512<widen_row_avx512>, columns_avx512<widen_row_avx512>,
     rows_avx512<widen_bf16_row_avx512>, columns_avx512<widen_bf16_row_avx512>,
     [] { return __builtin_cpu_supports("avx512f") != 0 && __builtin_cpu_supports("avx2") != 0; }},
    {"f16c", transpose_avx2, rows_avx2<widen_half_f16c>, columns_avx2<widen_half_f16c>,
     rows_avx2<widen_bf16_half_avx2>, columns_avx2<widen_bf16_half_avx2>,
     [] { return __builtin_cpu_supports("avx2") != 0 && __builtin_cpu_supports("f16c") != 0; }},
#endif
    {"portable", transpose_portable, widen_portable, widen_transposed_portable, widen_bf16_portable,
     widen_bf16_transposed_portable, [] { return true; }},
};

const Form& pick() {
  for (const Form& f : kForms)
    if (f.runs_here()) return f;
  return kForms[sizeof(kForms) / sizeof(kForms[0]) - 1];
}

const Form& form() {
  static const Form& f = pick();
  return f;
}

}  // namespace

void transpose16_u16(uint16_t* dst, int64_t dst_pitch, const uint16_t* src, int64_t src_pitch) {
  form().transpose(dst, dst_pitch, src, src_pitch);
}

bool widen_f16_block(float* dst, int64_t dst_pitch, const uint16_t* src, int64_t src_pitch) {
  return form().widen(dst, dst_pitch, src, src_pitch);
}

bool widen_f16_block_transposed(float* dst, int64_t dst_pitch, const uint16_t* src,
                                int64_t src_pitch) {
  return form().widen_transposed(dst, dst_pitch, src, src_pitch);
}

bool widen_bf16_block(float* dst, int64_t dst_pitch, const uint16_t* src, int64_t src_pitch) {
  return form().widen_bf16(dst, dst_pitch, src, src_pitch);
}

bool widen_bf16_block_transposed(float* dst, int64_t dst_pitch, const uint16_t* src,
                                 int64_t src_pitch) {
  return form().bf16_transposed(dst, dst_pitch, src, src_pitch);
}

std::vector<std::string> fractal_forms() {
  std::vector<std::string> out;
  for (const Form& f : kForms)
    if (f.runs_here()) out.emplace_back(f.name);
  return out;
}

std::pair<bool, bool> fractal_form(const std::string& name, bool bf16, const uint16_t* src,
                                   uint16_t* transposed, float* widened,
                                   float* widened_transposed) {
  for (const Form& f : kForms) {
    if (name == f.name && f.runs_here()) {
      f.transpose(transposed, 16, src, 16);
      const Widen w = bf16 ? f.widen_bf16 : f.widen,
                  wt = bf16 ? f.bf16_transposed : f.widen_transposed;
      return {w(widened, 16, src, 16), wt(widened_transposed, 16, src, 16)};
    }
  }
  throw std::invalid_argument("no fractal form '" + name + "' on this CPU");
}

}  // namespace pypto::isa
