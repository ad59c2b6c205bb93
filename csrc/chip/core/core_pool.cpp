#include "chip/core/core_pool.hpp"

#include <utility>

#include "chip/core/scheduler_state.hpp"

namespace pypto {
namespace {
// On-chip storage kept per program between runs: a few cores' worth, so the small kernels
// whose calls this cost dominates keep theirs, and many compiled programs hold little.
constexpr size_t kKeptBytes = size_t{4} << 20;

size_t storage_bytes(const CoreContext& ctx) {
  size_t bytes = 0;
  for (const auto& space : ctx.memory) bytes += space.capacity();
  return bytes;
}
}  // namespace

CorePool::CorePool(const Platform& platform) : platform_(platform) {}
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
  const size_t bytes = storage_bytes(*ctx);
  if (kept_bytes_ + bytes > kKeptBytes) return;  // its storage goes to the thread's pool
  kept_bytes_ += bytes;
  kept_[ctx->aic ? 1 : 0].push_back(std::move(ctx));
}

}  // namespace pypto
