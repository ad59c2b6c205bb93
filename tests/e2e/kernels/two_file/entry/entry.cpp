// Two-file kernel: out = x * 3 + kOffset, the arithmetic lives in ../common/scale.hpp.
#include <pypto/kernel.hpp>

#include "../common/scale.hpp"

using namespace pypto;

extern "C" void kernel_entry(__gm__ int64_t* args) {
  Tensor x = arg_tensor(args, 0), out = arg_tensor(args, 1);
  VecTile<float, 32, 64> t(0);
  TLOAD(t, x, 0, 0);
  set_flag(PIPE_MTE2, PIPE_V, EVENT_ID0);
  wait_flag(PIPE_MTE2, PIPE_V, EVENT_ID0);
  scale_and_offset(t);
  set_flag(PIPE_V, PIPE_MTE3, EVENT_ID0);
  wait_flag(PIPE_V, PIPE_MTE3, EVENT_ID0);
  TSTORE(out, 0, 0, t);
}
