#include "simulator/cost_model.hpp"

#include <algorithm>
#include <cmath>

namespace pypto::cost {
namespace {
uint64_t cycles(double c) { return static_cast<uint64_t>(std::ceil(c - 1e-9)); }
int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
}  // namespace

uint64_t gm_transfer(const Platform& p, double bandwidth, int64_t rows, int64_t row_bytes) {
  double bursts = static_cast<double>(rows * ceil_div(row_bytes, p.gm_burst_bytes));
  return cycles(p.transfer_setup_cycles + static_cast<double>(rows * row_bytes) / bandwidth +
                bursts * p.gm_burst_overhead_cycles);
}

uint64_t local_transfer(const Platform& p, double bandwidth, int64_t bytes) {
  return cycles(p.transfer_setup_cycles + static_cast<double>(bytes) / bandwidth);
}

uint64_t vector(const Platform& p, const VecCost& c, int64_t bytes) {
  double repeats = static_cast<double>(ceil_div(bytes, p.vector_repeat_bytes));
  return cycles(c.base + c.per_repeat * repeats);
}

uint64_t row_reduce(const Platform& p, int64_t bytes, int64_t rows) {
  return vector(p, p.vec_reduce, bytes) + cycles(p.reduce_per_row_cycles * rows);
}

uint64_t sync(const Platform& p) { return cycles(p.sync_cycles); }

uint64_t matmul(const Platform& p, int64_t m, int64_t k, int64_t n, int64_t in_esize) {
  const int64_t k0 = 32 / in_esize;
  const double cpr = in_esize >= 4 ? p.cube_cpr_fp32 : p.cube_cpr_16bit;
  double fractals = static_cast<double>(ceil_div(m, 16) * ceil_div(k, k0) * ceil_div(n, 16));
  return cycles(p.cube_base_cycles + cpr * fractals);
}

uint64_t fixpipe(const Platform& p, int64_t rows, int64_t out_bytes, double bandwidth) {
  double drain = p.fixpipe_per_row_cycles * static_cast<double>(rows);
  return cycles(p.fixpipe_base_cycles + std::max(drain, static_cast<double>(out_bytes) / bandwidth));
}

uint64_t col_reduce(const Platform& p, int64_t bytes) { return vector(p, p.vec_binary, bytes); }

uint64_t sort(const Platform& p, int64_t bytes, int64_t row_len, int64_t block) {
  int64_t run = block > 0 ? std::min(block, row_len) : row_len;
  int64_t passes = 1;
  for (int64_t sorted = 32; sorted < run; sorted *= 2) ++passes;
  return vector(p, p.vec_sort, bytes) * static_cast<uint64_t>(passes);
}

uint64_t scalar_access(const Platform& p, bool gm) {
  return cycles(gm ? p.scalar_gm_access_cycles : p.scalar_ub_access_cycles);
}

}  // namespace pypto::cost
