// The task scheduler: an orchestration's kernel tasks placed on the platform's AIC/AIV cores
// by simulated time.
//
// Contract: tasks come in submission order with their dependencies (earlier tasks only), so
// running them functionally in that order respects every dependency and results are
// deterministic. Timing: a task starts dispatch_cycles after its dependencies have ended
// (launch latency; cores are dispatched in parallel), once a core of its type is free (the
// earliest-free core is taken). Time 0 is the start of the first task. Atomic
// adds are logged and applied in simulated completion order (a seed shuffles that order,
// to expose reduction-order effects) before any task that depends on them runs.
#pragma once
#include <cstdint>
#include <string>
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
