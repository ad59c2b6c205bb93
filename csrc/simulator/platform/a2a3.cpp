// a2a3 (Ascend 910B-class) simulator table, "device" cost profile. Every figure names its
// source (docs/hardware.md lists them; docs/calibration.md compares each instruction class
// with its reference figure). Evidence order: device measurements first ("device sweeps" =
// per-core a2a3 measurements published with upstream PyPTO and pto-isa; "upstream PyPTO
// L0CostModel" = its on-device MTE1 / FIXPIPE / MAD sweeps), then vendor documentation, then
// another simulator's model (pto-isa), then "assumption:" with the reasoning.
#include "simulator/platform/platform.hpp"

namespace pypto {

Platform make_a2a3sim() {
  Platform p;
  p.name = "a2a3sim";
  p.device = "a2a3";
  p.clock_hz = 1.85e9;               // device sweeps: 1.85 GHz AI core clock
  p.aic_cores = 24;                  // upstream PyPTO (910B SoC): 24 AIC
  p.aiv_cores = 48;                  // upstream PyPTO: 48 AIV (clusters of 1 AIC + 2 AIV)
  p.ub_physical_bytes = 192 * 1024;  // upstream PyPTO: 192 KiB UB physical
  p.ub_bytes = 184 * 1024;           // upstream PyPTO: top 8 KiB reserved
  p.l1_bytes = 512 * 1024;           // upstream PyPTO
  p.l0a_bytes = 64 * 1024;           // upstream PyPTO
  p.l0b_bytes = 64 * 1024;           // upstream PyPTO
  p.l0c_bytes = 128 * 1024;          // upstream PyPTO
  p.bias_bytes = 1024;               // upstream PyPTO
  p.alignment_bytes = 32;            // Ascend C docs: addresses 32-byte aligned
  p.gm_burst_bytes = 512;            // upstream PyPTO: GM access granularity 512 B
  // Fitted to the device: the PyPTO user guide measures 128 B weight rows 16-25% slower than
  // 512 B rows on a weight-load-bound matmul. Mechanism: MTE2 issues one GM request per
  // started 512 B burst of a row, one per 2.4 cycles, so a transfer takes max(bytes / bw,
  // requests x 2.4). A 512 B row carries 6.6 cycles of data per request (never request-bound);
  // a 128 B row carries 1.6 and is request-bound. The fixture of bench_granularity.py lands in
  // the band for 2.25..2.55; 2.4 puts it at ~20%, the middle (docs/calibration.md).
  p.gm_request_cycles = 2.4;
  // assumption: lead of a GM transfer before its first data beat (descriptor issue + HBM
  // first-beat latency, ~16 ns). No public device figure separates it from bandwidth; it makes
  // sub-KB transfers run below the swept peak. On-chip moves have no lead (the MTE1 sweep fits
  // bytes / bandwidth with R^2 0.993, upstream PyPTO L0CostModel).
  p.transfer_setup_cycles = 30;
  p.bw_gm_to_ub = 59;      // device sweeps: GM->UB 100.9 GiB/s = ~59 B/cycle
  p.bw_gm_to_l1 = 78;      // device sweeps: GM->L1 135 GiB/s = ~78 B/cycle
  p.bw_ub_to_gm = 109;     // device sweeps: UB->GM 188.46 GiB/s = ~109 B/cycle
  p.bw_l1_to_l0a = 129.7;  // upstream PyPTO L0CostModel: on-device MTE1 sweep (R^2 0.993)
  p.bw_l1_to_l0b = 85.4;   // upstream PyPTO L0CostModel: on-device MTE1 sweep
  // upstream PyPTO L0CostModel: the device FIXPIPE sweep (Acc->GM direct stores and Acc->Mat
  // drains) fits the drain model below; its byte throughput is 118 B/cycle of L0C. The data
  // phase runs at that rate too (pto-isa's 70 GiB/s = 41 B/cycle disagrees; the sweep wins).
  p.bw_l0c_to_gm = 118;
  p.bw_l0c_to_l1 = 118;  // upstream PyPTO L0CostModel: same sweep (Mat-scratch drains)
  // pto-isa a2a3 arch table: UB_TO_UB 1024 GiB/s (no device figure; no ISA op prices by it
  // today, UB->UB copies run as vector instructions).
  p.bw_ub_to_ub = 594;
  p.vector_repeat_bytes = 256;  // Ascend C docs: one repeat is 256 B
  // Vector classes: cycles = base + per_repeat * repeats. The base (start-up latency) is paid
  // once per run of back-to-back vector instructions (cost_model.hpp); device sweeps measure
  // single instructions, i.e. base + slope.
  p.vec_binary = {2.1, 24};     // device sweeps: binary fp32 ~2.1 cycles/repeat + 24
  p.vec_unary = {1.0, 23};      // device sweeps: unary / scalar-op ~1 cycle/repeat + 23
  p.vec_exp = {2.0, 31};        // device sweeps: exp ~2/repeat + 31 (log, sqrt alike: assumption)
  p.vec_div = {4.0, 31};        // device sweeps: div ~4/repeat + 31 (recip alike: assumption)
  p.vec_reduce = {1.0, 23};     // assumption: a row reduction streams like a unary op...
  p.reduce_per_row_cycles = 2;  // assumption: ...plus a final in-register fold per row
  p.vec_cvt = {1.0, 23};        // assumption: conversions cost like unary ops
  p.vec_add = {2.1, 24};        // device sweeps: add is one of the binary fp32 ops swept
  p.vec_copy = {1.0, 23};       // device sweeps: copies / fills are unary ops (~1/repeat + 23)
  p.cube_base_cycles = 21;      // upstream PyPTO L0CostModel: mad 21 + cpr * fractals (device)
  p.cube_cpr_16bit = 1;         // upstream PyPTO L0CostModel: cpr 1 for 16-bit inputs
  p.cube_cpr_fp32 = 2;          // upstream PyPTO L0CostModel: cpr 2 for fp32 (mad_fp32_passes)
  p.fixpipe_base_cycles = 164;  // upstream PyPTO L0CostModel: drain_fixed 164 (device sweep)
  p.fixpipe_per_row_cycles = 4.45;        // upstream PyPTO L0CostModel: row floor (device)
  p.fixpipe_drain_bytes_per_cycle = 118;  // upstream PyPTO L0CostModel: bw_drain (device)
  p.fixpipe_misalign_cycles = 2.6;        // upstream PyPTO L0CostModel: drain_penalty (device)
  p.fixpipe_c0_bytes = 32;                // upstream PyPTO L0CostModel: NZ fractal C0 = 32 B
  // upstream PyPTO L0CostModel (device FIXPIPE sweep): a store to GM moves the bytes it writes
  // at bw_drain, so its data phase is priced at those bytes (0), not a fixed element size.
  p.fixpipe_gm_priced_elem_bytes = 0;
  // assumption: an img2col load moves its window's bytes through MTE1 at the L1 -> L0A rate,
  // as an L0A extract does (no device figure for img2col is public), so it is priced at them.
  p.img2col_priced_elem_bytes = 0;
  // assumption: a cross-core flag waits on the pipe it names and holds only that pipe, like
  // every flag here (no device figure separates a cross-core wait's effect on issue).
  p.cross_sync_holds_issue = 0;
  // assumption: a transfer's cost is rounded up to whole cycles, like every cost here (a pipe
  // is busy for the whole cycle its last beat lands in).
  p.gm_transfer_rounds_down = 0;
  // device sweeps: set/wait_flag/barrier ~1 cycle, which is the scalar issue slot every
  // instruction pays (scalar_issue_cycles); the flag itself occupies no pipe.
  p.sync_cycles = 0;
  p.scalar_issue_cycles = 1;  // assumption: the scalar unit issues one instruction per cycle
  p.event_ids = 8;            // assumption: 8 event ids per pipe pair (AscendC EVENT_ID0-7)
  // Task dispatch. Device runs: a2a3 swimlanes of the simpler runtime (hw-native-sys/simpler,
  // docs/investigations/2026-06-aicore-cold-start-warmup.md: 72 cores, dispatch-to-start per
  // task) give a core's head overhead: 2.61 us mean for the first task a core runs, 0.23-0.39 us
  // (mean 0.323) for the next ones. The device sweeps' ~0.8 us pickup of a dependent task is
  // the runtime noticing the producer's end plus that steady head: 1480 - 598 cycles.
  p.task_head_cycles = 598;            // device runs (simpler): 0.323 us steady head x 1.85 GHz
  p.task_cold_head_cycles = 4829;      // device runs (simpler): 2.61 us first-task head
  p.task_dispatch_cycles = 882;        // device sweeps: 0.8 us pickup (1480) less the steady head
  p.recommended_transfer_bytes = 512;  // upstream PyPTO: PH001 threshold on a2a3
  p.vec_mat_routes = 0;                // upstream PyPTO: no Vec->Mat / Acc->Vec
  // Vendor spec sheets for 910B-class parts: 64 GB HBM2e at about 1.6 TB/s, i.e.
  // 1.6e12 / 1.85e9 = ~865 B/cycle shared by every core.
  p.hbm_bytes_per_cycle = 865;
  // Device runs of memory-bound a2a3 decode kernels (hw-native-sys/pypto-lib history):
  // the CANN FAI decode attention streams 218.8 MB of KV cache (batch 16, 3338 tokens, 8 KV heads
  // of 128, bf16) in ~235 us at 98% core occupancy, 0.93 TB/s (58% of 1.6); the Qwen3-14B
  // down_proj's 20 cube tasks stream 8.9 MB of weights each in ~180 us, 0.99 TB/s (62%) if the
  // 20 run side by side (24 AIC cores hold them). Each core asks far less than its port
  // (~21 B/cycle of 78), so the shared limit is what binds.
  p.hbm_efficiency = 0.6;
  // Public die analyses of 910B-class parts: 192 MB of L2. assumption: 16-way LRU.
  p.l2_bytes = int64_t{192} << 20;  // public die analyses: 192 MB
  p.l2_line_bytes = 512;            // upstream PyPTO, PyPTO user guide: L2 line = 512 B
  p.l2_ways = 16;                   // assumption: 16-way (no public figure); LRU replacement
  // assumption: the L2 serves hits at about four times HBM bandwidth (on-die SRAM); no public
  // device figure.
  p.l2_bytes_per_cycle = 3460;
  // assumption: a transfer whose lines all hit skips the HBM access and starts after half the
  // miss lead (descriptor issue + on-die first beat); no device figure separates the two.
  p.l2_hit_latency_cycles = 15;
  // assumption: 8 cross-core flag ids per direction per peer, as the intra-core event ids
  // (AscendC's CrossCoreSetFlag takes ids 0-15 shared by both directions).
  p.cross_flag_ids = 8;
  // assumption: a tile pipe rings 2 slots (double buffering between producer and consumer).
  p.tpipe_slots = 2;

  // Op families beyond the tutorial set. No public per-instruction device figures: each is an
  // assumption relative to the measured binary / unary / exp / div classes above.
  p.vec_cmp = {2.1, 24};  // assumption: a compare reads two operands like a binary op
  p.vec_sel = {2.1, 24};  // assumption: a select streams two operands plus a mask like a binary op
  p.vec_bitwise = {2.1, 24};  // assumption: integer and/or/xor/shift issue like a binary op
  p.vec_trig = {8.0, 40};     // assumption: range reduction + polynomial, ~4 exp-class passes
  p.vec_gather = {8.0,
                  30};  // assumption: an indexed gather fetches 32 B blocks, ~8x a streamed repeat
  p.vec_sort = {4.0, 31};  // assumption: one sort32 / merge pass costs like a div pass
  // assumption: a scalar load/store to GM misses the scalar data cache and pays a DDR round
  // trip (~100 ns at 1.85 GHz); one to an on-chip buffer costs a few scalar cycles.
  p.scalar_gm_access_cycles = 185;  // assumption: (above) a DDR round trip
  p.scalar_ub_access_cycles = 4;    // assumption: (above) a few scalar cycles
  return p;
}

}  // namespace pypto
