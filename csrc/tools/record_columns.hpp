// A records table (one int64 row per instruction, as the runtime returns it) turned into one
// contiguous array per column. The report's writers read a few columns of every row; taken
// one at a time from the row-major table, each column streams the whole table through the
// cache, so a million records cost ten passes over ~90 MB. This is one pass.
#pragma once

#include <cstddef>
#include <cstdint>

namespace pypto::tools {

// out[c * rows + r] = table[r * width + c] for every row r and column c.
void record_columns(const int64_t* table, size_t rows, size_t width, int64_t* out);

}  // namespace pypto::tools
