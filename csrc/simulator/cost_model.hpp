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
// Tile transpose on VECTOR: assumption (no public per-op figure): two passes at the unary
// copy rate (gather + write back) plus one repeat per source row for the row scatter.
uint64_t transpose(const Platform& p, int64_t bytes, int64_t rows);

}  // namespace pypto::cost
