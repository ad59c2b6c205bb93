#include "runtime/core/scheduler.hpp"

#include <algorithm>
#include <map>
#include <random>

#include "runtime/core/context.hpp"
#include "runtime/isa/dtype.hpp"
#include "runtime/isa/vec_math.hpp"
#include "simulator/errors.hpp"

namespace pypto {
namespace {

struct PendingAtomics {
  uint64_t end;
  size_t task;
  std::vector<AtomicWrite> writes;
};

class Scheduler {
 public:
  Scheduler(const Platform& p, const ScheduleOptions& o)
      : platform_(p), options_(o), aic_free_(static_cast<size_t>(p.aic_cores), 0),
        aiv_free_(static_cast<size_t>(p.aiv_cores), 0), rng_(o.seed) {}

  TaskResult run(const TaskSpec& t, size_t index, const std::vector<pypto_tensor>& table,
                 const std::vector<TaskResult>& done) {
    uint64_t ready = 0;
    for (int d : t.deps) {
      if (d < 0 || static_cast<size_t>(d) >= index) throw SimError(ErrorKind::kInternal, "bad task dependency");
      ready = std::max(ready, done[static_cast<size_t>(d)].end);
      flush_for(static_cast<size_t>(d));
    }
    TaskResult r = place(t, ready, t.deps.empty());
    std::vector<pypto_tensor> descs;
    for (int i : t.tensors) descs.push_back(table.at(static_cast<size_t>(i)));
    std::vector<int64_t> args = abi_args(descs, t.scalars);
    LaunchOptions lo{t.name, 1, options_.record, options_.hazards_fatal,
                     write_gates(t, index, r.start, table, done)};
    PendingAtomics log{0, index, {}};
    r.block = run_on_core(t.entry, args, platform_, lo, 0, &log.writes);
    r.end = r.start + r.block.stats.total_cycles;
    (r.cube ? aic_free_ : aiv_free_)[static_cast<size_t>(r.core)] = r.end;
    log.end = r.end;
    if (!log.writes.empty()) pending_.push_back(std::move(log));
    return r;
  }

  // Applies every logged atomic add, in simulated completion order.
  void flush_all() {
    order(pending_);
    for (auto& p : pending_) apply(p);
    pending_.clear();
  }

 private:
  TaskResult place(const TaskSpec& t, uint64_t ready, bool at_launch) {
    auto& cores = t.cube ? aic_free_ : aiv_free_;
    if (cores.empty()) throw SimError(ErrorKind::kInvalidArgument, platform_.name + " has no cores for " + t.name);
    auto it = std::min_element(cores.begin(), cores.end());
    const uint64_t dispatch = at_launch ? 0 : static_cast<uint64_t>(platform_.task_dispatch_cycles);
    TaskResult r;
    r.cube = t.cube;
    r.core = static_cast<int>(it - cores.begin());
    r.start = std::max(ready + dispatch, *it);
    return r;
  }

  // The GM ranges this task may not write before an earlier task ends (task-relative cycles).
  static std::vector<GmGate> write_gates(const TaskSpec& t, size_t index, uint64_t start,
                                         const std::vector<pypto_tensor>& table,
                                         const std::vector<TaskResult>& done) {
    std::vector<GmGate> gates;
    for (const auto& [task, tensor] : t.write_gates) {
      if (task < 0 || static_cast<size_t>(task) >= index) throw SimError(ErrorKind::kInternal, "bad write gate");
      const uint64_t end = done[static_cast<size_t>(task)].end;
      if (end <= start) continue;
      const pypto_tensor& d = table.at(static_cast<size_t>(tensor));
      const int64_t lo = static_cast<int64_t>(reinterpret_cast<intptr_t>(d.data));
      gates.push_back({lo, lo + tensor_bytes(d), end - start});
    }
    return gates;
  }

  void order(std::vector<PendingAtomics>& v) {
    std::stable_sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.end < b.end; });
    if (options_.shuffle_atomics) std::shuffle(v.begin(), v.end(), rng_);
  }

  static void apply(PendingAtomics& p) {
    for (const AtomicWrite& w : p.writes) vm::accumulate(w.dtype, w.dst, w.data.data(), w.n);
  }

  // A task that depends on `task` sees its atomic adds — and, to keep the completion order,
  // every other pending add to the same tensors.
  void flush_for(size_t task) {
    std::vector<void*> tensors;
    for (const auto& p : pending_) {
      if (p.task != task) continue;
      for (const auto& w : p.writes) tensors.push_back(w.tensor);
    }
    if (tensors.empty()) return;
    std::vector<PendingAtomics> now, later;
    for (auto& p : pending_) {
      bool hit = std::any_of(p.writes.begin(), p.writes.end(), [&](const AtomicWrite& w) {
        return std::find(tensors.begin(), tensors.end(), w.tensor) != tensors.end();
      });
      (hit ? now : later).push_back(std::move(p));
    }
    order(now);
    for (auto& p : now) apply(p);
    pending_ = std::move(later);
  }

  const Platform& platform_;
  ScheduleOptions options_;
  std::vector<uint64_t> aic_free_, aiv_free_;
  std::vector<PendingAtomics> pending_;
  std::mt19937_64 rng_;
};

}  // namespace

std::vector<TaskResult> run_tasks(const std::vector<TaskSpec>& tasks, const std::vector<pypto_tensor>& table,
                                  const Platform& platform, const ScheduleOptions& options) {
  Scheduler s(platform, options);
  std::vector<TaskResult> done;
  done.reserve(tasks.size());
  for (size_t i = 0; i < tasks.size(); ++i) done.push_back(s.run(tasks[i], i, table, done));
  s.flush_all();
  return done;
}

}  // namespace pypto
