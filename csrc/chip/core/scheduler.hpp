// The chip scheduler: an orchestration's kernel tasks on every core of the platform, in one
// simulated clock.
//
// Contract. Every core of the platform is a core model (a2a3: 24 AIC + 48 AIV, clusters of
// 1 AIC + 2 AIV). A task with no dependency is ready at launch (time 0); a task with
// dependencies is ready dispatch_cycles after the last of them ends. A ready task takes the
// earliest-free core of its kind (a cluster task: the earliest-free whole cluster, running its
// kernel on the AIC and on both AIVs). Each kernel instance runs on its own fiber; the
// scheduler always resumes the instance at the earliest simulated time, and an instance hands
// over before every GM transfer that starts later than another instance's time. So shared
// resources (HBM, L2) are claimed in simulated-time order, timing never depends on the order
// kernels happen to execute, and functional results are deterministic. An instance waiting for
// another core (a cross-core flag, a tile pipe) is suspended until that core acts; when every
// unfinished instance waits, the run stops with a deadlock report naming each of them.
//
// A write gate is a weaker dependency, for a tensor the task only accumulates into with atomic
// adds: the task starts as if independent and only its writes into that tensor wait for the
// earlier task's end. Atomic adds are logged and applied in simulated completion order (a seed
// shuffles it) before any task that depends on them runs. Two instances of different tasks
// that overlap in simulated time and touch the same GM bytes, one writing (not by atomic add),
// race: reported with both kernels and lines.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "chip/core/launch.hpp"

namespace pypto {

enum class CoreKind : int { kAiv = 0, kAic = 1, kCluster = 2 };

struct TaskSpec {
  KernelEntry entry;
  std::string name;
  std::vector<int> tensors;  // indices into the run's tensor table, in ABI order
  std::vector<int64_t> scalars;
  CoreKind kind = CoreKind::kAiv;
  std::vector<int> deps;                         // indices of earlier tasks
  std::vector<std::pair<int, int>> write_gates;  // (earlier task, tensor index): writes wait
  int64_t block_idx = 0, block_num = 1;
  // pl.at(allow_early_resolve=True): a consumer whose producers all carry it is staged on a core
  // before they end and released when the last one does, without the pickup latency.
  bool early_resolve = false;
};

// One kernel instance: a task on one core (a cluster task has three).
struct TaskResult {
  BlockResult block;
  int task = 0;
  int core = 0;  // index among the cores of its kind
  bool cube = false;
  int cluster = 0;
  int subblock = 0;  // AIV index inside its cluster (0 on an AIC)
  uint64_t start = 0, end = 0;
};

struct ScheduleOptions {
  bool record = false;
  bool hazards_fatal = true;
  bool shuffle_atomics = false;
  uint64_t seed = 0;
  RunLimits limits;
  // Whether the run gets a data thread: 1 or 0 as decided by whoever made the options (a warm
  // call's WarmSpec: DataQueue::wanted() when it was made), -1 to ask DataQueue::wanted() now.
  int data_thread = -1;
};

struct ChipResult {
  std::vector<TaskResult> instances;  // in dispatch order
  MemoryStats memory;
  std::vector<std::string> races;  // when not fatal
};

class CorePool;

// `pool` (optional): contexts and tables kept from an earlier run of the same tasks on the same
// platform, and kept again for the next.
ChipResult run_tasks(const std::vector<TaskSpec>& tasks, const std::vector<pypto_tensor>& table,
                     const Platform& platform, const ScheduleOptions& options,
                     CorePool* pool = nullptr);
// The same, the results written into `out`: its storage is reused (a caller keeping one result
// between runs allocates no instance list), what an earlier run left in it is replaced.
void run_tasks(const std::vector<TaskSpec>& tasks, const std::vector<pypto_tensor>& table,
               const Platform& platform, const ScheduleOptions& options, CorePool* pool,
               ChipResult& out);

}  // namespace pypto
