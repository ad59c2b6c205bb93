// Per-instruction costs, each a formula over the platform table (see platform/*.cpp for the
// numbers and their sources). Results are whole cycles, rounded up once per instruction.
#pragma once
#include <cstdint>

#include "simulator/platform/platform.hpp"

namespace pypto::cost {

// GM <-> on-chip: setup + bytes / bandwidth + one burst overhead per started burst of a row.
uint64_t gm_transfer(const Platform& p, double bandwidth, int64_t rows, int64_t row_bytes);
// On-chip -> on-chip copy: setup + bytes / bandwidth.
uint64_t local_transfer(const Platform& p, double bandwidth, int64_t bytes);
// Vector instruction over `bytes` of its widest operand: base + per_repeat * repeats.
uint64_t vector(const Platform& p, const VecCost& c, int64_t bytes);
// Row reduction: a streaming pass plus a fold per row.
uint64_t row_reduce(const Platform& p, int64_t bytes, int64_t rows);
uint64_t sync(const Platform& p);
// One mad: base + cpr * ceil(m/16) * ceil(k/k0) * ceil(n/16), k0 = 32 B / input element size.
uint64_t matmul(const Platform& p, int64_t m, int64_t k, int64_t n, int64_t in_esize);
// FIXPIPE out of L0C: drain base + the larger of the per-row drain and bytes / bandwidth.
uint64_t fixpipe(const Platform& p, int64_t rows, int64_t out_bytes, double bandwidth);

// Column reduction: one binary pass per row after the first, streaming the whole source.
uint64_t col_reduce(const Platform& p, int64_t bytes);
// Sort of rows of `row_len` elements in blocks of `block` (0: whole rows): a sort32 pass, then
// one merge pass per doubling of the sorted run up to the block (or row) length.
uint64_t sort(const Platform& p, int64_t bytes, int64_t row_len, int64_t block);
// One scalar element access on the SCALAR pipe (GM or an on-chip buffer).
uint64_t scalar_access(const Platform& p, bool gm);

}  // namespace pypto::cost
