// a2a3 (Ascend 910B-class) simulator table. Each figure names its public source (listed
// with every figure in docs/hardware.md): "upstream PyPTO" = the public PyPTO backend's SoC
// description and backend handlers, "device sweeps" = per-core a2a3 measurements; anything
// else is marked "assumption" with the reasoning.
#include "simulator/platform/platform.hpp"

namespace pypto {

Platform make_a2a3sim() {
  Platform p;
  p.name = "a2a3sim";
  p.device = "a2a3";
  p.clock_hz = 1.85e9;  // device sweeps: 1.85 GHz AI core clock
  p.aic_cores = 24;     // upstream PyPTO (910B SoC): 24 AIC
  p.aiv_cores = 48;     // upstream PyPTO: 48 AIV (clusters of 1 AIC + 2 AIV)
  p.ub_physical_bytes = 192 * 1024;  // upstream PyPTO: 192 KiB UB physical
  p.ub_bytes = 184 * 1024;           // upstream PyPTO: top 8 KiB reserved
  p.l1_bytes = 512 * 1024;           // upstream PyPTO
  p.l0a_bytes = 64 * 1024;           // upstream PyPTO
  p.l0b_bytes = 64 * 1024;           // upstream PyPTO
  p.l0c_bytes = 128 * 1024;          // upstream PyPTO
  p.bias_bytes = 1024;               // upstream PyPTO
  p.alignment_bytes = 32;            // Ascend C docs: addresses 32-byte aligned
  p.gm_burst_bytes = 512;            // upstream PyPTO: GM granularity 512 B
  // assumption: one cycle per burst request. With it a weight-load-bound matmul whose GM->Mat
  // rows are 128 B runs ~19% slower than with 512 B rows (benchmarks/bench_granularity.py;
  // the PyPTO user guide reports 16-25% on the device).
  p.gm_burst_overhead_cycles = 1.0;
  // assumption: fixed per-transfer cost (descriptor issue + first-beat latency); makes small
  // transfers fall below peak as the device sweeps show.
  p.transfer_setup_cycles = 30;
  p.bw_gm_to_ub = 59;    // device sweeps: GM->UB ~59 B/cycle
  p.bw_gm_to_l1 = 78;    // device sweeps: GM->L1 ~78 B/cycle
  p.bw_ub_to_gm = 109;   // device sweeps: UB->GM ~109 B/cycle
  p.bw_l1_to_l0a = 130;  // upstream PyPTO (MTE1 sweep): ~130 B/cycle
  p.bw_l1_to_l0b = 85;   // upstream PyPTO (MTE1 sweep): ~85 B/cycle
  p.bw_l0c_to_gm = 41;   // device sweeps: L0C->GM ~41 B/cycle
  p.bw_ub_to_ub = 128;   // assumption: a UB->UB copy moves half a repeat per cycle
  p.vector_repeat_bytes = 256;      // Ascend C docs: one repeat is 256 B
  p.vec_binary = {2.1, 24};         // device sweeps: binary fp32 ~2.1 cycles/repeat + 24
  p.vec_unary = {1.0, 23};          // device sweeps: unary / scalar-op ~1 cycle/repeat + 23
  p.vec_exp = {2.0, 31};            // device sweeps: exp ~2/repeat + 31 (log, sqrt alike: assumption)
  p.vec_div = {4.0, 31};            // device sweeps: div ~4/repeat + 31 (recip alike: assumption)
  p.vec_reduce = {1.0, 23};         // assumption: a row reduction streams like a unary op...
  p.reduce_per_row_cycles = 2;      // assumption: ...plus a final in-register fold per row
  p.vec_cvt = {1.0, 23};            // assumption: conversions cost like unary ops
  p.cube_base_cycles = 21;          // upstream PyPTO: mad ~21 + cpr * fractals
  p.cube_cpr_16bit = 1;             // upstream PyPTO: cpr 1 for 16-bit inputs
  p.cube_cpr_fp32 = 2;              // upstream PyPTO: cpr 2 for fp32
  p.fixpipe_base_cycles = 164;      // upstream PyPTO (FIXPIPE sweep): ~164 cycles
  p.fixpipe_per_row_cycles = 4.45;  // upstream PyPTO: + ~4.45 cycles per row
  p.sync_cycles = 1;                // device sweeps: set/wait_flag/barrier ~1
  p.scalar_issue_cycles = 1;        // assumption: the scalar unit issues one instruction per cycle
  p.event_ids = 8;                  // assumption: 8 event ids per pipe pair (AscendC EVENT_ID0-7)
  p.task_dispatch_cycles = 0.8e-6 * 1.85e9;  // device sweeps: ~0.8 us per task
  p.recommended_transfer_bytes = 512;        // upstream PyPTO: PH001 threshold on a2a3
  p.vec_mat_routes = 0;                      // upstream PyPTO: no Vec->Mat / Acc->Vec
  // Vendor spec sheets for 910B-class parts: 64 GB HBM2e at about 1.6 TB/s, i.e.
  // 1.6e12 / 1.85e9 = ~865 B/cycle shared by every core.
  p.hbm_bytes_per_cycle = 865;
  // Public die analyses of 910B-class parts: 192 MB of L2. assumption: 16-way LRU.
  p.l2_bytes = int64_t{192} << 20;
  p.l2_line_bytes = 512;  // upstream PyPTO, PyPTO user guide: L2 line = 512 B
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
