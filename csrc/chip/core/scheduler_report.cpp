// What a chip run reports beyond its results: how an instance is named, hazards found inside
// one, a deadlock across cores, and races between tasks.
#include <algorithm>
#include <utility>
#include <vector>

#include "chip/core/scheduler_state.hpp"

namespace pypto::sched {

std::string where(const Instance& in, const TaskSpec& t) {
  std::string s = "kernel '" + t.name + "' (block " + std::to_string(t.block_idx);
  if (t.kind == CoreKind::kCluster) s += ", " + in.ctx->core_name;
  return s + ")";
}

std::string hazard_message(const std::string& kernel, const BlockResult& r) {
  std::string msg = "kernel '" + kernel + "' (block " + std::to_string(r.block) +
                    "): " + std::to_string(r.hazard_count) +
                    " race(s) found by the hazard checker:";
  for (const Hazard& h : r.hazards) msg += "\n  " + h.describe();
  if (r.hazard_count > r.hazards.size()) msg += "\n  ...";
  return msg + "\n  add set_flag/wait_flag between the two pipes";
}

std::string deadlock_report(const std::vector<std::unique_ptr<Instance>>& instances,
                            const std::vector<TaskSpec>& tasks) {
  std::string msg;
  // Every run ends here: one that finished names nothing, and is not scanned pair by pair.
  if (std::all_of(instances.begin(), instances.end(), [](const auto& p) { return p->done; }))
    return msg;
  for (const auto& p : instances) {
    if (p->done) continue;
    msg += "\n  " + where(*p, tasks[static_cast<size_t>(p->task)]) + " on " + p->ctx->core_name +
           " waits for " + (p->waiting_on ? (*p->waiting_on)() : std::string()) +
           (p->waiting_at[0] ? std::string(" at ") + p->waiting_at : std::string());
  }
  // A blocked core's cluster peers that already ended are named too, with the last line
  // they ran: a push into a full ring waits on a consumer that ended without freeing.
  for (const auto& p : instances) {
    if (!p->done || p->ended.empty()) continue;
    const bool peer_blocked = std::any_of(instances.begin(), instances.end(), [&](const auto& q) {
      return !q->done && q->task == p->task && q->cluster == p->cluster;
    });
    if (peer_blocked) msg += "\n  " + p->ended;
  }
  return msg;
}

namespace {

// An instance's GM touches ordered by first byte, with the running maximum of their last
// byte: the touches that can overlap [lo, hi) are found by a binary search and a short
// backward scan instead of comparing every pair (many concurrent cluster tasks, each with
// thousands of loads and ring transfers, made the all-pairs check the slowest part).
struct TouchIndex {
  std::vector<const GmTouch*> by_base;
  std::vector<int64_t> max_end;
};

int64_t end_of(const Access& a) { return a.base + (a.rows - 1) * a.stride + a.row_bytes; }

TouchIndex index_of(const Instance& in) {
  TouchIndex ix;
  for (const auto* list : {&in.writes, &in.reads})
    for (const GmTouch& t : *list) ix.by_base.push_back(&t);
  std::sort(ix.by_base.begin(), ix.by_base.end(),
            [](const GmTouch* x, const GmTouch* y) { return x->access.base < y->access.base; });
  int64_t m = INT64_MIN;
  for (const GmTouch* t : ix.by_base) ix.max_end.push_back(m = std::max(m, end_of(t->access)));
  return ix;
}

// The first write of `a` that overlaps an access of `b`, described; empty if none.
std::string clash(const Instance& a, const Instance& b, const TouchIndex& bx,
                  const std::vector<TaskSpec>& tasks) {
  for (const GmTouch& w : a.writes) {
    const int64_t lo = w.access.base, hi = end_of(w.access);
    // candidates start before `hi`; scanning back, stop once none of the rest reach `lo`
    auto k = std::lower_bound(bx.by_base.begin(), bx.by_base.end(), hi,
                              [](const GmTouch* t, int64_t v) { return t->access.base < v; }) -
             bx.by_base.begin();
    while (k-- > 0 && bx.max_end[static_cast<size_t>(k)] > lo) {
      const GmTouch& o = *bx.by_base[static_cast<size_t>(k)];
      if (!accesses_overlap(w.access, o.access)) continue;
      // on different sides of a SYNCALL round both passed: ordered by the barrier
      if (!a.barrier.empty() && a.barrier == b.barrier && w.phase != o.phase) continue;
      const TaskSpec &ta = tasks[static_cast<size_t>(a.task)],
                     &tb = tasks[static_cast<size_t>(b.task)];
      return "race between tasks: kernel '" + ta.name + "' (block " + std::to_string(ta.block_idx) +
             ") " + w.name + (w.loc[0] ? std::string(" at ") + w.loc : "") +
             " writes GM bytes that kernel '" + tb.name + "' (block " +
             std::to_string(tb.block_idx) + ") " + (o.access.write ? "writes" : "reads") +
             " with " + o.name + (o.loc[0] ? std::string(" at ") + o.loc : "") +
             "; they overlap in time (cycles " + std::to_string(a.start) + "-" +
             std::to_string(a.end) + " and " + std::to_string(b.start) + "-" +
             std::to_string(b.end) +
             ") with no dependency between them: order them (deps=) or split the data";
    }
  }
  return {};
}

// The pairs (i < j, by start) of instances that may overlap in time: of two that do, one
// starts while the other runs, so each instance is paired with those starting in [start, end)
// (found by a binary search over the starts). A decode's tens of thousands of instances, about
// a core's count of them running at once, are not compared all against all.
std::vector<std::pair<size_t, size_t>> overlapping_pairs(
    const std::vector<std::unique_ptr<Instance>>& instances) {
  std::vector<size_t> by_start(instances.size());
  for (size_t i = 0; i < by_start.size(); ++i) by_start[i] = i;
  const auto start = [&](size_t i) { return instances[i]->start; };
  std::sort(by_start.begin(), by_start.end(),
            [&](size_t x, size_t y) { return start(x) < start(y); });
  std::vector<std::pair<size_t, size_t>> pairs;
  for (size_t p = 0; p < by_start.size(); ++p) {
    const Instance& x = *instances[by_start[p]];
    for (size_t q = p + 1; q < by_start.size() && start(by_start[q]) < x.end; ++q)
      pairs.emplace_back(std::min(by_start[p], by_start[q]), std::max(by_start[p], by_start[q]));
  }
  return pairs;
}

// The races of `pairs`, at most `limit`, in the pairs' order.
std::vector<std::string> clashes(const std::vector<std::unique_ptr<Instance>>& instances,
                                 const std::vector<TaskSpec>& tasks,
                                 const std::vector<TouchIndex>& index,
                                 const std::vector<std::pair<size_t, size_t>>& pairs,
                                 size_t limit) {
  std::vector<std::string> out;
  for (const auto& [i, j] : pairs) {
    const Instance &a = *instances[i], &b = *instances[j];
    if (a.task == b.task || a.end <= b.start || b.end <= a.start) continue;
    if (auto r = clash(a, b, index[j], tasks); !r.empty())
      out.push_back(r);
    else if (auto r2 = clash(b, a, index[i], tasks); !r2.empty())
      out.push_back(r2);
    if (out.size() == limit) break;
  }
  return out;
}

}  // namespace

std::vector<std::string> races(const std::vector<std::unique_ptr<Instance>>& instances,
                               const std::vector<TaskSpec>& tasks) {
  if (instances.size() < 2) return {};  // no pair to race (a one-block run: no index built)
  std::vector<TouchIndex> index;
  index.reserve(instances.size());
  for (const auto& in : instances) index.push_back(index_of(*in));
  std::vector<std::pair<size_t, size_t>> pairs = overlapping_pairs(instances);
  // A run with no race (the common case) is found so in any order; the races reported are
  // the first eight by instance order, so a run with one sorts its pairs and looks again.
  if (clashes(instances, tasks, index, pairs, 1).empty()) return {};
  std::sort(pairs.begin(), pairs.end());
  return clashes(instances, tasks, index, pairs, 8);
}

}  // namespace pypto::sched
