#include "chip/core/core_pool.hpp"

#include <algorithm>
#include <new>
#include <utility>

#include "chip/core/scheduler_state.hpp"

namespace pypto {
namespace {
// On-chip storage kept per program between runs: a few cores' worth, so the small kernels
// whose calls this cost dominates keep theirs, and many compiled programs hold little.
constexpr size_t kKeptBytes = size_t{4} << 20;
// Contexts kept per kind, with storage or empty (~26 KiB each then).
constexpr size_t kKeptContexts = 64;

size_t storage_bytes(const CoreContext& ctx) {
  size_t bytes = 0;
  for (const auto& space : ctx.memory) bytes += space.capacity();
  return bytes;
}
}  // namespace

CorePool::CorePool(const Platform& platform) : platform_(platform) {
  // A run keeps at most its platform's cores of a kind at once: room for them now, so give()
  // does not allocate, and a finished instance's queued data work need not be waited for
  // (has_room: a context give() might free is).
  kept_[0].reserve(static_cast<size_t>(std::max(platform.aiv_cores, 0)));
  kept_[1].reserve(static_cast<size_t>(std::max(platform.aic_cores, 0)));
}
CorePool::~CorePool() = default;

std::unique_ptr<CoreContext> CorePool::take(bool aic, int64_t block_idx, int64_t block_num,
                                            bool record) {
  auto& kept = kept_[aic ? 1 : 0];
  if (kept.empty()) return std::make_unique<CoreContext>(platform_, block_idx, block_num, record);
  std::unique_ptr<CoreContext> ctx = std::move(kept.back());
  kept.pop_back();
  kept_bytes_ -= storage_bytes(*ctx);
  ctx->reuse(block_idx, block_num, record);
  return ctx;
}

void CorePool::give(std::unique_ptr<CoreContext> ctx) {
  auto& kept = kept_[ctx->aic ? 1 : 0];
  try {
    kept.push_back(nullptr);
  } catch (const std::bad_alloc&) {
    return;  // freed: its storage goes to the thread's pool
  }
  kept_bytes_ += storage_bytes(*ctx);
  kept.back() = std::move(ctx);
}

void CorePool::trim() noexcept {
  // Past the storage budget a kept context gives its storage (and its hazard rings' buffers)
  // back to the thread and is kept empty: the next run's core takes it, reset, rather than
  // constructing one (a zeroed fired-flag table, price memo and checked-tile arrays, ~26 KiB
  // written cold per core). The cube's contexts hold the larger storage (L1 and L0): theirs go
  // first. The empty ones are taken last (take() pops from the back).
  for (auto& kept : {&kept_[1], &kept_[0]}) {
    for (size_t i = 0; i < kept->size() && kept_bytes_ > kKeptBytes; ++i) {
      CoreContext& ctx = *(*kept)[i];
      kept_bytes_ -= storage_bytes(ctx);
      if (!ctx.released) ctx.release_storage();
    }
  }
  // A bounded number of contexts per kind (a chip's cores of that kind at most are ever taken
  // at once); the rest are destroyed.
  for (auto& kept : kept_) {
    while (kept.size() > kKeptContexts) {
      kept_bytes_ -= storage_bytes(*kept.back());
      kept.pop_back();
    }
  }
}

}  // namespace pypto
