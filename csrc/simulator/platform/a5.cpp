// a5 simulator table: the a2a3 table with its differences; sources as in a2a3.cpp, each
// figure listed in docs/hardware.md.
#include "simulator/platform/platform.hpp"

namespace pypto {

Platform make_a5sim() {
  Platform p = make_a2a3sim();
  p.name = "a5sim";
  p.device = "a5";
  p.aic_cores = 36;                  // upstream PyPTO (950 SoC): 36 AIC
  p.aiv_cores = 72;                  // upstream PyPTO: 72 AIV
  p.ub_physical_bytes = 248 * 1024;  // upstream PyPTO: 248 KiB physical
  p.ub_bytes = 240 * 1024;           // upstream PyPTO: 240 KiB usable
  p.l0c_bytes = 256 * 1024;          // upstream PyPTO: L0C 256 KiB
  p.bias_bytes = 4 * 1024;           // upstream PyPTO: 4 KiB
  p.gm_burst_bytes = 128;            // upstream PyPTO: GM granularity 128 B
  p.recommended_transfer_bytes = 128;  // upstream PyPTO: PH001 threshold on a5
  p.vec_mat_routes = 1;                // upstream PyPTO: a5 adds Vec->Mat, Acc->Vec
  // Public a5 figure (no primary document linked; a calibration value, docs/hardware.md):
  // fp32 matmul takes 8 passes per fractal on a5.
  p.cube_cpr_fp32 = 8;
  // assumption: a5's memory system scales with its core count (36 / 24 of a2a3's HBM
  // bandwidth); L2 size, lines and latencies as a2a3 until public figures exist.
  p.hbm_bytes_per_cycle = 865.0 * 36 / 24;
  p.l2_bytes_per_cycle = 3460.0 * 36 / 24;
  return p;
}

}  // namespace pypto
