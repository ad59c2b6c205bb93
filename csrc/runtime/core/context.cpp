#include "runtime/core/context.hpp"

#include <algorithm>

#include "simulator/errors.hpp"

namespace pypto {
namespace {
thread_local CoreContext* g_current = nullptr;
}

const char* mem_name(int mem) {
  static const char* names[] = {"GM", "Vec", "Mat", "Left", "Right", "Acc", "Bias"};
  return (mem >= 0 && mem < PYPTO_NUM_MEM) ? names[mem] : "?";
}

CoreContext::CoreContext(const Platform& p, int64_t idx, int64_t num, bool record)
    : platform(p), model(p, record), block_idx(idx), block_num(num) {
  capacities = {0, p.ub_bytes, p.l1_bytes, p.l0a_bytes, p.l0b_bytes, p.l0c_bytes, p.bias_bytes};
  // Physical sizes: a planner bug that spills past the usable limit is still caught by the
  // per-op bounds check against `capacities`.
  memory[PYPTO_VEC].resize(static_cast<size_t>(std::max(p.ub_physical_bytes, p.ub_bytes)));
  for (int m = PYPTO_MAT; m < PYPTO_NUM_MEM; ++m) memory[m].resize(static_cast<size_t>(capacities[m]));
}

CoreContext& current_core() {
  if (g_current == nullptr) {
    throw SimError(ErrorKind::kInternal, "an ISA call was made outside a running kernel");
  }
  return *g_current;
}

CoreBinding::CoreBinding(CoreContext* core) : previous_(g_current) { g_current = core; }
CoreBinding::~CoreBinding() { g_current = previous_; }

}  // namespace pypto
