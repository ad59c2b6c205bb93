// The task scheduler: an orchestration's kernel tasks placed on the platform's AIC/AIV cores
// by simulated time.
//
// Contract: tasks come in submission order with their dependencies (earlier tasks only), so
// running them functionally in that order respects every dependency and results are
// deterministic. Timing: a task with no dependency is dispatched at launch (all such tasks
// in parallel, time 0); a task with dependencies starts dispatch_cycles after the last of
// them has ended (the scheduler sees the completion and dispatches). Either way it waits
// for a free core of its type (the earliest-free core is taken). A write gate is a weaker
// dependency, for a tensor the task only accumulates into with atomic adds: the task starts
// as if independent and only its writes into that tensor wait for the earlier task's end.
// Atomic adds are logged and applied in simulated completion order (a seed shuffles that
// order, to expose reduction-order effects) before any task that depends on them runs.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "runtime/core/launch.hpp"

namespace pypto {

struct TaskSpec {
  KernelEntry entry;
  std::string name;
  std::vector<int> tensors;  // indices into the run's tensor table, in ABI order
  std::vector<int64_t> scalars;
  bool cube = false;      // AIC task (else AIV)
  std::vector<int> deps;  // indices of earlier tasks
  std::vector<std::pair<int, int>> write_gates;  // (earlier task, tensor index): writes wait
};

struct TaskResult {
  BlockResult block;
  int core = 0;  // index among the cores of its type
  bool cube = false;
  uint64_t start = 0, end = 0;
};

struct ScheduleOptions {
  bool record = false;
  bool hazards_fatal = true;
  bool shuffle_atomics = false;
  uint64_t seed = 0;
};

std::vector<TaskResult> run_tasks(const std::vector<TaskSpec>& tasks, const std::vector<pypto_tensor>& table,
                                  const Platform& platform, const ScheduleOptions& options);

}  // namespace pypto
