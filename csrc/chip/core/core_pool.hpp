// What the runs of one program reuse: the core contexts of its kernel instances and the chip
// scheduler with its per-core tables and its other per-run storage (the instances themselves,
// the event queue, the memory system). A warm call of a small kernel then constructs no timing
// model, allocates little, and touches nothing proportional to the platform's core count.
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
  // Keeps `ctx`, a finished instance's, for a later instance of the run: a run keeps them all
  // (at most as many as ran at once), so its later tasks construct no context.
  void give(std::unique_ptr<CoreContext> ctx);
  // Whether give() keeps a context of this kind without allocating (else it may free it: its
  // queued data work must then be done first).
  bool has_room(bool aic) const {
    const auto& kept = kept_[aic ? 1 : 0];
    return kept.size() < kept.capacity();
  }
  // The run over: keeps for the next run only a few cores' storage worth of contexts; the rest
  // are freed (their storage and rings go to the thread's pools).
  void trim() noexcept;

  // The run's tensor table, made by its caller in place (a warm call's run: no allocation).
  std::vector<pypto_tensor> table;
  // The chip scheduler of the last run, with its tables and storage (scheduler_state.hpp:
  // Kept), null before the first run.
  std::unique_ptr<sched::Kept> run_state;

 private:
  const Platform& platform_;
  std::vector<std::unique_ptr<CoreContext>> kept_[2];  // per kind: AIV, AIC
  size_t kept_bytes_ = 0;
};

}  // namespace pypto
