// A records table (one int64 row per instruction, as the runtime returns it) turned into one
// contiguous array per column. The report's writers read a few columns of every row; taken
// one at a time from the row-major table, each column streams the whole table through the
// cache, so a million records cost ten passes over ~90 MB. This is one pass. A column is then
// narrowed (for the records file) in two passes, not numpy's three (min, max, cast).
#pragma once

#include <cstddef>
#include <cstdint>

namespace pypto::tools {

// out[c * rows + r] = table[r * width + c] for every row r and column c.
void record_columns(const int64_t* table, size_t rows, size_t width, int64_t* out);

// A column narrowed for the records file (pypto/report/records_file.py): its range in one
// pass, then one copy into the first signed type that holds it.

// The smallest and largest of `n` values (n > 0), in one pass.
template <class T>
void value_range(const T* values, size_t n, int64_t& lo, int64_t& hi) {
  T low = values[0], high = values[0];
  for (size_t i = 1; i < n; ++i) {
    low = values[i] < low ? values[i] : low;
    high = values[i] > high ? values[i] : high;
  }
  lo = static_cast<int64_t>(low), hi = static_cast<int64_t>(high);
}

// `n` values copied into a narrower type that holds each of them.
template <class From, class To>
void narrow_copy(const From* values, size_t n, To* out) {
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<To>(values[i]);
}

}  // namespace pypto::tools
