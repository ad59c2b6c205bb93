// Benchmark kernel: `n` tiny vector instructions (an [1, 8] fp32 TADDS), to measure how fast
// the core model records instructions when the numerics cost nothing.
#include <pypto/kernel.hpp>

using namespace pypto;

extern "C" void kernel_entry(__gm__ int64_t* args) {
  const int64_t n = arg_i64(args, 0);
  VecTile<float, 1, 8> x(0), y(32);
  TEXPANDS(x, 1.0);
  for (int64_t i = 0; i < n; ++i) TADDS(y, x, 0.5);
}
