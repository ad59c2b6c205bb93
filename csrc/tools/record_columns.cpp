// See record_columns.hpp.
#include "tools/record_columns.hpp"

#include <algorithm>
#include <array>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

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

namespace {

// Up to kFixedWidth columns are read with their count known when compiled (one instance per
// width): the column loop unrolled, each column's OR in a register and each narrowing's
// addresses fixed offsets, where a run-time width kept the ORs in memory (a store and a load
// per value) and recomputed addresses per column. A records table has eleven.
constexpr size_t kFixedWidth = 16;

// column_bits for tables W wide.
template <size_t W>
void column_bits_of(const std::vector<RecordsTable>& tables, uint64_t* bits) {
  uint64_t acc[W] = {};
  for (const RecordsTable& t : tables) {
    for (size_t r = 0; r < t.rows; ++r) {
      const int64_t* row = t.table + r * W;
      for (size_t c = 0; c < W; ++c) acc[c] |= static_cast<uint64_t>(row[c] ^ (row[c] >> 63));
    }
  }
  std::copy(acc, acc + W, bits);
}

// Any width, kGroup columns per pass with their ORs in registers.
void column_bits_any(const std::vector<RecordsTable>& tables, size_t width, uint64_t* bits) {
  constexpr size_t kGroup = 16;
  for (size_t first = 0; first < width; first += kGroup) {
    const size_t n = std::min(kGroup, width - first);
    uint64_t acc[kGroup] = {};
    for (const RecordsTable& t : tables) {
      for (size_t r = 0; r < t.rows; ++r) {
        const int64_t* row = t.table + r * width + first;
        for (size_t c = 0; c < n; ++c) acc[c] |= static_cast<uint64_t>(row[c] ^ (row[c] >> 63));
      }
    }
    std::copy(acc, acc + n, bits + first);
  }
}

// Rows [from, to) of column c of `table`, narrowed, at `out`; returns column_bits' OR of them.
template <class To>
uint64_t narrow_block(const int64_t* table, size_t width, size_t c, size_t from, size_t to,
                      To* out) {
  uint64_t bits = 0;
  for (size_t r = from; r < to; ++r) {
    const int64_t v = table[r * width + c];
    out[r - from] = static_cast<To>(v);
    bits |= static_cast<uint64_t>(v ^ (v >> 63));
  }
  return bits;
}

// Column c of rows [from, to), narrowed to bytes[c], at out[c] + dst; returns their bits.
inline uint64_t narrow_column(const int64_t* table, size_t width, size_t c, size_t from, size_t to,
                              void* const* out, const int* bytes, size_t dst) {
  switch (bytes[c]) {
    case 1:
      return narrow_block(table, width, c, from, to, static_cast<int8_t*>(out[c]) + dst);
    case 2:
      return narrow_block(table, width, c, from, to, static_cast<int16_t*>(out[c]) + dst);
    case 4:
      return narrow_block(table, width, c, from, to, static_cast<int32_t*>(out[c]) + dst);
    default:
      return narrow_block(table, width, c, from, to, static_cast<int64_t*>(out[c]) + dst);
  }
}

// A block of kBlock rows (1.4 KB for eleven columns) stays in L1 while each of its columns is
// copied out. Small blocks measured fastest: at a million rows of eleven columns 16 rows took
// 6 ms, 64 rows 7.5 ms and 256 rows 12 ms (the eleven output streams and the block's lines
// then compete for L1).
constexpr size_t kBlock = 16;

// narrow_columns for tables `Width` wide (0: any width, `width`).
template <size_t Width>
void narrow_columns_of(const std::vector<RecordsTable>& tables, size_t width, void* const* out,
                       const int* bytes, uint64_t* bits) {
  const size_t w = Width ? Width : width;
  std::fill(bits, bits + w, 0);
  size_t at = 0;  // rows of the earlier tables
  for (const RecordsTable& t : tables) {
    for (size_t from = 0; from < t.rows; from += kBlock) {
      const size_t to = std::min(t.rows, from + kBlock);
      for (size_t c = 0; c < w; ++c)
        bits[c] |= narrow_column(t.table, w, c, from, to, out, bytes, at + from);
    }
    at += t.rows;
  }
}

template <size_t... W>
constexpr auto fixed_widths(std::index_sequence<W...>) {
  using Bits = void (*)(const std::vector<RecordsTable>&, uint64_t*);
  using Narrow =
      void (*)(const std::vector<RecordsTable>&, size_t, void* const*, const int*, uint64_t*);
  return std::pair{std::array<Bits, sizeof...(W)>{&column_bits_of<W + 1>...},
                   std::array<Narrow, sizeof...(W)>{&narrow_columns_of<W + 1>...}};
}

constexpr auto kFixed = fixed_widths(std::make_index_sequence<kFixedWidth>{});

}  // namespace

void column_bits(const std::vector<RecordsTable>& tables, size_t width, uint64_t* bits) {
  // One shift, xor and or per value, where a running minimum and maximum took two compares
  // and two selects.
  if (width >= 1 && width <= kFixedWidth) return kFixed.first[width - 1](tables, bits);
  column_bits_any(tables, width, bits);
}

void sample_bits(const std::vector<RecordsTable>& tables, size_t width, size_t prefix, size_t step,
                 uint64_t* bits) {
  std::fill(bits, bits + width, 0);
  auto add = [&](const int64_t* row) {
    for (size_t c = 0; c < width; ++c) bits[c] |= static_cast<uint64_t>(row[c] ^ (row[c] >> 63));
  };
  for (const RecordsTable& t : tables) {
    if (t.rows == 0) continue;
    for (size_t r = 0; r < t.rows; r += r < prefix ? 1 : step) add(t.table + r * width);
    add(t.table + (t.rows - 1) * width);
  }
}

void narrow_columns(const std::vector<RecordsTable>& tables, size_t width, void* const* out,
                    const int* bytes, uint64_t* bits) {
  if (width >= 1 && width <= kFixedWidth)
    return kFixed.second[width - 1](tables, width, out, bytes, bits);
  narrow_columns_of<0>(tables, width, out, bytes, bits);
}

void line_totals(const int64_t* table, size_t rows, size_t width, const int32_t* loc,
                 const LineColumns& cols, size_t strings, size_t pipes, int64_t* cycles,
                 int64_t* count) {
  for (size_t r = 0; r < rows; ++r) {
    const int64_t* row = table + r * width;
    if (row[cols.kind] != 0) continue;  // flag and barrier slices are not work
    const auto line = static_cast<uint64_t>(loc[r]), pipe = static_cast<uint64_t>(row[cols.pipe]);
    if (line >= strings || pipe >= pipes) {
      throw std::out_of_range("records row " + std::to_string(r) +
                              ": its source-line id or pipe is out of range");
    }
    cycles[line * pipes + pipe] += row[cols.end] - row[cols.start];
    count[line * pipes + pipe] += 1;
  }
}

}  // namespace pypto::tools
