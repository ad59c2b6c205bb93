// Whole-fractal moves for the cube's 2-byte layouts (see fractal.hpp). The relayout into L0B
// and the widening of every mad's operands run once per fractal, so a scalar element loop
// here costs more than the rest of the move; the register forms do a fractal in ~40
// instructions. Picked once per process: AVX2 for the transpose, AVX-512F or F16C for the
// widening (vcvtph2ps, one or two per row), portable loops otherwise.
#include "chip/isa/fractal.hpp"

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

#ifdef PYPTO_FRACTAL_X86
// Rows of 16 lanes: pairs of rows interleave 16-bit, then 32-bit, then 64-bit lanes inside each
// 128-bit half, which leaves column j (j < 8) in the low halves and column j + 8 in the high
// halves of the rows-0..7 and rows-8..15 results; the last step joins the halves.
__attribute__((target("avx2"))) void transpose_avx2(uint16_t* dst, int64_t dp, const uint16_t* src,
                                                    int64_t sp) {
  __m256i r[16], t[16];
  for (int i = 0; i < 16; ++i)
    r[i] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i * sp));
  for (int i = 0; i < 16; i += 2) {  // t[i]: cols 0-3 | 8-11 of rows i, i+1; t[i+1]: 4-7 | 12-15
    t[i] = _mm256_unpacklo_epi16(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_epi16(r[i], r[i + 1]);
  }
  for (int g = 0; g < 16; g += 4) {                        // rows g..g+3, two columns per register
    r[g] = _mm256_unpacklo_epi32(t[g], t[g + 2]);          // cols 0, 1 | 8, 9
    r[g + 1] = _mm256_unpackhi_epi32(t[g], t[g + 2]);      // cols 2, 3 | 10, 11
    r[g + 2] = _mm256_unpacklo_epi32(t[g + 1], t[g + 3]);  // cols 4, 5 | 12, 13
    r[g + 3] = _mm256_unpackhi_epi32(t[g + 1], t[g + 3]);  // cols 6, 7 | 14, 15
  }
  for (int h = 0; h < 2; ++h) {  // rows 8h..8h+7: t[8h + j] = col j | col j + 8
    const __m256i* a = r + 8 * h;
    for (int q = 0; q < 4; ++q) {
      t[8 * h + 2 * q] = _mm256_unpacklo_epi64(a[q], a[q + 4]);
      t[8 * h + 2 * q + 1] = _mm256_unpackhi_epi64(a[q], a[q + 4]);
    }
  }
  for (int j = 0; j < 8; ++j) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + j * dp),
                        _mm256_permute2x128_si256(t[j], t[8 + j], 0x20));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + (j + 8) * dp),
                        _mm256_permute2x128_si256(t[j], t[8 + j], 0x31));
  }
}

// vcvtph2ps is exact for every finite fp16, subnormals included (it ignores MXCSR.DAZ); it
// quiets a signalling NaN, hence the inf/NaN answer.
__attribute__((target("avx512f"))) bool widen_avx512(float* dst, int64_t dp, const uint16_t* src,
                                                     int64_t sp) {
  const __m512i exp = _mm512_set1_epi32(0x7f800000);
  __mmask16 nonfinite = 0;
  for (int64_t r = 0; r < 16; ++r) {
    const __m512 f =
        _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + r * sp)));
    nonfinite |= _mm512_cmpeq_epi32_mask(_mm512_and_si512(_mm512_castps_si512(f), exp), exp);
    _mm512_storeu_ps(dst + r * dp, f);
  }
  return nonfinite == 0;
}

__attribute__((target("avx2,f16c"))) bool widen_f16c(float* dst, int64_t dp, const uint16_t* src,
                                                     int64_t sp) {
  const __m256i exp = _mm256_set1_epi32(0x7f800000);
  __m256i nonfinite = _mm256_setzero_si256();
  for (int64_t r = 0; r < 16; ++r) {
    for (int64_t h = 0; h < 16; h += 8) {
      const __m256 f =
          _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + r * sp + h)));
      const __m256i e = _mm256_and_si256(_mm256_castps_si256(f), exp);
      nonfinite = _mm256_or_si256(nonfinite, _mm256_cmpeq_epi32(e, exp));
      _mm256_storeu_ps(dst + r * dp + h, f);
    }
  }
  return _mm256_testz_si256(nonfinite, nonfinite) != 0;
}
#endif

using Transpose = void (*)(uint16_t*, int64_t, const uint16_t*, int64_t);
using Widen = bool (*)(float*, int64_t, const uint16_t*, int64_t);

struct Form {
  const char* name;
  Transpose transpose;
  Widen widen;
  bool (*runs_here)();
};

// Best first. The transpose needs only AVX2 (one 16-element row per register).
const Form kForms[] = {
#ifdef PYPTO_FRACTAL_X86
    {"avx512f", transpose_avx2, widen_avx512,
     [] { return __builtin_cpu_supports("avx512f") != 0 && __builtin_cpu_supports("avx2") != 0; }},
    {"f16c", transpose_avx2, widen_f16c,
     [] { return __builtin_cpu_supports("avx2") != 0 && __builtin_cpu_supports("f16c") != 0; }},
#endif
    {"portable", transpose_portable, widen_portable, [] { return true; }},
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

std::vector<std::string> fractal_forms() {
  std::vector<std::string> out;
  for (const Form& f : kForms)
    if (f.runs_here()) out.emplace_back(f.name);
  return out;
}

bool fractal_form(const std::string& name, const uint16_t* src, uint16_t* transposed,
                  float* widened) {
  for (const Form& f : kForms) {
    if (name == f.name && f.runs_here()) {
      f.transpose(transposed, 16, src, 16);
      return f.widen(widened, 16, src, 16);
    }
  }
  throw std::invalid_argument("no fractal form '" + name + "' on this CPU");
}

}  // namespace pypto::isa
