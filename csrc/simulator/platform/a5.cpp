// a5 simulator table: the a2a3 table with the differences SPEC.md §6 and §12 list.
#include "simulator/platform/platform.hpp"

namespace pypto {

Platform make_a5sim() {
  Platform p = make_a2a3sim();
  p.name = "a5sim";
  p.device = "a5";
  p.aic_cores = 36;                  // SPEC §6: 36 AIC
  p.aiv_cores = 72;                  // SPEC §6: 72 AIV
  p.ub_physical_bytes = 248 * 1024;  // assumption: same 8 KiB reserve as a2a3
  p.ub_bytes = 240 * 1024;           // SPEC §6: 240 KiB usable
  p.l0c_bytes = 256 * 1024;          // SPEC §6/§12: L0C 256 KiB
  p.bias_bytes = 4 * 1024;           // SPEC §6: 4 KiB
  p.gm_burst_bytes = 128;            // SPEC §12: GM granularity 128 B
  p.recommended_transfer_bytes = 128;  // SPEC §7: PH001 threshold on a5
  p.vec_mat_routes = 1;                // SPEC §6: a5 adds Vec->Mat and Acc->Vec
  // SPEC §12: fp32 matmul takes 8 passes per fractal on a5.
  p.cube_cpr_fp32 = 8;
  // assumption: a5's memory system scales with its core count (36 / 24 of a2a3's HBM
  // bandwidth); L2 size, lines and latencies as a2a3 until public figures exist.
  p.hbm_bytes_per_cycle = 865.0 * 36 / 24;
  p.l2_bytes_per_cycle = 3460.0 * 36 / 24;
  return p;
}

}  // namespace pypto
