// Benchmark kernel: loads one [R, C] tile of a (and of b), then applies one vector op `reps`
// times on-chip. Host time per rep is the ISA library's speed on R*C elements.
// args: a, b, out (tensors); kind (0 binary, 1 unary, 2 scalar, 3 cvt, 4 rowsum), op, reps.
#include <pypto/kernel.hpp>

using namespace pypto;

namespace {
Tile tile_for(Tensor t, int64_t addr) {
  return Tile(Mem::Vec, static_cast<DType>(t.desc->dtype), static_cast<int32_t>(t.rows()),
              static_cast<int32_t>(t.cols()), addr);
}
}  // namespace

extern "C" void kernel_entry(__gm__ int64_t* args) {
  Tensor a = arg_tensor(args, 0), b = arg_tensor(args, 1), out = arg_tensor(args, 2);
  const int64_t kind = arg_i64(args, 3), op = arg_i64(args, 4), reps = arg_i64(args, 5);
  const int64_t bytes = a.rows() * a.cols() * 4;
  Tile ta = tile_for(a, 0), tb = tile_for(b, bytes), to = tile_for(out, 2 * bytes);
  Tile tsum(Mem::Vec, DType::FP32, static_cast<int32_t>(a.rows()), 1, 3 * bytes);
  TLOAD(ta, a, 0, 0);
  TLOAD(tb, b, 0, 0);
  pipe_barrier(PIPE_ALL);
  for (int64_t r = 0; r < reps; ++r) {
    switch (kind) {
      case 0: pypto_tbinary(static_cast<int32_t>(op), &to, &ta, &tb); break;
      case 1: pypto_tunary(static_cast<int32_t>(op), &to, &ta); break;
      case 2: pypto_tbinary_scalar(static_cast<int32_t>(op), &to, &ta, 1.5); break;
      case 3: pypto_tcvt(&to, &ta, 0); break;
      case 4: TROWSUM(tsum, ta, tb); break;
      default: break;
    }
  }
}
