// What the runs of one program reuse: the core contexts of its kernel instances and the chip
// scheduler's per-core tables. A warm call of a small kernel then constructs no timing model
// and allocates nothing proportional to the platform's core count.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "chip/core/context.hpp"

namespace pypto {

class CorePool {
 public:
  explicit CorePool(const Platform& platform) : platform_(platform) {}

  // A context for a kernel instance: a kept one of the kind, reset, or a new one.
  std::unique_ptr<CoreContext> take(bool aic, int64_t block_idx, int64_t block_num, bool record);
  // Keeps `ctx` for a later run while the kept contexts' storage stays small; frees it else.
  void give(std::unique_ptr<CoreContext> ctx);

  // The scheduler's per-core and per-task tables, kept with their capacity between runs.
  std::vector<uint64_t> aic_free, aiv_free;
  std::vector<bool> aic_busy, aiv_busy, aic_warm, aiv_warm;
  std::vector<size_t> remaining_deps;
  std::vector<uint64_t> task_end;
  std::vector<int> task_left;

 private:
  const Platform& platform_;
  std::vector<std::unique_ptr<CoreContext>> kept_[2];  // per kind: AIV, AIC
  size_t kept_bytes_ = 0;
};

}  // namespace pypto
