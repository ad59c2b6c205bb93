#include "simulator/cost_model.hpp"

#include <algorithm>
#include <cmath>

namespace pypto::cost {
namespace {

// Whole cycles, saturating: an extreme what-if override yields a huge cost, never a wrapped one.
uint64_t whole(double c) {
  constexpr double kCap = 4.6e18;  // 2^62: sums of a few such costs still fit in 64 bits
  if (!(c < kCap)) return static_cast<uint64_t>(kCap);
  return c <= 0 ? 0 : static_cast<uint64_t>(std::ceil(c - 1e-9));
}
int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

const VecCost& vec_row(const Platform& p, VecClass c) {
  switch (c) {
    case VecClass::kBinary:
      return p.vec_binary;
    case VecClass::kExp:
      return p.vec_exp;
    case VecClass::kDiv:
      return p.vec_div;
    case VecClass::kReduce:
      return p.vec_reduce;
    case VecClass::kCvt:
      return p.vec_cvt;
    case VecClass::kCmp:
      return p.vec_cmp;
    case VecClass::kSel:
      return p.vec_sel;
    case VecClass::kBitwise:
      return p.vec_bitwise;
    case VecClass::kTrig:
      return p.vec_trig;
    case VecClass::kGather:
      return p.vec_gather;
    case VecClass::kSort:
      return p.vec_sort;
    case VecClass::kAdd:
      return p.vec_add;
    case VecClass::kCopy:
    case VecClass::kGatherMask:
      return p.vec_copy;
    default:
      return p.vec_unary;
  }
}

// Vector instruction: base (when it starts a run) + per_repeat * repeats of vector_repeat_bytes.
double vector(const Platform& p, VecClass c, int64_t bytes, bool warm) {
  const VecCost& v = vec_row(p, c);
  return (warm ? 0.0 : v.base) +
         v.per_repeat * static_cast<double>(ceil_div(bytes, p.vector_repeat_bytes));
}

// Columns of an expanded row reduction's source (0: the description is not one).
int64_t reduce_cols(const OpDesc& d) {
  if (d.cls != OpClass::kRowReduce || d.reduce == RowReduceKind::kOther || d.in_esize <= 0)
    return 0;
  return d.row_bytes / d.in_esize;
}

// pto-isa's fp32 sequences for four full shapes (TRowReduceOps.hpp lines 36-111): `groups` and
// `folds` in order, as repeat counts; the shape's rows r, columns c. False: not such a shape.
struct Seq {
  int n = 0;
  bool group[4] = {};
  int64_t repeats[4] = {};
  void add(bool g, int64_t rep) { group[n] = g, repeats[n++] = rep; }
};
bool fp32_sequence(int64_t r, int64_t c, Seq& q) {
  if (r == 64 && c == 128) {  // [64, 16] by groups, halved to [64, 8], grouped to [64, 1]
    q.add(true, r * 2), q.add(false, r / 8), q.add(true, r / 8);
  } else if (r == 32 && c == 256) {  // [32, 32] by groups, halved twice, grouped
    q.add(true, r * 4), q.add(false, r / 4), q.add(false, r / 8), q.add(true, r / 8);
  } else if (r == 16 && c == 512) {  // grouped three times
    q.add(true, r * 8), q.add(true, r), q.add(true, r / 8);
  } else if (r == 8 && c == 1024) {  // grouped twice, halved, grouped
    q.add(true, r * 16), q.add(true, r * 2), q.add(false, r / 8), q.add(true, r / 8);
  } else {
    return false;
  }
  return true;
}

// A row reduction as pto-isa's CCE steps (RowReduceSteps); < 0 when its shape takes a path the
// profile does not expand (columns not a whole number of repeats). Every step ends with a
// barrier, so only the first can continue a stream.
double reduce_steps(const Platform& p, const OpDesc& d, bool warm) {
  const RowReduceSteps& s = p.row_reduce;
  const int64_t cols = reduce_cols(d);
  const int64_t per_repeat = p.vector_repeat_bytes / std::max<int64_t>(d.in_esize, 1);
  const bool sum = d.reduce == RowReduceKind::kSum;
  double total = 0;
  bool first = true;
  auto step = [&](const VecCost& c, int64_t repeats, double extra) {
    total += ((first && warm) ? 0.0 : c.base) + c.per_repeat * static_cast<double>(repeats) +
             extra + s.barrier;
    first = false;
  };
  Seq q;
  if (d.in_esize == 4 && fp32_sequence(d.rows, cols, q)) {
    for (int i = 0; i < q.n; ++i)
      step(q.group[i] ? (sum ? s.group_sum : s.group_max) : (sum ? s.fold_sum : s.fold_max),
           q.repeats[i], 0);
    return total;
  }
  if (cols <= 0 || per_repeat <= 0 || cols % per_repeat != 0) return -1;
  // The generic path (lines 259-319): in count mode (set_mask_count and a count mask before,
  // set_mask_norm and a full mask after: 4 mask writes; the repeat count 0), fold each further
  // repeat-wide block of columns into the first, then reduce the one block left.
  const double mode = 4 * s.mask_write;
  for (int64_t i = 1; i < cols / per_repeat; ++i)
    step(sum ? s.fold_sum : s.fold_max, 0, mode + s.count_mode_floor);
  step(sum ? s.last_sum : s.last_max, 0, mode);
  return total;
}

// pto-isa's sort and mask-gather expansions (SortSteps). A merge (VecClass::kSort) of `k` groups of
// four runs is one vmrgsort4 of k repeats; a merge of lists (k == 0) one repeat, a barrier and a
// copy of the result from the scratch row (its bytes in 32-byte blocks, truncated: pto-isa's
// EstimateBandwidthCycles). A TSORT32 sorts each row with a vbitsort and a barrier that ends
// the stream, so every row after the first pays the head.
bool is_merge(const OpDesc& d) { return d.cls == OpClass::kVector && d.vec == VecClass::kSort; }
bool is_sort32(const OpDesc& d) { return d.cls == OpClass::kSort && d.k == 32 && d.rows > 0; }
bool is_gather_mask(const OpDesc& d) {
  return d.cls == OpClass::kVector && d.vec == VecClass::kGatherMask;
}

double sort_steps(const Platform& p, const OpDesc& d, bool warm) {
  const SortSteps& s = p.sort_steps;
  if (is_gather_mask(d)) {  // count mode and a mask on, one vreducev2 of a repeat per row, off
    return 4 * s.mask_write + (warm ? 0.0 : s.reduce_v2.base) +
           s.reduce_v2.per_repeat * static_cast<double>(d.rows);
  }
  if (is_merge(d)) {
    const double head = warm ? 0.0 : s.merge4.base;
    if (d.k > 0) return head + s.merge4.per_repeat * static_cast<double>(d.k);
    const double copy = std::floor(static_cast<double>(ceil_div(d.bytes, 32) * 32) / p.bw_ub_to_ub);
    return head + s.merge4.per_repeat + s.barrier + copy;
  }
  const int64_t rows = std::max<int64_t>(d.bytes / (4 * d.rows), 1);
  const double row = s.bitsort.per_repeat * static_cast<double>(ceil_div(d.rows, 32)) + s.barrier;
  return (warm ? 0.0 : s.bitsort.base) + s.bitsort.base * static_cast<double>(rows - 1) +
         row * static_cast<double>(rows);
}
bool sort_expanded(const Platform& p, const OpDesc& d) {
  return p.sort_steps.enabled && (is_merge(d) || is_sort32(d) || is_gather_mask(d));
}

// The odd part of n (n with its factors of two removed): FIXPIPE drains a row's C0 blocks in
// power-of-two groups, so a block count with odd part q needs q - 1 extra serial passes.
int64_t odd_part(int64_t n) {
  if (n <= 0) return 1;
  while ((n & 1) == 0) n >>= 1;
  return n;
}

// One mad: base + cpr * ceil(m/16) * ceil(k/k0) * ceil(n/16), k0 = 32 B / input element size.
double matmul(const Platform& p, const OpDesc& d) {
  const int64_t k0 = 32 / d.in_esize;
  const double cpr = d.in_esize >= 4 ? p.cube_cpr_fp32 : p.cube_cpr_16bit;
  return p.cube_base_cycles +
         cpr * static_cast<double>(ceil_div(d.m, 16) * ceil_div(d.k, k0) * ceil_div(d.n, 16));
}

// FIXPIPE drain: a fixed lead, then one L0C row at a time, each at its throughput or the row
// floor, plus the misalignment passes of a non-power-of-two C0-block count.
double drain(const Platform& p, const OpDesc& d) {
  const double row_bytes = static_cast<double>(d.acc_row_bytes);
  const double throughput =
      p.fixpipe_drain_bytes_per_cycle > 0 ? row_bytes / p.fixpipe_drain_bytes_per_cycle : 0.0;
  const int64_t blocks = ceil_div(d.acc_row_bytes, std::max<int64_t>(p.fixpipe_c0_bytes, 1));
  const double per_row = std::max(p.fixpipe_per_row_cycles, throughput) +
                         p.fixpipe_misalign_cycles * static_cast<double>(odd_part(blocks) - 1);
  return p.fixpipe_base_cycles + per_row * static_cast<double>(d.rows);
}

// The bytes an on-chip move is priced at: its own, or a TIMG2COL's elements (the only move
// that says its element size) at img2col_priced_elem_bytes each.
double local_move_bytes(const Platform& p, const OpDesc& d) {
  if (d.in_esize <= 0 || p.img2col_priced_elem_bytes <= 0) return static_cast<double>(d.bytes);
  return static_cast<double>(d.bytes / d.in_esize * p.img2col_priced_elem_bytes);
}

}  // namespace

double bandwidth(const Platform& p, Link r) {
  switch (r) {
    case Link::kGmToUb:
      return p.bw_gm_to_ub;
    case Link::kGmToL1:
      return p.bw_gm_to_l1;
    case Link::kUbToGm:
      return p.bw_ub_to_gm;
    case Link::kL1ToL0a:
      return p.bw_l1_to_l0a;
    case Link::kL1ToL0b:
      return p.bw_l1_to_l0b;
    case Link::kL0cToGm:
      return p.bw_l0c_to_gm;
    case Link::kL0cToL1:
      return p.bw_l0c_to_l1;
    default:
      return p.bw_ub_to_ub;
  }
}

bool ends_vector_run(const Platform& p, const OpDesc& d) {
  if (sort_expanded(p, d)) return is_sort32(d) || (is_merge(d) && d.k == 0);  // a barrier
  return p.row_reduce.enabled && reduce_cols(d) > 0 && reduce_steps(p, d, false) >= 0;
}

uint64_t cycles(const Platform& p, const OpDesc& d, bool warm) {
  const double bytes = static_cast<double>(d.bytes);
  if (sort_expanded(p, d)) return whole(sort_steps(p, d, warm));
  switch (d.cls) {
    case OpClass::kFixed:
      return d.cycles;
    case OpClass::kSync:
      return whole(p.sync_cycles);
    case OpClass::kScalar:
      return whole(p.scalar_issue_cycles);
    case OpClass::kVector:
      return whole(vector(p, d.vec, d.bytes, warm));
    case OpClass::kRowReduce:
      if (ends_vector_run(p, d)) return whole(reduce_steps(p, d, warm));
      return whole(vector(p, VecClass::kReduce, d.bytes, warm)) +
             whole(p.reduce_per_row_cycles * static_cast<double>(d.rows));
    case OpClass::kMatmul:
      return whole(matmul(p, d));
    case OpClass::kSort: {  // a sort32 pass, then a merge pass per doubling of the sorted run,
                            // back to back (only the first can start a run)
      const int64_t run = d.k > 0 ? std::min(d.k, d.rows) : d.rows;
      uint64_t merges = 0;
      for (int64_t sorted = 32; sorted < run; sorted *= 2) ++merges;
      return whole(vector(p, VecClass::kSort, d.bytes, warm)) +
             whole(vector(p, VecClass::kSort, d.bytes, true)) * merges;
    }
    case OpClass::kScalarAccess:
      return whole(d.link == Link::kGmToUb ? p.scalar_gm_access_cycles : p.scalar_ub_access_cycles);
    case OpClass::kTranspose:  // two back-to-back passes at the unary copy rate plus a repeat
                               // per source row
      return whole(vector(p, VecClass::kUnary, d.bytes, warm)) +
             whole(vector(p, VecClass::kUnary, d.bytes, true)) +
             whole(p.vec_unary.per_repeat * static_cast<double>(d.rows));
    case OpClass::kFixpipe:
      return whole(std::max(drain(p, d), bytes / bandwidth(p, d.link)));
    case OpClass::kLocalMove:  // on-chip: bytes / bandwidth (the MTE1 sweep has no intercept)
      return whole(local_move_bytes(p, d) / bandwidth(p, d.link));
    default:
      return gm_cycles(p, d, gm_lead(p, d, false) + bytes / port_bandwidth(p, d));
  }
}

double gm_lead(const Platform& p, const OpDesc& d, bool l2_hit) {
  if (d.cls == OpClass::kFixpipeGm) return p.fixpipe_base_cycles;
  return l2_hit ? p.l2_hit_latency_cycles : p.transfer_setup_cycles;
}

// A GM transfer's data flows at the route's bandwidth unless its requests (one per started
// burst of each row, one issued per gm_request_cycles) come slower than that. An Acc -> GM
// store priced at fixpipe_gm_priced_elem_bytes per element (L0C holds 4-byte elements) moves
// its real bytes at the rate that prices it so.
double port_bandwidth(const Platform& p, const OpDesc& d) {
  const double bw = bandwidth(p, d.link);
  if (d.cls == OpClass::kFixpipeGm && p.fixpipe_gm_priced_elem_bytes > 0 && d.bytes > 0) {
    const int64_t priced = d.rows * (d.acc_row_bytes / 4) * p.fixpipe_gm_priced_elem_bytes;
    if (priced > 0) return bw * static_cast<double>(d.bytes) / static_cast<double>(priced);
  }
  if (d.cls == OpClass::kFixpipeGm || p.gm_request_cycles <= 0 || d.bytes <= 0) return bw;
  const double requests = static_cast<double>(d.rows * ceil_div(d.row_bytes, p.gm_burst_bytes));
  return std::min(bw, static_cast<double>(d.bytes) / (requests * p.gm_request_cycles));
}

// GM <-> on-chip: the lead and data phase, in whole cycles (truncated where the profile says
// so). FIXPIPE: the lead and data phase against the drain.
uint64_t gm_cycles(const Platform& p, const OpDesc& d, double phase) {
  if (d.cls == OpClass::kFixpipeGm) return whole(std::max(phase, drain(p, d)));
  if (p.gm_transfer_rounds_down != 0) return whole(std::floor(phase + 1e-9));
  return whole(phase);
}

}  // namespace pypto::cost
