// 16 x 16 blocks of 2-byte elements — the fractal of the L0A/L0B layouts for fp16/bf16 — moved
// as whole blocks: transposed (the nZ layout of L0B) and widened to fp32 (the cube's operands).
// AVX2 / AVX-512 forms are picked at run time; every form gives the same bits.
#pragma once
#include <cstdint>

namespace pypto::isa {

// dst[c][r] = src[r][c] for r, c < 16; pitches in elements.
void transpose16_u16(uint16_t* dst, int64_t dst_pitch, const uint16_t* src, int64_t src_pitch);

// dst[r][c] = fp32(src[r][c]) for r, c < 16 (fp16 -> fp32 is exact); pitches in elements.
// False when an element is inf or NaN: then dst holds unspecified values and the caller converts
// through vm::convert, whose NaN payloads (a signalling NaN stays signalling) the SIMD
// conversion does not keep.
bool widen_f16_block(float* dst, int64_t dst_pitch, const uint16_t* src, int64_t src_pitch);

}  // namespace pypto::isa
