// The cube side: on-chip layouts of L0A/L0B, moves between spaces, FIXPIPE out of L0C.
#pragma once
#include <cstdint>
#include <string>
#include <utility>

#include "chip/isa/checks.hpp"
#include "pypto/abi.h"

namespace pypto::isa {

inline bool is_int8(int dtype) { return dtype == PYPTO_INT8 || dtype == PYPTO_UINT8; }
// The dtypes the simulated cube multiplies (both operands alike): floats, computed in fp32,
// and 8-bit integers, summed exactly in int32.
inline bool cube_input_supported(int dtype) {
  return dtype == PYPTO_FP16 || dtype == PYPTO_BF16 || dtype == PYPTO_FP32 || is_int8(dtype);
}
// The accumulator inputs of `input` sum into.
inline int cube_acc_dtype(int input) { return is_int8(input) ? PYPTO_INT32 : PYPTO_FP32; }
// A gemv (a [1, K] row times a matrix) takes the float inputs only.
inline bool gemv_input_supported(int dtype) {
  return cube_input_supported(dtype) && !is_int8(dtype);
}
// The dtypes FIXPIPE writes to GM out of an accumulator of `acc`: fp32 converts on the way
// out, int32 is written as it is.
inline bool fixpipe_out_supported(int acc, int dtype) {
  if (acc == PYPTO_INT32) return dtype == PYPTO_INT32;
  return dtype == PYPTO_FP32 || dtype == PYPTO_FP16 || dtype == PYPTO_BF16;
}

// Whether `mem` holds the cube's fractal layouts (L0A, L0B); every other space is row-major.
inline bool is_l0(int mem) { return mem == PYPTO_LEFT || mem == PYPTO_RIGHT; }

// Element index of logical (r, c) in a tile stored in `mem`. L0A holds 16 x c0 fractals in
// row-major fractal order ("zZ"); L0B holds c0 x 16 fractals stored column by column inside
// ("nZ"); every other space is plain row-major. c0 = 32 B / element size.
// Inline: the relayout and widening loops call it once per element.
inline int64_t layout_index(int mem, int64_t r, int64_t c, int64_t cols, int64_t esize) {
  const int64_t c0 = 32 / esize;
  if (mem == PYPTO_LEFT) {  // zZ: 16 x c0 fractals, fractals row-major, elements row-major
    return ((r / 16) * (cols / c0) + c / c0) * 16 * c0 + (r % 16) * c0 + c % c0;
  }
  if (mem == PYPTO_RIGHT) {  // nZ: c0 x 16 fractals, fractals row-major, elements column-major
    return ((r / c0) * (cols / 16) + c / 16) * 16 * c0 + (c % 16) * c0 + r % c0;
  }
  return r * cols + c;
}

// Calls f(index, r, c) for every element of a [rows, cols] tile stored in `mem`, in storage
// order (index 0, 1, ...): fractal by fractal, so the inner loops have constant trip counts.
template <int64_t E, typename F>
inline void for_each_stored(int mem, int64_t rows, int64_t cols, F&& f) {
  constexpr int64_t c0 = 32 / E;
  int64_t i = 0;
  if (mem == PYPTO_LEFT) {
    for (int64_t r0 = 0; r0 < rows; r0 += 16)
      for (int64_t cb = 0; cb < cols; cb += c0)
        for (int64_t r = r0; r < r0 + 16; ++r)
          for (int64_t c = cb; c < cb + c0; ++c) f(i++, r, c);
  } else if (mem == PYPTO_RIGHT) {
    for (int64_t rb = 0; rb < rows; rb += c0)
      for (int64_t cb = 0; cb < cols; cb += 16)
        for (int64_t c = cb; c < cb + 16; ++c)
          for (int64_t r = rb; r < rb + c0; ++r) f(i++, r, c);
  } else {
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) f(i++, r, c);
  }
}

// "Mat -> Left, ..." — the routes into `dst` on this platform, for error messages.
std::string legal_routes(int dst, const Platform& p);

void copy_rows(uint8_t* dst, int64_t dst_pitch, const uint8_t* src, int64_t src_pitch, int64_t rows,
               int64_t row_bytes);

// A whole L0A/L0B tile `d` filled from row-major data of its dtype (`src`, row pitch `pitch`
// elements) in d's fractal layout; false (nothing written) when d is not a whole number of
// fractals or not in L0A/L0B.
bool l0_whole(const TileView& d, const uint8_t* src, int64_t pitch);

// What a mad reads and writes: left, right, the accumulator (read too when accumulating).
AccessList mad_accesses(const TileView& a, const TileView& b, const TileView& c, bool accumulate);
// A bias table operand of a mad producing `n` columns: fp32, one row of n.
TileView check_bias(const pypto_tile* bias, int64_t n, const char* op);

// A gemv's operands widened to fp32 in buffers of the calling thread's (the mad's): the [1, k]
// row vector `a`, and the L0B tile `b` holding [k, n], row-major (a whole fp16/bf16 tile
// fractal by fractal, as a mad's).
std::pair<const float*, const float*> gemv_operands(const TileView& a, const TileView& b, int64_t k,
                                                    int64_t n);

// TSTORE of an Acc tile: FIXPIPE, narrowing to the tensor's dtype, optional atomic add.
void store_from_acc(const pypto_tensor* dst, int64_t row0, int64_t col0, const pypto_tile* src,
                    bool atomic_add);

}  // namespace pypto::isa
