// Numerics of the vector unit: element-wise kernels over contiguous spans of n elements.
//
// The ISA layer checks operands (spaces, shapes, dtypes) and then calls these on the valid
// region row by row. They never allocate and never touch the core model. Contract:
//   * dtype / op values are the pypto_dtype / pypto_*_op enums of <pypto/abi.h>.
//   * dst may alias an input exactly (same pointer); partial overlap is not supported.
//   * A call with an unsupported (op, dtype) throws std::invalid_argument; the ISA layer is
//     expected to have asked *_supported first.
//   * fp32 computes in fp32 (not double), so results track numpy float32. fp16/bf16 are widened
//     to fp32, computed, and rounded back RNE (for + - * / sqrt this equals a correctly rounded
//     fp16/bf16 op, as fp32 has at least 2p+2 bits). Float max/min propagate NaN like numpy's
//     float32 maximum/minimum, and like them return b when a == b (max(-0, +0) = +0).
//   * int32 arithmetic wraps (two's complement); int32 division truncates toward zero, x / 0 is
//     defined as 0 and INT32_MIN / -1 wraps to INT32_MIN.
//   * exp/log are our own branch-free fp32 implementations (<= 1.02 ulp from the exact value;
//     numpy's own float32 exp/log are up to 2.5 / 3.8 ulp off). Every other float op is
//     correctly rounded. Results are bit-identical on every machine (x86 AVX-512, AVX2,
//     baseline, aarch64) except for the sign/payload of NaNs created by invalid operations.
//   * The x86 build carries one clone of each hot loop per ISA level (x86-64-v4, v3, baseline),
//     picked at load time. The baseline clone (pre-AVX2 CPUs only) is correct but slow for
//     exp/log (libm fma) and float -> int conversion (libm nearbyint). fp32 exp has its own
//     AVX-512 loop on CPUs that have it (vec_exp_avx512.cpp), bit-identical to the others.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace pypto::vm {

// Which combinations the kernels implement. Binary: add/sub/mul/div/max/min on fp32, fp16,
// bf16, int32. Unary: everything on the three float types; relu/neg/abs on int32; copy on any.
bool binary_supported(int op, int dtype);
bool unary_supported(int op, int dtype);
// Row reductions (sum/max/min) run on the three float types and int32.
bool reduce_supported(int dtype);

// dst = a op b.
void binary(int op, int dtype, void* dst, const void* a, const void* b, size_t n);
// dst = a op s. s is first rounded to dtype (RNE for floats; for int32 truncated toward zero,
// saturated, NaN -> 0), as the scalar register of the device holds a value of that type.
void binary_scalar(int op, int dtype, void* dst, const void* a, double s, size_t n);
// dst = op(a). recip is 1/x correctly rounded; relu(x) = max(x, 0) (NaN stays NaN).
void unary(int op, int dtype, void* dst, const void* a, size_t n);
// dst[i] = v converted to dtype as binary_scalar converts s (any dtype; bool: v != 0).
void fill(int dtype, void* dst, double v, size_t n);

// dst = src converted, for any pair of dtypes. Float -> float: RNE (NaN stays NaN, overflow ->
// inf). Float -> int: round with round_mode (pypto_round_mode), then saturate to the target
// range; NaN -> 0. Int -> float: RNE. Int -> int: wrap (keep the low bits, like numpy astype).
// Anything -> bool: x != 0 (NaN -> true). dst must not overlap src unless it is the same
// pointer and the two dtypes have the same size.
void convert(int dst_dtype, void* dst, int src_dtype, const void* src, size_t n, int round_mode);

// Reduce one row (pypto_reduce_op) on fp32/fp16/bf16/int32, returned as double.
//   Float sum is accumulated in fp32 in a fixed order, the same on every machine: the row is
//   split in halves (at multiples of 64 elements) down to blocks of <= 2048; each block is
//   summed in 64 interleaved lanes (lane j takes elements j, j+64, ...) and the lanes are
//   combined by a pairwise tree. int32 sum wraps like int32 add. Max/min propagate NaN.
//   n == 0 returns the identity: 0, -inf, +inf.
double reduce(int op, int dtype, const void* a, size_t n);

// reduce over fp32 rows (pitches in elements), row r's result into dst[r * dp]: the bits of a
// call per row, in one call.
void reduce_rows_f32(int op, float* dst, size_t dp, const float* a, size_t ap, size_t rows,
                     size_t n);

// The forms of reduce_rows_f32 and of the fp32 -> fp16 cast this CPU runs, the portable one
// last, each run by name (an unknown or unavailable name throws std::invalid_argument; an
// "avx512" row reduction longer than one block runs the portable way, as reduce_rows_f32 does).
// Every form gives the portable one's bits, so a result never depends on the host.
std::vector<std::string> reduce_rows_f32_forms();
void reduce_rows_f32_form(const std::string& form, int op, float* dst, size_t dp, const float* a,
                          size_t ap, size_t rows, size_t n);
std::vector<std::string> fp16_encode_forms();
void fp16_encode_form(const std::string& form, uint16_t* out, const float* in, size_t n);

// binary_scalar over fp32 rows (pitches in elements), row r's scalar s[r * sp]: the bits of a
// call per row, in one call.
void binary_scalar_rows_f32(int op, float* dst, size_t dp, const float* a, size_t ap,
                            const float* s, size_t sp, size_t rows, size_t n);

// dst += src (the atomic-add store). Same dtypes and numerics as binary(PYPTO_ADD, ...).
void accumulate(int dtype, void* dst, const void* src, size_t n);

}  // namespace pypto::vm
