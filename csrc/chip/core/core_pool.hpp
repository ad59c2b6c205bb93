// What the runs of one program reuse: the core contexts of its kernel instances, the chip
// scheduler's per-core tables and its other per-run storage (the instances themselves, the
// event queue). A warm call of a small kernel then constructs no timing model, allocates
// little, and touches nothing proportional to the platform's core count.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "chip/core/context.hpp"

namespace pypto {

namespace sched {
struct Kept;
}

class CorePool {
 public:
  explicit CorePool(const Platform& platform);
  ~CorePool();
  CorePool(const CorePool&) = delete;
  CorePool& operator=(const CorePool&) = delete;

  // A context for a kernel instance: a kept one of the kind, reset, or a new one.
  std::unique_ptr<CoreContext> take(bool aic, int64_t block_idx, int64_t block_num, bool record);
  // Keeps `ctx` for a later run while the kept contexts' storage stays small; frees it else.
  void give(std::unique_ptr<CoreContext> ctx);

  // The scheduler's per-core and per-task tables, kept with their capacity between runs. Only
  // the first aic_used / aiv_used entries of the per-core ones may differ from their initial
  // values (a run touches the cores it launches on), so the next run resets only those.
  std::vector<uint64_t> aic_free, aiv_free;
  std::vector<uint8_t> aic_busy, aiv_busy, aic_warm, aiv_warm;
  size_t aic_used = 0, aiv_used = 0;
  std::vector<size_t> remaining_deps;
  std::vector<uint64_t> task_end;
  std::vector<int> task_left;
  // The run's tensor table, made by its caller in place (a warm call's run: no allocation).
  std::vector<pypto_tensor> table;
  // The scheduler's other per-run storage (scheduler_state.hpp), null before the first run.
  std::unique_ptr<sched::Kept> run_state;

 private:
  const Platform& platform_;
  std::vector<std::unique_ptr<CoreContext>> kept_[2];  // per kind: AIV, AIC
  size_t kept_bytes_ = 0;
};

}  // namespace pypto
