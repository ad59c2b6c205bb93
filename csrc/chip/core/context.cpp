#include "chip/core/context.hpp"

#include <algorithm>

#include "chip/core/data_queue.hpp"
#include "chip/isa/dtype.hpp"
#include "chip/isa/vec_math.hpp"
#include "simulator/errors.hpp"
#include "simulator/hardware.hpp"

namespace pypto {
namespace {
// On-chip storage returned by finished cores, reused by the next core on this thread.
thread_local std::vector<std::array<SpaceBytes, PYPTO_NUM_MEM>> g_pool;
constexpr size_t kPooledCoreBytes = size_t{64} << 20;

void take_pooled(std::array<SpaceBytes, PYPTO_NUM_MEM>& memory) {
  if (g_pool.empty()) return;
  memory = std::move(g_pool.back());
  g_pool.pop_back();
}

// The pooled storage at exactly `at` with the sizes `bytes` (every space's block where and as
// it was), if it is still pooled: a context that gave it back takes it again and keeps what it
// checked against those addresses. The size matters too: a smaller block at the same address
// would be grown, moved, on the next access, under the kept pointers. The latest given is at
// the back, and a pool's emptied contexts are taken in the reverse order.
bool take_pooled_at(std::array<SpaceBytes, PYPTO_NUM_MEM>& memory,
                    const std::array<const uint8_t*, PYPTO_NUM_MEM>& at,
                    const std::array<size_t, PYPTO_NUM_MEM>& bytes) {
  for (size_t i = g_pool.size(); i-- > 0;) {
    const auto& spaces = g_pool[i];
    bool same = true;
    for (int m = 0; m < PYPTO_NUM_MEM && same; ++m) {
      same = spaces[m].data() == at[m] && spaces[m].size() == bytes[m];
    }
    if (!same) continue;
    memory = std::move(g_pool[i]);
    g_pool.erase(g_pool.begin() + static_cast<std::ptrdiff_t>(i));
    return true;
  }
  return false;
}

// Kept for reuse only at ordinary sizes: a run with a huge on-chip size override must not
// leave its gigabytes resident for the rest of the process. Freed otherwise.
void give_pooled(std::array<SpaceBytes, PYPTO_NUM_MEM>& memory) noexcept {
  size_t bytes = 0;
  for (const auto& space : memory) bytes += space.capacity();
  if (g_pool.size() < 96 && bytes <= kPooledCoreBytes) {
    try {
      g_pool.push_back(std::move(memory));
    } catch (const std::bad_alloc&) {  // freed below
    }
  }
  for (auto& space : memory) SpaceBytes().swap(space);
}
}  // namespace

const char* mem_name(int mem) {
  return (mem >= 0 && mem < PYPTO_NUM_MEM) ? hw::kMemNames[mem] : "?";
}

CoreContext::CoreContext(const Platform& p, int64_t idx, int64_t num, bool record)
    : platform(p), model(p, record), block_idx(idx), block_num(num) {
  capacities = {0, p.ub_bytes, p.l1_bytes, p.l0a_bytes, p.l0b_bytes, p.l0c_bytes, p.bias_bytes};
  // Physical sizes: a planner bug that spills past the usable limit is still caught by the
  // per-op bounds check against `capacities`.
  sizes[PYPTO_VEC] = static_cast<size_t>(std::max(p.ub_physical_bytes, p.ub_bytes));
  for (int m = PYPTO_MAT; m < PYPTO_NUM_MEM; ++m) sizes[m] = static_cast<size_t>(capacities[m]);
  take_pooled(memory);
}

void CoreContext::reuse(int64_t idx, int64_t num, bool record) {
  model.reset(record);
  if (released) {
    released = false;
    if (!take_pooled_at(memory, released_at, released_bytes)) {
      take_pooled(memory);
      checked.fill(CheckedTile{});
      checked_before.fill(CheckedTile{});
      one_input.fill(isa::OneInputOperands{});
    }
  }
  // The checked tiles stay: an entry depends only on its descriptor, the platform and this
  // context's on-chip storage (kept, at the same addresses), so it holds for the next run too.
  loc = "";
  block_idx = idx;
  block_num = num;
  atomic_log = nullptr;
  queued_atomics = false;
  fmatrix_set = false;
  aic = false;
  subblock = 0;
  cluster = nullptr;
  waiter = nullptr;
  data = nullptr;
  deferring = false;
  put_offs = 0;  // a failed run may leave some; its queue, which held them, is gone
  // core_name and kernel keep the last instance's: the only taker of a reused context, the chip
  // scheduler's launch, names it before anything reads them.
}

CoreContext::~CoreContext() { give_pooled(memory); }

void CoreContext::release_storage() noexcept {
  for (int m = 0; m < PYPTO_NUM_MEM; ++m) {
    released_at[m] = memory[m].data();
    released_bytes[m] = memory[m].size();
  }
  give_pooled(memory);
  released = true;
  model.release_buffers();
}

void CoreContext::flush_put_off() {
  if (put_offs == 0) return;
  for (const auto& space : memory) {
    if (!space.empty()) data->before_write(space.data(), space.data() + space.size());
  }
}

void CoreContext::atomic_add(void* tensor_base, void* dst, int dtype, const void* src, size_t n) {
  if (atomic_log == nullptr) {
    vm::accumulate(dtype, dst, src, n);
    return;
  }
  const uint8_t* bytes = static_cast<const uint8_t*>(src);
  atomic_log->push_back(
      {tensor_base, dst, dtype, n, std::vector<uint8_t>(bytes, bytes + n * dtype_size(dtype))});
}

namespace detail {
__thread CoreContext* current_core_ptr = nullptr;

void no_running_kernel() {
  throw SimError(ErrorKind::kInternal, "an ISA call was made outside a running kernel");
}
}  // namespace detail

CoreBinding::CoreBinding(CoreContext* core) : previous_(detail::current_core_ptr) {
  detail::current_core_ptr = core;
}
CoreBinding::~CoreBinding() { detail::current_core_ptr = previous_; }

}  // namespace pypto
