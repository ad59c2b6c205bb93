// See record_columns.hpp.
#include "tools/record_columns.hpp"

namespace pypto::tools {

void record_columns(const int64_t* table, size_t rows, size_t width, int64_t* out) {
  // Eight rows at a time: each column then gets a whole 64-byte cache line per step, and the
  // eight rows read (a few hundred bytes) stay in L1 while their columns are written out.
  constexpr size_t kBlock = 8;
  size_t r0 = 0;
  for (; r0 + kBlock <= rows; r0 += kBlock) {
    const int64_t* in = table + r0 * width;
    for (size_t c = 0; c < width; ++c) {
      int64_t* col = out + c * rows + r0;
      for (size_t r = 0; r < kBlock; ++r) col[r] = in[r * width + c];
    }
  }
  for (; r0 < rows; ++r0) {
    for (size_t c = 0; c < width; ++c) out[c * rows + r0] = table[r0 * width + c];
  }
}

}  // namespace pypto::tools
