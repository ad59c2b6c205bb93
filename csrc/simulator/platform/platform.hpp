// Hardware numbers of one simulated platform. Defined once here and exposed read-only to
// Python, so the planner's capacities and the simulator's costs can never disagree.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace pypto {

// Cost of one vector instruction class: cycles = base + per_repeat * repeats, where a repeat
// processes `vector_repeat_bytes` of the widest operand.
struct VecCost {
  double per_repeat;
  double base;
};

// A row reduction priced as pto-isa expands it (pto_isa.cpp, cost_model.cpp): a sequence of
// CCE steps, each followed by a pipe barrier that ends the vector stream, so every step after
// the first pays its head + tail. Off (the device profile): vec_reduce repeats over the tile.
struct RowReduceSteps {
  bool enabled = false;
  VecCost group_sum{}, group_max{};  // vcgadd / vcgmax: one result per 32-byte block
  VecCost fold_sum{}, fold_max{};    // vadd / vmax (vmin alike): one block of columns folded
  VecCost last_sum{}, last_max{};    // vcadd / vcmax: the generic path's final reduction
  double count_mode_floor = 0;       // a binary op issued in count mode
  double mask_write = 0;             // set_mask_count / set_mask_norm / set_vector_mask
  double barrier = 0;                // the pipe_barrier after each step
};

// TSORT32 and TMRGSORT priced as pto-isa expands them (pto_isa.cpp): TSORT32 as one vbitsort
// per row (a repeat per 32 elements) and a pipe barrier that ends the vector stream; TMRGSORT
// of four runs as one vmrgsort4 (a repeat per group of four runs); TMRGSORT of lists as one
// vmrgsort4 repeat into a scratch row, a barrier and a UB -> UB copy of the result (whole
// cycles, truncated); TGATHER's mask form as count mode and a mask set, one vreducev2 (a repeat
// per row) and the mask restored. Off (the device profile): the vec_sort and vec_copy rows.
struct SortSteps {
  bool enabled = false;
  VecCost bitsort{};      // per repeat of 32 elements; base: the stream head
  VecCost merge4{};       // per repeat of four runs; base: the stream head
  VecCost reduce_v2{};    // per row; base: the stream head and tail
  double barrier = 0;     // the pipe_barrier after a row's vbitsort / before the copy
  double mask_write = 0;  // set_mask_count / set_vector_mask / set_mask_norm
};

struct Platform {
  std::string name;
  std::string device;  // the device name this simulator stands for
  double clock_hz;
  int aic_cores, aiv_cores;
  // Usable bytes per on-chip space (what tiles may occupy) and physical bytes.
  int64_t ub_bytes, ub_physical_bytes, l1_bytes, l0a_bytes, l0b_bytes, l0c_bytes, bias_bytes;
  int64_t alignment_bytes;
  // GM transfers: a row is fetched as requests of at most `gm_burst_bytes` (one per started
  // burst of each row); the DMA engine issues one request per `gm_request_cycles`, so a
  // transfer of many short rows is request-bound (cost_model.hpp). `transfer_setup_cycles` is
  // the lead of a GM transfer before its first data beat (on-chip moves have none).
  int64_t gm_burst_bytes;
  double gm_request_cycles;
  double transfer_setup_cycles;
  double bw_gm_to_ub, bw_gm_to_l1, bw_ub_to_gm, bw_l1_to_l0a, bw_l1_to_l0b, bw_l0c_to_gm,
      bw_ub_to_ub, bw_l0c_to_l1;
  int64_t vector_repeat_bytes;
  VecCost vec_binary, vec_unary, vec_exp, vec_div, vec_reduce, vec_cvt;
  double reduce_per_row_cycles;
  // Cube: mad = cube_base + cpr * ceil(m/16) * ceil(k/k0) * ceil(n/16).
  double cube_base_cycles;
  double cube_cpr_16bit, cube_cpr_fp32;
  // FIXPIPE drains L0C row by row: base + rows * (max(per_row floor, L0C row bytes / drain
  // bandwidth) + misalign * (odd part of the row's C0-block count - 1)).
  double fixpipe_base_cycles, fixpipe_per_row_cycles;
  double fixpipe_drain_bytes_per_cycle, fixpipe_misalign_cycles;
  int64_t fixpipe_c0_bytes;
  double sync_cycles;          // set_flag / wait_flag / pipe_barrier: pipe busy time
  double scalar_issue_cycles;  // scalar unit cost to issue one instruction
  int event_ids;               // event ids per (src, dst) pipe pair
  // Task dispatch (the chip scheduler): a consumer is handed to a core task_dispatch_cycles
  // after its last producer ends; a core starts a task task_head_cycles after it is handed
  // over, task_cold_head_cycles for the first task a core runs in a launch.
  double task_dispatch_cycles, task_head_cycles, task_cold_head_cycles;
  int64_t recommended_transfer_bytes;  // PH001 threshold
  int vec_mat_routes;                  // 1 when Vec->Mat and Acc->Vec moves exist (a5)
  // Memory system shared by all cores (memory_system.hpp).
  double hbm_bytes_per_cycle;  // nominal HBM bandwidth for L2 misses
  double hbm_efficiency;       // the share of it streaming kernels achieve (the shared cap)
  double hbm_achievable() const { return hbm_bytes_per_cycle * hbm_efficiency; }
  int64_t l2_bytes, l2_line_bytes;
  int l2_ways;
  double l2_bytes_per_cycle;     // L2 bandwidth for hits
  double l2_hit_latency_cycles;  // lead of a transfer whose lines all hit
  // Cross-core synchronisation inside a cluster (1 AIC + aiv_cores / aic_cores AIVs).
  int cross_flag_ids;  // flag ids per direction per peer
  int tpipe_slots;     // ring depth of a tile pipe
  int aivs_per_cluster() const { return aic_cores > 0 ? aiv_cores / aic_cores : 0; }
  // Op families beyond the tutorial set (compare/select, bitwise, trig, gather, sort) and
  // scalar element access on the SCALAR pipe.
  VecCost vec_cmp, vec_sel, vec_bitwise, vec_trig, vec_gather, vec_sort;
  double scalar_gm_access_cycles, scalar_ub_access_cycles;
  // Which cost table this is: "device" (calibrated against device evidence) or "pto-isa" (the
  // constants of pto-isa's cost model, for comparing with that simulator).
  std::string cost_profile = "device";
  // Element-wise add and plain copies / fills, which pto-isa prices apart from the other
  // binary and unary ops (vadd, vcopy / vector_dup).
  VecCost vec_add, vec_copy;
  // An Acc -> GM store's data phase is priced as if each element were this many bytes (0: the
  // bytes it writes). pto-isa prices every L0C -> GM copy at 2 bytes per element.
  int64_t fixpipe_gm_priced_elem_bytes;
  // A TIMG2COL's window is priced as if each element were this many bytes (0: the bytes it
  // moves). pto-isa prices every img2col load at 2 bytes per element.
  int64_t img2col_priced_elem_bytes;
  // 1: a cross-core sync (a flag or tile-pipe handshake with the other cores of a cluster)
  // holds this core's instruction issue until it has passed, as a scalar instruction that
  // later instructions wait for; 0: it holds only its own pipe.
  int64_t cross_sync_holds_issue;
  // 1: a GM <-> UB / L1 transfer (a TLOAD or a Vec -> GM TSTORE; not an Acc -> GM store) takes
  // its cycles truncated to a whole cycle, as pto-isa prices a copy; 0: rounded up.
  int64_t gm_transfer_rounds_down;
  RowReduceSteps row_reduce;  // not a table figure: set by a cost profile
  SortSteps sort_steps;       // not a table figure: set by a cost profile
};

// A VecCost member's two fields: X(<member>_per_repeat, ...) and X(<member>_base, ...).
#define PYPTO_VEC_COST(X, m) X(m##_per_repeat, m.per_repeat) X(m##_base, m.base)

// Every numeric field once, for the Python view and overrides: X(name, member expression).
// Rows of fields laid out by hand (clang-format would interleave them).
// clang-format off
#define PYPTO_PLATFORM_FIELDS(X)                                                                \
  X(clock_hz, clock_hz) X(aic_cores, aic_cores) X(aiv_cores, aiv_cores)                         \
  X(ub_bytes, ub_bytes) X(ub_physical_bytes, ub_physical_bytes) X(l1_bytes, l1_bytes)           \
  X(l0a_bytes, l0a_bytes) X(l0b_bytes, l0b_bytes) X(l0c_bytes, l0c_bytes)                       \
  X(bias_bytes, bias_bytes) X(alignment_bytes, alignment_bytes)                                 \
  X(gm_burst_bytes, gm_burst_bytes) X(gm_request_cycles, gm_request_cycles)                     \
  X(transfer_setup_cycles, transfer_setup_cycles) X(bw_gm_to_ub, bw_gm_to_ub)                   \
  X(bw_gm_to_l1, bw_gm_to_l1) X(bw_ub_to_gm, bw_ub_to_gm) X(bw_l1_to_l0a, bw_l1_to_l0a)         \
  X(bw_l1_to_l0b, bw_l1_to_l0b) X(bw_l0c_to_gm, bw_l0c_to_gm) X(bw_ub_to_ub, bw_ub_to_ub)       \
  X(vector_repeat_bytes, vector_repeat_bytes)                                                   \
  PYPTO_VEC_COST(X, vec_binary) PYPTO_VEC_COST(X, vec_unary) PYPTO_VEC_COST(X, vec_exp)         \
  PYPTO_VEC_COST(X, vec_div) PYPTO_VEC_COST(X, vec_reduce) PYPTO_VEC_COST(X, vec_cvt)           \
  X(reduce_per_row_cycles, reduce_per_row_cycles) X(cube_base_cycles, cube_base_cycles)         \
  X(cube_cpr_16bit, cube_cpr_16bit) X(cube_cpr_fp32, cube_cpr_fp32)                             \
  X(fixpipe_base_cycles, fixpipe_base_cycles) X(fixpipe_per_row_cycles, fixpipe_per_row_cycles) \
  X(sync_cycles, sync_cycles) X(scalar_issue_cycles, scalar_issue_cycles)                       \
  X(event_ids, event_ids) X(task_dispatch_cycles, task_dispatch_cycles)                         \
  X(recommended_transfer_bytes, recommended_transfer_bytes) X(vec_mat_routes, vec_mat_routes)   \
  X(hbm_bytes_per_cycle, hbm_bytes_per_cycle) X(l2_bytes, l2_bytes)                             \
  X(l2_line_bytes, l2_line_bytes) X(l2_ways, l2_ways) X(l2_bytes_per_cycle, l2_bytes_per_cycle) \
  X(l2_hit_latency_cycles, l2_hit_latency_cycles) X(cross_flag_ids, cross_flag_ids)             \
  X(tpipe_slots, tpipe_slots)                                                                   \
  PYPTO_VEC_COST(X, vec_cmp) PYPTO_VEC_COST(X, vec_sel) PYPTO_VEC_COST(X, vec_bitwise)          \
  PYPTO_VEC_COST(X, vec_trig) PYPTO_VEC_COST(X, vec_gather) PYPTO_VEC_COST(X, vec_sort)         \
  X(scalar_gm_access_cycles, scalar_gm_access_cycles)                                           \
  X(scalar_ub_access_cycles, scalar_ub_access_cycles)                                           \
  X(bw_l0c_to_l1, bw_l0c_to_l1) X(fixpipe_drain_bytes_per_cycle, fixpipe_drain_bytes_per_cycle) \
  X(fixpipe_misalign_cycles, fixpipe_misalign_cycles) X(fixpipe_c0_bytes, fixpipe_c0_bytes)     \
  PYPTO_VEC_COST(X, vec_add) PYPTO_VEC_COST(X, vec_copy)                                        \
  X(fixpipe_gm_priced_elem_bytes, fixpipe_gm_priced_elem_bytes)                               \
  X(task_head_cycles, task_head_cycles) X(task_cold_head_cycles, task_cold_head_cycles)         \
  X(hbm_efficiency, hbm_efficiency) X(cross_sync_holds_issue, cross_sync_holds_issue)           \
  X(gm_transfer_rounds_down, gm_transfer_rounds_down)                                           \
  X(img2col_priced_elem_bytes, img2col_priced_elem_bytes)
// clang-format on

// The names accepted by platform_by_name, simulator names first.
const std::vector<std::string>& platform_names();
// Throws SimError(kInvalidArgument) listing the valid names for an unknown name.
const Platform& platform_by_name(const std::string& name);
// The cost profiles a table can be read under, "device" first.
const std::vector<std::string>& cost_profile_names();
// `name`'s table under `profile`; SimError(kInvalidArgument) for an unknown profile or one the
// platform has no figures for.
Platform platform_with_profile(const std::string& name, const std::string& profile);
// pto-isa's cost-model constants on top of an a2a3 table (platform/pto_isa.cpp).
Platform apply_pto_isa_profile(Platform p);

Platform make_a2a3sim();
Platform make_a5sim();

}  // namespace pypto
