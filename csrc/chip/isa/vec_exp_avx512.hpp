// AVX-512 loops (vec_exp_avx512.cpp) giving exactly vec_math's bits: fp32 exp, and fp32 row
// reductions.
#pragma once
#include <cstddef>

namespace pypto::vm {

// The constants of exp_f32, shared so that the scalar and the AVX-512 forms cannot drift.
namespace exp_coef {
constexpr float kLo = -104.0f, kHi = 88.8f;  // clamp: outside, the result is 0 or inf anyway
constexpr float kMagic = 0x1.8p23f;          // x + magic leaves round(x) in the low bits
constexpr float kLog2e = 1.44269504f;
constexpr float kLn2Hi = -0.693359375f, kLn2Lo = 2.12194440e-4f;  // -ln2 = hi + lo, hi exact
constexpr float kP0 = 1.38146128e-3f, kP1 = 8.36871006e-3f, kP2 = 4.16683890e-2f;
constexpr float kP3 = 1.66665211e-1f, kP4 = 4.99999940e-1f;
}  // namespace exp_coef

// True when the build has the AVX-512 loop and this CPU can run it (checked once).
bool exp_f32_avx512_available();

// d[i] = exp_f32(a[i]) for i < n (d may alias a exactly). Call only when available.
void exp_f32_avx512(float* d, const float* a, size_t n);

// d[r * dp] = the reduction (pypto_reduce_op) of row a[r * ap : r * ap + n] for r < rows, in
// reduce's order and bits for a row of n <= 2048 (one block: 64 interleaved lanes, then the
// pairwise tree over them). Call only when exp_f32_avx512_available().
void reduce_rows_f32_avx512(int op, float* d, size_t dp, const float* a, size_t ap, size_t rows,
                            size_t n);

}  // namespace pypto::vm
