// fp32 exp with AVX-512 intrinsics: the operations of vec_math's exp_f32, in ~30% fewer
// instructions than GCC's vectorisation of it (the exp of a 16 MiB tensor is the vector
// unit's hottest loop). Two rewrites, both bit-exact:
//   * the clamps are vmaxps/vminps with the bound first: on one NaN operand x86 returns the
//     second, so NaN passes through as it does through exp_f32's selects;
//   * the scaling by 2^k is one vscalefps. exp_f32 multiplies by 2^(k/2) and 2^(k - k/2):
//     the first product is exact (it stays normal for k in [-150, 128]), so the pair rounds
//     once, like vscalefps — both give e * 2^k correctly rounded, subnormals included.
#include "chip/isa/vec_exp_avx512.hpp"

#include <cmath>

#include "pypto/abi.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
// GCC 12 warns about the deliberately undefined pass-through operand inside its own AVX-512
// headers (a known false positive); nothing here is uninitialised.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

namespace pypto::vm {
namespace {

#define VM_AVX512 __attribute__((target("avx512f")))

VM_AVX512 inline __m512 exp16(__m512 x) {
  using namespace exp_coef;
  const __m512 magic = _mm512_set1_ps(kMagic);
  __m512 xc = _mm512_max_ps(_mm512_set1_ps(kLo), x);
  xc = _mm512_min_ps(_mm512_set1_ps(kHi), xc);
  __m512 k = _mm512_sub_ps(_mm512_fmadd_ps(xc, _mm512_set1_ps(kLog2e), magic), magic);
  __m512 r = _mm512_fmadd_ps(k, _mm512_set1_ps(kLn2Hi), xc);
  r = _mm512_fmadd_ps(k, _mm512_set1_ps(kLn2Lo), r);
  __m512 p = _mm512_fmadd_ps(_mm512_set1_ps(kP0), r, _mm512_set1_ps(kP1));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kP2));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kP3));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kP4));
  __m512 e = _mm512_add_ps(_mm512_fmadd_ps(_mm512_mul_ps(r, r), p, r), _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(e, k);
}

// x OP y on 16 lanes, as vec_math's bin: MAX/MIN keep x when it strictly wins or is NaN.
template <int OP>
VM_AVX512 inline __m512 bin16(__m512 x, __m512 y) {
  if constexpr (OP == PYPTO_RSUM) {
    return _mm512_add_ps(x, y);
  } else {
    constexpr int kWins = OP == PYPTO_RMAX ? _CMP_GT_OQ : _CMP_LT_OQ;
    const __mmask16 keep = static_cast<__mmask16>(_mm512_cmp_ps_mask(x, y, kWins) |
                                                  _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q));
    return _mm512_mask_blend_ps(keep, y, x);
  }
}

// One row of n <= 2048 in reduce's block order: lane j (of 64, in four registers) takes
// elements j, j + 64, ...; then lane j takes lane j + w for w = 32, 16, 8, 4, 2, 1.
template <int OP>
VM_AVX512 float reduce_row(const float* a, size_t n) {
  const float init = OP == PYPTO_RSUM ? 0.0f : OP == PYPTO_RMAX ? -HUGE_VALF : HUGE_VALF;
  __m512 v[4];
  for (__m512& x : v) x = _mm512_set1_ps(init);
  size_t i = 0;
  for (; i + 64 <= n; i += 64) {
    for (size_t k = 0; k < 4; ++k) v[k] = bin16<OP>(v[k], _mm512_loadu_ps(a + i + 16 * k));
  }
  for (size_t k = 0; i + 16 * k < n; ++k) {  // the last elements: lanes j < n - i (masked)
    const size_t left = n - i - 16 * k;
    const auto m = static_cast<__mmask16>(left >= 16 ? 0xffffu : (1u << left) - 1);
    v[k] = _mm512_mask_blend_ps(m, v[k], bin16<OP>(v[k], _mm512_maskz_loadu_ps(m, a + i + 16 * k)));
  }
  v[0] = bin16<OP>(v[0], v[2]);  // w = 32
  v[1] = bin16<OP>(v[1], v[3]);
  __m512 x = bin16<OP>(v[0], v[1]);                                       // w = 16
  x = bin16<OP>(x, _mm512_shuffle_f32x4(x, x, _MM_SHUFFLE(1, 0, 3, 2)));  // w = 8
  x = bin16<OP>(x, _mm512_shuffle_f32x4(x, x, _MM_SHUFFLE(0, 0, 0, 1)));  // w = 4
  x = bin16<OP>(x, _mm512_permute_ps(x, _MM_SHUFFLE(0, 0, 3, 2)));        // w = 2
  x = bin16<OP>(x, _mm512_permute_ps(x, _MM_SHUFFLE(0, 0, 0, 1)));        // w = 1
  return _mm512_cvtss_f32(x);
}

template <int OP>
VM_AVX512 void reduce_rows(float* d, size_t dp, const float* a, size_t ap, size_t rows, size_t n) {
  for (size_t r = 0; r < rows; ++r) d[r * dp] = reduce_row<OP>(a + r * ap, n);
}

}  // namespace

VM_AVX512 void reduce_rows_f32_avx512(int op, float* d, size_t dp, const float* a, size_t ap,
                                      size_t rows, size_t n) {
  if (op == PYPTO_RSUM) return reduce_rows<PYPTO_RSUM>(d, dp, a, ap, rows, n);
  if (op == PYPTO_RMAX) return reduce_rows<PYPTO_RMAX>(d, dp, a, ap, rows, n);
  reduce_rows<PYPTO_RMIN>(d, dp, a, ap, rows, n);
}

VM_AVX512 void exp_f32_avx512(float* d, const float* a, size_t n) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(d + i, exp16(_mm512_loadu_ps(a + i)));
  if (i < n) {  // masked lanes are neither read nor written
    const __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1);
    _mm512_mask_storeu_ps(d + i, m, exp16(_mm512_maskz_loadu_ps(m, a + i)));
  }
}

bool exp_f32_avx512_available() {
  static const bool yes = __builtin_cpu_supports("avx512f");
  return yes;
}

}  // namespace pypto::vm

#pragma GCC diagnostic pop

#else  // other compilers and targets use exp_f32's portable loop

namespace pypto::vm {
void exp_f32_avx512(float*, const float*, size_t) {}
void reduce_rows_f32_avx512(int, float*, size_t, const float*, size_t, size_t, size_t) {}
bool exp_f32_avx512_available() { return false; }
}  // namespace pypto::vm

#endif
