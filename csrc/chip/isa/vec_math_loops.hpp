// Vector-unit numerics, internal: the hot loops over contiguous spans, one clone per x86 ISA
// level each (see VM_HOT in vec_math_elem.hpp), defined in vec_math_loops.cpp.
#pragma once

#include <cstddef>
#include <cstdint>

namespace pypto::vm::detail {

void f32_binary(int op, float* d, const float* a, const float* b, size_t n);
void f32_binary_s(int op, float* d, const float* a, float s, size_t n);
void i32_binary(int op, uint32_t* d, const uint32_t* a, const uint32_t* b, size_t n);
void i32_binary_s(int op, uint32_t* d, const uint32_t* a, uint32_t s, size_t n);
void f32_unary(int op, float* d, const float* a, size_t n);
void i32_unary(int op, uint32_t* d, const uint32_t* a, size_t n);
void h16_bits_unary(int op, bool bf, uint16_t* d, const uint16_t* a, size_t n);
void h16_decode(bool bf, float* out, const uint16_t* in, size_t n);
void h16_encode(bool bf, uint16_t* out, const float* in, size_t n);
void h16_encode_portable(bool bf, uint16_t* out, const float* in, size_t n);  // any CPU
// fp32 -> fp16 with F16C (h16_encode's bits), when this CPU has it (checked once).
bool f16_encode_f16c_available();
void f16_encode_f16c(uint16_t* out, const float* in, size_t n);
float f32_block(int op, const float* a, size_t n);
// d[r][:n] = a[r][:n] op s[r * sp] for r < rows (pitches in elements): one call per tile, as a
// call per row into a clone cost more than a row of a few vectors.
void f32_rows_binary_s(int op, float* d, size_t dp, const float* a, size_t ap, const float* s,
                       size_t sp, size_t rows, size_t n);
int32_t i32_reduce(int op, const int32_t* a, size_t n);
void f32_to_int(int dt, int mode, void* dst, const float* in, size_t n);
void int_to_i64(int dt, int64_t* out, const void* src, size_t n);
void i64_to_dtype(int dt, void* dst, const int64_t* in, size_t n);
void i32_to_f32(float* d, const int32_t* s, size_t n);

}  // namespace pypto::vm::detail
