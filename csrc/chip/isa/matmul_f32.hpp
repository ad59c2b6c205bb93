// The cube's arithmetic on fp32 operands: a blocked matmul whose bits never depend on the CPU.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace pypto::vm {

// C[m, n] = (C +) A[m, k] x B[k, n], all row-major fp32 (C with row pitch ldc). Each output is
// summed from 0 in k order with the products rounded before the adds (no FMA), then added to
// C when accumulating — the same bits on every CPU; AVX-512 / AVX2 forms are picked at run time.
// `exact_products`: the caller vouches that every product A[i, kk] * B[kk, j] is exact in fp32
// (true when both were widened from finite fp16); the kernel may then fuse multiply and add,
// which gives the same bits faster.
void matmul_f32(const float* A, const float* B, float* C, int64_t ldc, int64_t m, int64_t k,
                int64_t n, bool accumulate, bool exact_products = false);

// The forms this CPU can run, best first ("avx512f", "avx2", "baseline"), and one form by
// name — for the test that checks every form gives the same bits.
std::vector<std::string> matmul_f32_forms();
void matmul_f32_form(const std::string& form, const float* A, const float* B, float* C, int64_t ldc,
                     int64_t m, int64_t k, int64_t n, bool accumulate, bool exact_products = false);

}  // namespace pypto::vm
