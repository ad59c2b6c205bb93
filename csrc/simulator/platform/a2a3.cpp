// a2a3 (Ascend 910B-class) simulator table. Sources: the public figures collected in
// SPEC.md §6 and §12 (device sweeps and vendor documentation); anything else is marked
// "assumption" with the reasoning.
#include "simulator/platform/platform.hpp"

namespace pypto {

Platform make_a2a3sim() {
  Platform p;
  p.name = "a2a3sim";
  p.device = "a2a3";
  p.clock_hz = 1.85e9;  // SPEC §12: 1.85 GHz AI core clock
  p.aic_cores = 24;     // SPEC §6: 24 AIC
  p.aiv_cores = 48;     // SPEC §6: 48 AIV (clusters of 1 AIC + 2 AIV)
  p.ub_physical_bytes = 192 * 1024;  // SPEC §6: 192 KiB UB physical
  p.ub_bytes = 184 * 1024;           // SPEC §6: top 8 KiB reserved
  p.l1_bytes = 512 * 1024;           // SPEC §6
  p.l0a_bytes = 64 * 1024;           // SPEC §6
  p.l0b_bytes = 64 * 1024;           // SPEC §6
  p.l0c_bytes = 128 * 1024;          // SPEC §6
  p.bias_bytes = 1024;               // SPEC §6
  p.alignment_bytes = 32;            // SPEC §6: addresses 32-byte aligned
  p.gm_burst_bytes = 512;            // SPEC §7/§12: L2 cache line = 512 B
  // assumption: one cycle per burst request. With it a weight-load-bound matmul whose GM->Mat
  // rows are 128 B runs ~19% slower than with 512 B rows (benchmarks/bench_granularity.py;
  // the seed measures 16-25% on the device).
  p.gm_burst_overhead_cycles = 1.0;
  // assumption: fixed per-transfer cost (descriptor issue + first-beat latency); makes small
  // transfers fall below peak as SPEC §12 describes.
  p.transfer_setup_cycles = 30;
  p.bw_gm_to_ub = 59;    // SPEC §12: GM->UB ~59 B/cycle
  p.bw_gm_to_l1 = 78;    // SPEC §12: GM->L1 ~78 B/cycle
  p.bw_ub_to_gm = 109;   // SPEC §12: UB->GM ~109 B/cycle
  p.bw_l1_to_l0a = 130;  // SPEC §12: L1->L0A ~130 B/cycle
  p.bw_l1_to_l0b = 85;   // SPEC §12: L1->L0B ~85 B/cycle
  p.bw_l0c_to_gm = 41;   // SPEC §12: L0C->GM ~41 B/cycle
  p.bw_ub_to_ub = 128;   // assumption: a UB->UB copy moves half a repeat per cycle
  p.vector_repeat_bytes = 256;      // SPEC §12: one repeat is 256 B
  p.vec_binary = {2.1, 24};         // SPEC §12: binary fp32 ~2.1 cycles/repeat + 24
  p.vec_unary = {1.0, 23};          // SPEC §12: unary / scalar-operand ~1 cycle/repeat + 23
  p.vec_exp = {2.0, 31};            // SPEC §12: exp ~2 cycles/repeat + 31 (log, sqrt alike: assumption)
  p.vec_div = {4.0, 31};            // SPEC §12: div ~4 cycles/repeat + 31 (recip alike: assumption)
  p.vec_reduce = {1.0, 23};         // assumption: a row reduction streams like a unary op...
  p.reduce_per_row_cycles = 2;      // assumption: ...plus a final in-register fold per row
  p.vec_cvt = {1.0, 23};            // assumption: conversions cost like unary ops
  p.cube_base_cycles = 21;          // SPEC §12: mad ~21 + cpr * fractals
  p.cube_cpr_16bit = 1;             // SPEC §12: cpr 1 for 16-bit inputs
  p.cube_cpr_fp32 = 2;              // SPEC §12: cpr 2 for fp32
  p.fixpipe_base_cycles = 164;      // SPEC §12: FIXPIPE drain ~164 cycles
  p.fixpipe_per_row_cycles = 4.45;  // SPEC §12: + ~4.45 cycles per output row
  p.sync_cycles = 1;                // SPEC §12: set_flag/wait_flag/barrier ~1 cycle
  p.scalar_issue_cycles = 1;        // assumption: the scalar unit issues one instruction per cycle
  p.event_ids = 8;                  // assumption: 8 event ids per pipe pair (AscendC EVENT_ID0-7)
  p.task_dispatch_cycles = 0.8e-6 * 1.85e9;  // SPEC §12: ~0.8 us per task
  p.recommended_transfer_bytes = 512;        // SPEC §7: PH001 threshold on a2a3
  p.vec_mat_routes = 0;                      // SPEC §6: no Vec->Mat / Acc->Vec on a2a3
  // Vendor spec sheets for 910B-class parts: 64 GB HBM2e at about 1.6 TB/s, i.e.
  // 1.6e12 / 1.85e9 = ~865 B/cycle shared by every core.
  p.hbm_bytes_per_cycle = 865;
  // Public die analyses of 910B-class parts: 192 MB of L2. assumption: 16-way LRU.
  p.l2_bytes = int64_t{192} << 20;
  p.l2_line_bytes = 512;  // SPEC §7/§12: L2 cache line = 512 B
  p.l2_ways = 16;
  // assumption: the L2 serves hits at about four times HBM bandwidth (on-die SRAM); no public
  // device figure.
  p.l2_bytes_per_cycle = 3460;
  // assumption: no device figure separates hit and miss latency; a hit pays the same first-beat
  // lead as a miss, so the L2 shows through bandwidth (hits do not draw on HBM) until calibrated.
  p.l2_hit_latency_cycles = 30;
  // assumption: 8 cross-core flag ids per direction per peer, as the intra-core event ids
  // (AscendC's CrossCoreSetFlag takes ids 0-15 shared by both directions).
  p.cross_flag_ids = 8;
  // assumption: a tile pipe rings 2 slots (double buffering between producer and consumer).
  p.tpipe_slots = 2;

  // Op families beyond the tutorial set. No public per-instruction figures: each is an
  // assumption relative to the measured binary / unary / exp / div classes above.
  p.vec_cmp = {2.1, 24};      // assumption: a compare reads two operands like a binary op
  p.vec_sel = {2.1, 24};      // assumption: a select streams two operands plus a mask like a binary op
  p.vec_bitwise = {2.1, 24};  // assumption: integer and/or/xor/shift issue like a binary op
  p.vec_trig = {8.0, 40};     // assumption: range reduction + polynomial, ~4 exp-class passes
  p.vec_gather = {8.0, 30};   // assumption: an indexed gather fetches 32 B blocks, ~8x a streamed repeat
  p.vec_sort = {4.0, 31};     // assumption: one sort32 / merge pass costs like a div pass
  // assumption: a scalar load/store to GM misses the scalar data cache and pays a DDR round
  // trip (~100 ns at 1.85 GHz); one to an on-chip buffer costs a few scalar cycles.
  p.scalar_gm_access_cycles = 185;
  p.scalar_ub_access_cycles = 4;
  return p;
}

}  // namespace pypto
