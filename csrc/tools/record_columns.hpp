// A records table (one int64 row per instruction, as the runtime returns it) turned into one
// contiguous array per column. The report's writers read a few columns of every row; taken
// one at a time from the row-major table, each column streams the whole table through the
// cache, so a million records cost ten passes over ~90 MB. This is one pass.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace pypto::tools {

// out[c * rows + r] = table[r * width + c] for every row r and column c.
void record_columns(const int64_t* table, size_t rows, size_t width, int64_t* out);

// The records tables of a run's tasks, read for the records file (pypto/report/records_file.py)
// without a transposed copy: each column narrowed to the first signed type that holds it.
struct RecordsTable {
  const int64_t* table = nullptr;  // rows x width, row-major
  size_t rows = 0;
};

// Per column c of the tables (all `width` wide), in one pass: bits[c], the OR over its values v
// of v ^ (v >> 63) (v for v >= 0, -v - 1 below). Every value of the column fits a k-bit signed
// integer exactly when bits[c] < 2^(k-1): it tells the narrowest type as the smallest and
// largest value would, for less work per value. 0 when there are no rows.
void column_bits(const std::vector<RecordsTable>& tables, size_t width, uint64_t* bits);

// column_bits over a sample of the rows: of each table its first `prefix` rows, every `step`-th
// row after them and its last row. Below the whole tables' bits (a subset of the values), so a
// type chosen from it is at most as wide as needed; it reads a small part of the rows where
// column_bits streams every row's cache lines in.
void sample_bits(const std::vector<RecordsTable>& tables, size_t width, size_t prefix, size_t step,
                 uint64_t* bits);

// Column c of every table, one table after another, copied into out[c], an array of
// bytes[c]-byte signed integers (1, 2, 4 or 8); a block of rows at a time, so each row is read
// from memory once for all its columns. In the same pass bits[c] gets column_bits' value for
// column c, so a caller that chose the types from a sample learns whether every value fit (a
// value that does not is stored truncated).
void narrow_columns(const std::vector<RecordsTable>& tables, size_t width, void* const* out,
                    const int* bytes, uint64_t* bits);

// The positions of the columns that line_totals reads in a records table's row.
struct LineColumns {
  size_t kind = 0, pipe = 0, start = 0, end = 0;
};

// The hot-spot table's sums of one records table, in one pass over its rows: per operation
// (kind 0) at source-line id loc[r] on pipe p, cycles[loc * pipes + p] += end - start and
// count[...] += 1 (both arrays `strings * pipes` long, zeroed by the caller). Reading the
// four columns one at a time would stream the whole row-major table through the cache four
// times. Throws std::out_of_range naming the row when an operation's loc or pipe is out of
// range (the sums so far are then meaningless).
void line_totals(const int64_t* table, size_t rows, size_t width, const int32_t* loc,
                 const LineColumns& cols, size_t strings, size_t pipes, int64_t* cycles,
                 int64_t* count);

}  // namespace pypto::tools
