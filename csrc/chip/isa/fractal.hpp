// 16 x 16 blocks of 2-byte elements — the fractal of the L0A/L0B layouts for fp16/bf16 — moved
// as whole blocks: transposed (the nZ layout of L0B), widened to fp32 (the cube's operands), or
// both at once.
// AVX2 / AVX-512 forms are picked at run time; every form gives the same bits.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace pypto::isa {

// dst[c][r] = src[r][c] for r, c < 16; pitches in elements.
void transpose16_u16(uint16_t* dst, int64_t dst_pitch, const uint16_t* src, int64_t src_pitch);

// dst[r][c] = fp32(src[r][c]) for r, c < 16 (fp16 -> fp32 is exact); pitches in elements.
// False when an element is inf or NaN: then dst holds unspecified values and the caller converts
// through vm::convert, whose NaN payloads (a signalling NaN stays signalling) the SIMD
// conversion does not keep.
bool widen_f16_block(float* dst, int64_t dst_pitch, const uint16_t* src, int64_t src_pitch);

// dst[c][r] = fp32(src[r][c]) for r, c < 16: the transpose and the widening in one pass (the
// transposed rows are widened from registers, never stored as 2-byte rows). False when an
// element is inf or NaN, as widen_f16_block.
bool widen_f16_block_transposed(float* dst, int64_t dst_pitch, const uint16_t* src,
                                int64_t src_pitch);

// dst[r][c] = fp32(src[r][c]) of bf16 bits (exact: the bits moved up 16, NaN payloads kept).
// True when every product of two such values is exact in fp32 — each value is zero or of
// magnitude in [2^-63, 2^63), so a product lies in [2^-126, 2^126) with at most 16 significant
// bits — as it always is for finite fp16: the mad may then use the fused (FMA) kernels.
bool widen_bf16_block(float* dst, int64_t dst_pitch, const uint16_t* src, int64_t src_pitch);
// dst[c][r] = fp32(src[r][c]) of bf16 bits, in one pass; the answer as widen_bf16_block's.
bool widen_bf16_block_transposed(float* dst, int64_t dst_pitch, const uint16_t* src,
                                 int64_t src_pitch);

// The forms this CPU can run, best first ("avx512f", "f16c", "portable"), and one form by name
// on one 16 x 16 block (all pitches 16) — for the test that every form gives the same bits:
// the transpose, the widening and the transposed widening (of fp16, or of bf16 when asked),
// and the two widenings' answers.
std::vector<std::string> fractal_forms();
std::pair<bool, bool> fractal_form(const std::string& name, bool bf16, const uint16_t* src,
                                   uint16_t* transposed, float* widened, float* widened_transposed);

}  // namespace pypto::isa
