// c = a + b over [R, 128] fp32 tensors, 32 rows at a time, double-buffered: while tile i is
// added (VECTOR) and stored (MTE3), tile i+1 is already loading (MTE2).
#include <pypto/kernel.hpp>

using namespace pypto;

extern "C" void kernel_entry(__gm__ int64_t* args) {
  Tensor a = arg_tensor(args, 0), b = arg_tensor(args, 1), c = arg_tensor(args, 2);
  constexpr int TR = 32, TC = 128;
  using T = VecTile<float, TR, TC>;
  // Per buffer k: a at 3k, b at 3k+1, the sum at 3k+2 (in units of one tile).
  auto tile = [](int k, int which) { return T((3 * k + which) * T::kBytes); };
  set_flag(PIPE_MTE3, PIPE_MTE2, EVENT_ID0);
  set_flag(PIPE_MTE3, PIPE_MTE2, EVENT_ID1);
  for (int64_t i = 0; i < a.rows() / TR; ++i) {
    const int k = static_cast<int>(i % 2);
    T x = tile(k, 0), y = tile(k, 1), z = tile(k, 2);
    PYPTO_LOC("tile_add.cpp:19");
    wait_flag(PIPE_MTE3, PIPE_MTE2, k);
    TLOAD(x, a, i * TR, 0);
    TLOAD(y, b, i * TR, 0);
    set_flag(PIPE_MTE2, PIPE_V, k);
    wait_flag(PIPE_MTE2, PIPE_V, k);
    PYPTO_LOC("tile_add.cpp:25");
    TADD(z, x, y);
    set_flag(PIPE_V, PIPE_MTE3, k);
    wait_flag(PIPE_V, PIPE_MTE3, k);
    PYPTO_LOC("tile_add.cpp:29");
    TSTORE(c, i * TR, 0, z);
    set_flag(PIPE_MTE3, PIPE_MTE2, k);
  }
  wait_flag(PIPE_MTE3, PIPE_MTE2, EVENT_ID0);
  wait_flag(PIPE_MTE3, PIPE_MTE2, EVENT_ID1);
}
