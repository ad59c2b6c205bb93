// a5 simulator table: the a2a3 table with its differences; sources as in a2a3.cpp, each
// figure listed in docs/hardware.md. No device sweep of a5 is public: the L1->L0, MAD and
// FIXPIPE figures are upstream PyPTO's Backend950 L0CostModel, fitted on a5 simulator sweeps
// (another simulator's model, the third tier of evidence).
#include "simulator/platform/platform.hpp"

namespace pypto {

Platform make_a5sim() {
  Platform p = make_a2a3sim();
  p.name = "a5sim";
  p.device = "a5";
  p.aic_cores = 36;                      // upstream PyPTO (950 SoC): 36 AIC
  p.aiv_cores = 72;                      // upstream PyPTO: 72 AIV
  p.ub_physical_bytes = 248 * 1024;      // upstream PyPTO: 248 KiB physical
  p.ub_bytes = 240 * 1024;               // upstream PyPTO: 240 KiB usable
  p.l0c_bytes = 256 * 1024;              // upstream PyPTO: L0C 256 KiB
  p.bias_bytes = 4 * 1024;               // upstream PyPTO: 4 KiB
  p.gm_burst_bytes = 128;                // upstream PyPTO: GM granularity 128 B
  p.recommended_transfer_bytes = 128;    // upstream PyPTO: PH001 threshold on a5
  p.vec_mat_routes = 1;                  // upstream PyPTO: a5 adds Vec->Mat, Acc->Vec
  p.bw_l1_to_l0a = 206.3;                // upstream PyPTO Backend950 L0CostModel (a5-sim fit)
  p.bw_l1_to_l0b = 223.8;                // upstream PyPTO Backend950 L0CostModel (a5-sim fit)
  p.cube_base_cycles = 25;               // upstream PyPTO Backend950 L0CostModel: mad_head 25
  p.cube_cpr_fp32 = 8;                   // upstream PyPTO Backend950 L0CostModel: 8 fp32 passes
  p.fixpipe_base_cycles = 343.4;         // upstream PyPTO Backend950 L0CostModel: drain_fixed
  p.fixpipe_per_row_cycles = 4.59;       // upstream PyPTO Backend950 L0CostModel: drain_row
  p.fixpipe_drain_bytes_per_cycle = 30;  // upstream PyPTO Backend950 L0CostModel: bw_drain
  p.fixpipe_misalign_cycles = 0.26;      // upstream PyPTO Backend950 L0CostModel: drain_penalty
  // upstream PyPTO Backend950 L0CostModel: the FIXPIPE data phase runs at the drain rate.
  p.bw_l0c_to_gm = 30;
  p.bw_l0c_to_l1 = 30;  // upstream PyPTO Backend950 L0CostModel (Acc->Mat drains alike)
  // assumption: a5's memory system scales with its core count (36 / 24 of a2a3's HBM
  // bandwidth); L2 size, lines and latencies as a2a3 until public figures exist.
  p.hbm_bytes_per_cycle = 865.0 * 36 / 24;  // assumption: (above) scaled by core count
  p.l2_bytes_per_cycle = 3460.0 * 36 / 24;  // assumption: (above) scaled by core count
  return p;
}

}  // namespace pypto
