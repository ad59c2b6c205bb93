// The "pto-isa" cost profile: the constants of pto-isa's a2a3 cost model (public in
// hw-native-sys/pto-isa, include/pto/costmodel: the arch table kA2A3ArchConfig, the CCE
// intrinsic cost table and the formula backend), so that our per-instruction cycles can be
// compared with that simulator's. Same formulas as the device profile (cost_model.hpp), except
// where a field selects pto-isa's rule (each with its source below: the L0C -> GM price, the row
// reductions, a cross-core sync holding the issue). Bandwidths there are GiB/s at 1.85 GHz:
// B/cycle = GiB/s * 2^30 / 1.85e9.
#include "simulator/platform/platform.hpp"

namespace pypto {
namespace {

double per_cycle(double gib_per_s) { return gib_per_s * 1073741824.0 / 1.85e9; }

}  // namespace

Platform apply_pto_isa_profile(Platform p) {
  p.cost_profile = "pto-isa";
  p.transfer_setup_cycles = 0;        // pto-isa: a transfer is bytes / bandwidth, no lead
  p.l2_hit_latency_cycles = 0;        // pto-isa: no lead on a hit either
  p.gm_request_cycles = 0;            // pto-isa: no per-request cost (no short-row penalty)
  p.bw_gm_to_ub = per_cycle(100.9);   // pto-isa kA2A3ArchConfig GM_TO_UB
  p.bw_gm_to_l1 = per_cycle(135.0);   // pto-isa kA2A3ArchConfig GM_TO_L1
  p.bw_ub_to_gm = per_cycle(188.46);  // pto-isa kA2A3ArchConfig UB_TO_GM
  p.bw_ub_to_ub = per_cycle(1024.0);  // pto-isa kA2A3ArchConfig UB_TO_UB
  p.bw_l0c_to_gm = per_cycle(70.0);   // pto-isa kA2A3ArchConfig L0C_TO_GM
  p.bw_l0c_to_l1 = per_cycle(128.0);  // pto-isa kA2A3ArchConfig L0C_TO_L1
  p.bw_l1_to_l0a = per_cycle(441.0);  // pto-isa kA2A3ArchConfig L1_TO_L0A
  p.bw_l1_to_l0b = per_cycle(220.5);  // pto-isa kA2A3ArchConfig L1_TO_L0B
  // pto-isa's FIXPIPE is bytes / L0C bandwidth: no fixed drain, no row floor, no misalignment.
  p.fixpipe_base_cycles = 0;              // pto-isa: no drain lead
  p.fixpipe_per_row_cycles = 0;           // pto-isa: no row floor
  p.fixpipe_drain_bytes_per_cycle = 1e6;  // pto-isa: no drain throughput term (never binds)
  p.fixpipe_misalign_cycles = 0;          // pto-isa: no misalignment term
  // pto-isa's copy_matrix_cc_to_gm prices rows x cols x 2 bytes whatever the output dtype
  // (a2a3/cce_costmodel/cce_costmodel_memory.hpp, the L0C -> GM copy): an fp32 store costs half
  // its bytes' worth, which its Perf-Sim GEMM traces show (a 128x256 fp32 store: 1614 cycles).
  p.fixpipe_gm_priced_elem_bytes = 2;
  // pto-isa's img2colv2_cbuf_to_ca prices stepK x stepM x 2 bytes whatever the dtype
  // (a2a3/cce_costmodel/cce_costmodel_memory.hpp lines 163-171 at f35e7f60): an fp32 window
  // costs half its bytes' worth, an int8 one twice.
  p.img2col_priced_elem_bytes = 2;
  // pto-isa CCE table (a2a3/cce_costmodel/cce_costmodel_vector_compute.hpp at f35e7f60, the
  // revision whose Perf-Sim benchmarks/peer_perfsim.py runs; its 910B3-calibrated rows), vector
  // stream model: head + tail paid at stream start, slope per repeat.
  p.vec_binary = {2, 25};   // pto-isa vmul: head 10 + tail 15, slope 2 (vsub/vmax/vmin: tail 14)
  p.vec_unary = {1, 31};    // pto-isa vadds: head 13 + tail 18, slope 1 (vabs/vmuls/vmins alike)
  p.vec_add = {2, 24};      // pto-isa vadd: head 10 + tail 14, slope 2
  p.vec_copy = {1, 24};     // pto-isa vcopy / vector_dup: head 11 + tail 13, slope 1
  p.vec_exp = {2, 31};      // pto-isa vexp: head 13 + tail 18, slope 2
  p.vec_div = {4, 30};      // pto-isa vdiv: head 11 + tail 19, slope 4
  p.vec_cvt = {1, 27};      // pto-isa vconv (910B3 calibration): head 14 + tail 13, slope 1
  p.vec_cmp = {2, 36};      // pto-isa vcmpv_ge / vcmpv_ne: head 14 + tail 22, slope 2
  p.vec_sel = {2, 27};      // pto-isa vsel: head 13 + tail 14, slope 2
  p.vec_bitwise = {2, 20};  // pto-isa vand / vor: head 8 + tail 12, slope 2
  p.vec_gather = {2, 6};    // pto-isa vgather: the default head 6, slope 2
  p.vec_sort = {2, 6};      // pto-isa default head 6, slope 2 (TSORT32 / TMRGSORT: sort_steps)
  p.vec_reduce = {7, 46};   // pto-isa vcadd: head 14 + tail 32, slope 7
  p.reduce_per_row_cycles = 0;  // pto-isa: a reduction is its vcadd repeats only
  // A row reduction as pto-isa expands it (include/pto/npu/a2a3/TRowReduceOps.hpp at f35e7f60:
  // the [64, 128] / [32, 256] / [16, 512] / [8, 1024] fp32 sequences, lines 36-111, else the
  // generic path, lines 259-319), each step priced by the CCE table (a2a3/cce_costmodel/ at
  // f35e7f60; vector_compute.hpp unless named) and followed by a pipe_barrier.
  p.row_reduce.enabled = true;         // pto-isa: the expansion above
  p.row_reduce.group_sum = {1, 38};    // pto-isa vcgadd: head 14 + tail 24, slope 1 (line 99)
  p.row_reduce.group_max = {1, 31};    // pto-isa vcgmax / vcgmin: 14 + 17, slope 1 (line 105)
  p.row_reduce.fold_sum = {2, 24};     // pto-isa vadd: head 10 + tail 14, slope 2 (line 46)
  p.row_reduce.fold_max = {2, 24};     // pto-isa vmax / vmin: 10 + 14, slope 2 (lines 207, 226)
  p.row_reduce.last_sum = {7, 46};     // pto-isa vcadd: head 14 + tail 32, slope 7 (line 93)
  p.row_reduce.last_max = {2, 6};      // pto-isa vcmax / vcmin: default head 6, slope 2 (line 118)
  p.row_reduce.count_mode_floor = 16;  // pto-isa kCountModeFloorCycles (core.hpp line 179)
  p.row_reduce.mask_write = 1;         // pto-isa set_mask_count etc. (sync.hpp lines 115-161)
  p.row_reduce.barrier = 1;            // pto-isa pto_costmodel_pipe_barrier (sync.hpp line 27)
  // TSORT32 and TMRGSORT as pto-isa expands them (include/pto/npu/a2a3/TSort32.hpp at f35e7f60,
  // lines 80-84: a vbitsort per row, then pipe_barrier; TMrgSort.hpp lines 70-76 and 97-103: the
  // lists form's vmrgsort4 into tmp, then MovUb2Ub's pipe_barrier and copy_ubuf_to_ubuf; lines
  // 139-163: the four-run form's one vmrgsort4 of a repeat per group), each step priced by the
  // CCE table (a2a3/cce_costmodel/cce_costmodel_vector_compute.hpp at f35e7f60).
  p.sort_steps.enabled = true;
  p.sort_steps.bitsort = {16, 20};  // pto-isa vbitsort: head 20, slope 16 (910B3 fit, line 76)
  p.sort_steps.merge4 = {78, 20};   // pto-isa vmrgsort4: head 20, slope 78 (910B3 fit, line 238)
  p.sort_steps.barrier = 1;         // pto-isa pto_costmodel_pipe_barrier (sync.hpp line 27)
  // TGATHER's mask form (TGather.hpp lines 112-125: set_mask_count, set_vector_mask, vreducev2
  // with a repeat per row, set_mask_norm, set_vector_mask).
  p.sort_steps.reduce_v2 = {14, 34};  // pto-isa vreducev2: head 14 + tail 20, slope 14 (line 288)
  p.sort_steps.mask_write = 1;        // pto-isa set_mask_count etc. (sync.hpp lines 115-161)
  p.cube_base_cycles = 6;             // pto-isa formula backend TryEstimateMadCycles: head 6
  p.cube_cpr_16bit = 1;               // pto-isa formula backend: 1 cycle per fractal for fp16
  p.cube_cpr_fp32 = 2;                // pto-isa formula backend: 2 cycles per fractal for fp32
  // pto-isa's Perf-Sim queues a set_flag / wait_flag as a zero-length SIGNAL / WAIT entry on its
  // pipe (perf_sim/pipe_model_sim_impl.inl, PushSignalEntry / PushWaitEntry): a flag takes no pipe
  // time, so a consumer starts on the cycle its producer ends. (Its CCE layer's EstimateConstCycles
  // charges a flag 1 cycle, but only inside an instruction's own trace, never on a kernel's pipe.)
  p.sync_cycles = 0;
  // pto-isa Perf-Sim: TPUSH / TPOP / TALLOC / TFREE are Scalar-stage instructions
  // (perf_sim/latency.hpp line 45) in one FIFO Scalar queue (only a queue's front entry starts:
  // pipe_model_sim_impl.inl TryDispatchSingleCore, lines 105-125); a push waits for the end of
  // the last FIXPIPE (cube to vector) or MTE3 (vector to cube) instruction before it and a pop
  // for its push (pipe_model_queue_impl.inl AttachPopWaits / AttachPushWaits, lines 314-341);
  // every later instruction with no cross-pipe data dependency waits for the latest Scalar
  // instruction (perf_sim/tile_dep_tracker.hpp lines 80-90, "Scalar fallback"). So a
  // cross-core sync holds the core's issue until it has passed.
  p.cross_sync_holds_issue = 1;
  // pto-isa prices a GM <-> UB / L1 copy (copy_gm_to_ubuf_*, copy_gm_to_cbuf*, copy_ubuf_to_gm_*:
  // a2a3/cce_costmodel/cce_costmodel_memory.hpp) by EstimateBandwidthCycles, which truncates
  // bytes / bandwidth to whole cycles (a2a3/cce_costmodel/cce_costmodel_core.hpp lines 90-91,
  // the static_cast<uint64_t>), and a TLOAD / TSTORE is that one copy: its Perf-Sim traces show
  // 279 cycles for a 16 KiB load to UB (279.8), 418 for 32 KiB to L1 (418.2), 74 and 9 for 8 KiB
  // and 1 KiB stores (74.9, 9.4). An Acc -> GM store and the L1 -> L0 moves keep the round-up:
  // their traces are one cycle over the truncated copy (807 for 806.5, 129 for 128.02).
  p.gm_transfer_rounds_down = 1;
  // Perf-Sim times one kernel from its first instruction: no head before a core's task; between
  // dependent tasks the profile keeps the device sweeps' whole 0.8 us pickup (pto-isa has no
  // figure for it).
  p.task_dispatch_cycles = 0.8e-6 * 1.85e9;  // device sweeps: the whole pickup (pto-isa: none)
  p.task_head_cycles = 0;                    // pto-isa Perf-Sim: no head before a kernel
  p.task_cold_head_cycles = 0;               // pto-isa Perf-Sim: no head before a kernel
  p.hbm_efficiency = 1;                      // pto-isa Perf-Sim: no shared HBM limit (below)
  // Perf-Sim prices each core's transfers alone: its default bandwidth model caps no route by
  // a total shared between cores (arch_config.hpp at f35e7f60: HillBandwidthModel::BwEff, line
  // 236, caps only when a total is set; MakeFlatHillModel, line 253, sets none; line 300 makes
  // it the default), and it models an L2 only when a launch passes one (perf_sim/config.hpp
  // lines 45-46 and 76; cache_model.hpp line 44: no L2, the transfer's own duration), which
  // its tests do not. So the chip's shared HBM and L2 budgets never bind under this profile.
  p.hbm_bytes_per_cycle = 1e6;  // pto-isa Perf-Sim: no shared GM budget (never binds)
  p.l2_bytes_per_cycle = 1e6;   // pto-isa Perf-Sim: no L2 budget (never binds)
  return p;
}

}  // namespace pypto
