// Hand-written backing of the seed's my_kernel(x: [128, 128] fp16, out: Out[[128, 128] fp16]):
// out = x * 2 + 1, in two 64-row halves through ping-pong buffers.
#include <pypto/kernel.hpp>

using namespace pypto;

extern "C" void kernel_entry(__gm__ int64_t* args) {
  Tensor x = arg_tensor(args, 0), out = arg_tensor(args, 1);
  using T = VecTile<half, 64, 128>;
  const T buf[2] = {T(0), T(T::kBytes)};
  for (int i = 0; i < 2; ++i) {
    const T& t = buf[i];
    PYPTO_LOC("my_kernel.cpp:14");
    TLOAD(t, x, i * 64, 0);
    set_flag(PIPE_MTE2, PIPE_V, i);
    wait_flag(PIPE_MTE2, PIPE_V, i);
    TMULS(t, t, 2.0);
    TADDS(t, t, 1.0);
    set_flag(PIPE_V, PIPE_MTE3, i);
    wait_flag(PIPE_V, PIPE_MTE3, i);
    TSTORE(out, i * 64, 0, t);
  }
}
