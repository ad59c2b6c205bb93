#include "chip/core/scheduler.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <limits>
#include <map>
#include <memory>
#include <new>
#include <optional>
#include <queue>
#include <random>
#include <string_view>

#include "chip/core/cluster.hpp"
#include "chip/core/context.hpp"
#include "chip/core/core_pool.hpp"
#include "chip/core/data_queue.hpp"
#include "chip/core/host_memory.hpp"
#include "chip/core/scheduler_state.hpp"
#include "chip/isa/dtype.hpp"
#include "chip/isa/vec_math.hpp"
#include "simulator/errors.hpp"
#include "simulator/fiber.hpp"

namespace pypto {

namespace sched {

void Instance::clear() {
  fiber.reset();  // cancels a kernel that did not finish (a failed run)
  ctx.reset();    // a finished instance gave its context to the pool already
  task = 0;
  aic = false;
  core = cluster = subblock = 0;
  start = end = key = 0;
  done = blocked = false;
  waiting_on = nullptr;
  waiting_at = "";
  ready = nullptr;
  ended.clear();
  barrier.clear();
  phase = 0;
  descs.clear();
  args.clear();
  atomics.clear();
  // A long kernel's GM touches (up to kMaxGmTouches each) are not kept for the next run.
  constexpr size_t kKeptTouches = 64;
  if (writes.capacity() > kKeptTouches) std::vector<GmTouch>().swap(writes);
  if (reads.capacity() > kKeptTouches) std::vector<GmTouch>().swap(reads);
  writes.clear();
  reads.clear();
  // The rest of the result is set when the instance finishes; its records only when the run
  // records, so a table left by a recorded run (moved out by collect or not) is dropped here.
  if (result.records.size() > 0) result.records = RecordTable();
  result.hazards.clear();
}

}  // namespace sched

namespace {

using namespace sched;  // NOLINT: the scheduler's own state and reports

class ChipScheduler final : public ChipLink, public Waiter, public Kept {
  using KindCounts = std::array<uint32_t, 3>;  // tasks per CoreKind
  // Tasks to be queued again at `time` (dispatch_batch), and how many of each kind.
  struct Deferred {
    uint64_t time = 0;
    std::vector<uint32_t> tasks;
    KindCounts kinds{};
  };

 public:
  // A scheduler for runs on `p`'s cores; begin() readies it for each.
  explicit ChipScheduler(const Platform& p)
      : platform_(p),
        memory_(p),
        aic_free_(cores(p, true), 0),
        aiv_free_(cores(p, false), 0),
        aic_busy_(cores(p, true), 0),
        aiv_busy_(cores(p, false), 0),
        aic_warm_(cores(p, true), 0),
        aiv_warm_(cores(p, false), 0) {}

  ~ChipScheduler() override { end(); }

  const Platform& platform() const { return platform_; }
  // Whether `tasks` were found to need little host memory (check_host_memory) by an earlier
  // run of this scheduler: the same list (a pool's runs run one task list).
  bool small(const std::vector<TaskSpec>& tasks) const {
    return small_tasks_ == &tasks && small_count_ == tasks.size();
  }
  void set_small(const std::vector<TaskSpec>& tasks) {
    small_tasks_ = &tasks;
    small_count_ = tasks.size();
  }

  // Ready for a run of `tasks` over `table`, as if just made: of the per-core tables only the
  // entries the last run used (a prefix: aic_used_ / aiv_used_) are reset, the earlier run
  // changed no other; the per-task ones keep their storage.
  void begin(const std::vector<TaskSpec>& tasks, const std::vector<pypto_tensor>& table,
             const ScheduleOptions& o, CorePool* pool) {
    tasks_ = &tasks;
    table_ = &table;
    written_known_ = false;
    options_ = o;
    pool_ = pool;
    reset_used(aic_free_, aic_used_);
    reset_used(aiv_free_, aiv_used_);
    reset_used(aic_busy_, aic_used_);
    reset_used(aiv_busy_, aiv_used_);
    reset_used(aic_warm_, aic_used_);
    reset_used(aiv_warm_, aiv_used_);
    aic_used_ = aiv_used_ = 0;
    for (PickMemo& m : memo_) m = PickMemo{};  // the tables it looked at were reset
    remaining_deps_.assign(tasks.size(), 0);
    task_end_.assign(tasks.size(), 0);
    task_left_.assign(tasks.size(), 0);
    for (size_t i = 0; i < std::min(dependents_.size(), tasks.size()); ++i) dependents_[i].clear();
    dependents_.resize(tasks.size());
    dispatched_.assign(tasks.size(), false);
    seq_ = 0;
    running_ = -1;
    rng_.reset();
    // In place (no aligned heap block per run), and kept from the last run when its thread
    // never started (end()).
    if (o.data_thread < 0 ? DataQueue::wanted() : o.data_thread > 0) {
      if (!data_) data_.emplace();
    } else {
      data_.reset();
    }
    if (runs_++ > 0) memory_.restart();  // a new one is ready for its first run
    for (const pypto_tensor& d : table) memory_.add_buffer(d.data, tensor_bytes(d));
  }

  // The run over (or abandoned part-way): the queued data work done (and the thread ended; a
  // queue whose thread never started is kept) before the instances it writes for are cleared;
  // they, and the lists' storage, stay for the next run. Never throws: an instance that cannot
  // be kept is freed.
  void end() noexcept {
    if (data_ && !data_->restart()) data_.reset();
    if (pool_ != nullptr) pool_->trim();
    try {
      for (std::unique_ptr<Instance>& in : instances_) {
        in->clear();
        if (spare_.size() < kKeptInstances) spare_.push_back(std::move(in));
      }
    } catch (const std::bad_alloc&) {  // the instances not kept are freed here
    }
    instances_.clear();
    events_.storage().clear();
    parked_.clear();
    for (std::vector<uint32_t>& b : batches_) b.clear();
    popped_.clear();  // a dispatch that threw left its batch here
    for (Deferred& d : deferred_) d.tasks.clear();
    deferred_count_ = 0;
    free_batches_.clear();
    for (size_t b = batches_.size(); b-- > 0;) free_batches_.push_back(b);
    open_batch_ = -1;
    for (std::vector<size_t>& list : waiting_) list.clear();
    woken_.clear();
    clusters_.clear();
    pending_.clear();
    barriers_.clear();
  }

  ChipScheduler(const ChipScheduler&) = delete;
  ChipScheduler& operator=(const ChipScheduler&) = delete;

  void run(ChipResult& out) {
    if (tasks_->size() >= Event::kTask)
      throw SimError(ErrorKind::kConfig, "a launch of " + std::to_string(tasks_->size()) +
                                             " tasks: at most " + std::to_string(Event::kTask - 1) +
                                             " are simulated");
    dispatches_.assign(tasks_->size(), Dispatch{});
    kinds_.resize(tasks_->size());
    for (size_t i = 0; i < tasks_->size(); ++i) {
      kinds_[i] = (*tasks_)[i].kind;
      for (int d : (*tasks_)[i].deps) {
        if (d < 0 || static_cast<size_t>(d) >= i)
          throw SimError(ErrorKind::kInternal, "bad task dependency");
        dependents_[static_cast<size_t>(d)].push_back(static_cast<int>(i));
      }
      remaining_deps_[i] = (*tasks_)[i].deps.size();
      check_cores((*tasks_)[i]);  // before anything runs, not when the task comes up
      if ((*tasks_)[i].deps.empty()) push_task(0, i);
    }
    while (!events_.empty()) {
      const Event e = events_.top();
      events_.pop();
      if ((e.what() & Event::kTask) == 0) {
        step(static_cast<size_t>(e.what()));
      } else {
        dispatch_batch(e);
      }
    }
    check_all_done();
    // The race check reads only the kernels' GM touch lists, none of the data: it runs while
    // the data thread finishes the queued work (a decode's 16,448 tasks: ~25 ms that came after).
    std::vector<std::string> found = races(instances_, *tasks_);
    drain();
    flush_all();
    collect(out, std::move(found));
  }

  // ---- ChipLink -------------------------------------------------------------------------
  void reach(uint64_t t) override {
    if (running_ < 0 || events_.empty() || events_.top().time >= t) return;
    instances_[static_cast<size_t>(running_)]->key = t;
    Fiber::suspend();  // step() sees a runnable instance and queues it at `key`
  }

  uint64_t task_end(int task) override {
    wait_until([this, task] { return task_left_[static_cast<size_t>(task)] == 0 && started(task); },
               [this, task] {
                 return "the end of task '" + (*tasks_)[static_cast<size_t>(task)].name +
                        "' (a write gate)";
               });
    return task_end_[static_cast<size_t>(task)];
  }

  MemorySystem& memory() override { return memory_; }

  bool unwritten(int index) override {
    if (index < 0 || static_cast<size_t>(index) >= table_->size()) return false;
    if (!written_known_) find_written();
    const pypto_tensor& t = (*table_)[static_cast<size_t>(index)];
    const int64_t lo = static_cast<int64_t>(reinterpret_cast<intptr_t>(t.data));
    const int64_t hi = lo + tensor_bytes(t);
    // the first written span ending past lo: it overlaps [lo, hi) if it starts before hi
    auto it = std::upper_bound(
        written_.begin(), written_.end(), lo,
        [](int64_t x, const std::pair<int64_t, int64_t>& s) { return x < s.second; });
    return lo == hi || it == written_.end() || it->first >= hi;
  }

  void note_gm(const Access& a, bool atomic, const char* name, const char* loc) override {
    if (running_ < 0 || (a.write && atomic)) return;  // atomic adds commute: not a race
    Instance& in = *instances_[static_cast<size_t>(running_)];
    auto& v = a.write ? in.writes : in.reads;
    if (v.size() < kMaxGmTouches) v.push_back({a, name, loc, in.phase});
  }

  // ---- Waiter ---------------------------------------------------------------------------
  void wait_until(const std::function<bool()>& ready,
                  const std::function<std::string()>& what) override {
    while (!ready()) {
      if (running_ < 0)
        throw SimError(ErrorKind::kInternal, "a cross-core wait outside a running kernel");
      Instance& in = *instances_[static_cast<size_t>(running_)];
      block(static_cast<size_t>(running_));
      in.waiting_on = &what;  // both live on the suspended fiber's stack until the wait ends
      in.ready = &ready;
      in.waiting_at = in.ctx->loc;
      in.key = in.start + in.ctx->model.now();
      Fiber::suspend();
      in.waiting_on = nullptr;
      in.ready = nullptr;
    }
  }

  uint64_t syncall(const std::string& key, int64_t participants, uint64_t arrived) override {
    std::vector<uint64_t>& ends = barriers_[key];  // map nodes stay put while others are added
    const size_t n = static_cast<size_t>(participants), full = (ends.size() / n + 1) * n;
    ends.push_back(arrived);
    Instance& in = *instances_[static_cast<size_t>(running_)];
    in.barrier = key;
    if (ends.size() == full) {
      wake(-1);  // the round is complete: all look again
    } else {
      wait_until([&ends, full] { return ends.size() >= full; },
                 [&ends, full, n] {
                   return "SYNCALL (" + std::to_string(ends.size() - (full - n)) + " of " +
                          std::to_string(n) +
                          " participants arrived: the others never reach it — are all blocks "
                          "running at once?)";
                 });
    }
    ++in.phase;
    return *std::max_element(ends.begin() + static_cast<std::ptrdiff_t>(full - n),
                             ends.begin() + static_cast<std::ptrdiff_t>(full));
  }

  void notify() override {
    if (running_ < 0) return;
    const int cluster =
        instances_[static_cast<size_t>(running_)]->ctx->cluster ? cluster_of(running_) : -1;
    wake(cluster);
  }

 private:
  static size_t cores(const Platform& p, bool aic) {
    return static_cast<size_t>(std::max<int64_t>(aic ? p.aic_cores : p.aiv_cores, 0));
  }
  // Zeroes the first `used` entries of a per-core table (the ones a run launched on).
  template <class T>
  static void reset_used(std::vector<T>& table, size_t used) {
    std::fill(table.begin(), table.begin() + static_cast<std::ptrdiff_t>(used), T{0});
  }

  // Kept instances per pool at most: each holds its lists' storage.
  static constexpr size_t kKeptInstances = 64;

  // The event queue, its storage handed back to the pool after the run.
  struct EventQueue : std::priority_queue<Event, std::vector<Event>, std::greater<Event>> {
    using priority_queue::priority_queue;
    std::vector<Event>& storage() { return c; }
  };

  std::map<std::string, std::vector<uint64_t>> barriers_;  // SYNCALL arrival ends, per barrier

  // The host bytes the run's writable tensors span, sorted and merged (unwritten's), made at
  // the first question of a run: a run whose kernels read no GM scalar never pays for it.
  void find_written() {
    written_.clear();
    for (const pypto_tensor& t : *table_) {
      if ((t.flags & (PYPTO_TENSOR_INPUT | PYPTO_TENSOR_READONLY)) != 0) continue;
      const int64_t lo = static_cast<int64_t>(reinterpret_cast<intptr_t>(t.data));
      const int64_t bytes = tensor_bytes(t);
      if (bytes > 0) written_.emplace_back(lo, lo + bytes);
    }
    std::sort(written_.begin(), written_.end());
    size_t kept = 0;
    for (const auto& span : written_) {
      if (kept > 0 && span.first <= written_[kept - 1].second) {
        written_[kept - 1].second = std::max(written_[kept - 1].second, span.second);
      } else {
        written_[kept++] = span;
      }
    }
    written_.resize(kept);
    written_known_ = true;
  }

  int cluster_of(int instance) const { return instances_[static_cast<size_t>(instance)]->cluster; }
  bool started(int task) const {
    return dispatched_.size() > static_cast<size_t>(task) && dispatched_[static_cast<size_t>(task)];
  }

  // Queues `what` (an instance, or Event::kTask | a batch of tasks) at `time`, after every
  // event queued before at the same time.
  void push(uint64_t time, uint64_t what) {
    if (seq_ == Event::kMaxSeq)
      throw SimError(ErrorKind::kLimit, "the run passed " + std::to_string(seq_) +
                                            " scheduling events: a kernel that never finishes");
    events_.push({time, seq_++ << Event::kWhatBits | what});
  }

  // Queues a task's dispatch at `time`. Pushes back to back at one time leave the queue back to
  // back (nothing queued before or after falls between them), so a task pushed right after
  // another at the same time joins its batch: one event, its tasks dispatched in push order, is
  // the same schedule. A finish re-queues every task parked for a core, thousands at once on a
  // large decode, and each dispatched elsewhere is pushed again: as single events they made
  // the queue most of the run's time.
  void push_task(uint64_t time, size_t task) {
    const auto kind = static_cast<size_t>(kinds_[task]);
    if (joins_open_batch(time)) {
      batches_[static_cast<size_t>(open_batch_)].push_back(static_cast<uint32_t>(task));
      ++batch_kinds_[static_cast<size_t>(open_batch_)][kind];
      return;
    }
    size_t b = batches_.size();
    if (free_batches_.empty()) {
      batches_.emplace_back();
      batch_kinds_.emplace_back();
    } else {
      b = free_batches_.back();
      free_batches_.pop_back();
    }
    batches_[b].push_back(static_cast<uint32_t>(task));
    batch_kinds_[b] = {};
    ++batch_kinds_[b][kind];
    push_batch(time, b);
  }

  bool joins_open_batch(uint64_t time) const {
    return open_batch_ >= 0 && open_seq_ + 1 == seq_ && open_time_ == time;
  }

  void push_batch(uint64_t time, size_t b) {
    push(time, Event::kTask | b);
    open_batch_ = static_cast<int64_t>(b);
    open_seq_ = seq_ - 1;
    open_time_ = time;
  }

  // Dispatches a batch's tasks in order (see push_task); their own pushes queue after it.
  // A task whose kind's remembered look (pick()) has every core busy until `free` would only be
  // queued again at `free`: on a large decode each finish re-tried thousands of them (26
  // million dispatches for 16 thousand tasks). Those are gathered per time (one per kind at
  // most) and pushed as one batch each before anything else is pushed: the events keep their
  // order, as each time's batch holds its tasks in push order and no push falls between them.
  // Once every task left is of such kinds, for one time, they go there together, unread: the
  // whole batch as it is, or the rest of it copied.
  void dispatch_batch(const Event& e) {
    const auto b = static_cast<size_t>(e.what() & ~Event::kTask);
    if (static_cast<int64_t>(b) == open_batch_) open_batch_ = -1;
    if (requeue_whole(e.time, b)) return;
    popped_.swap(batches_[b]);
    KindCounts left = batch_kinds_[b];
    free_batches_.push_back(b);
    bool look = true;  // whether the tasks left may all wait: at first, and when that can change
    for (size_t i = 0; i < popped_.size(); ++i) {
      if (look) {
        look = false;
        if (const uint64_t at = waits_until(left, e.time)) {
          defer_rest(at, i, left);
          break;
        }
      }
      const uint32_t task = popped_[i];
      const CoreKind kind = kinds_[task];
      look = --left[static_cast<size_t>(kind)] == 0;
      if (const uint64_t later = busy_until(kind, e.time)) {
        defer(later, task);
        continue;
      }
      flush_deferred();
      dispatch(e.time, task);
      look = true;
    }
    flush_deferred();
    popped_.clear();
  }

  // The one time every task counted in `kinds` would be queued again at without a look
  // (busy_until), or 0.
  uint64_t waits_until(const KindCounts& kinds, uint64_t time) const {
    uint64_t at = 0;
    for (size_t k = 0; k < kinds.size(); ++k) {
      if (kinds[k] == 0) continue;
      const uint64_t later = busy_until(static_cast<CoreKind>(k), time);
      if (later == 0 || (at != 0 && later != at)) return 0;
      at = later;
    }
    return at;
  }

  // Batch `b`, all of whose tasks would be queued again at one later time, queued there as it
  // is (or joined to the open batch there, as its tasks' own pushes would have been).
  bool requeue_whole(uint64_t time, size_t b) {
    const uint64_t at = waits_until(batch_kinds_[b], time);
    if (at == 0) return false;
    if (joins_open_batch(at)) {
      const auto open = static_cast<size_t>(open_batch_);
      batches_[open].insert(batches_[open].end(), batches_[b].begin(), batches_[b].end());
      add(batch_kinds_[open], batch_kinds_[b]);
      batches_[b].clear();
      free_batches_.push_back(b);
      return true;
    }
    push_batch(at, b);
    return true;
  }

  static void add(KindCounts& to, const KindCounts& from) {
    for (size_t k = 0; k < to.size(); ++k) to[k] += from[k];
  }

  Deferred& deferred_at(uint64_t time) {
    size_t i = 0;
    while (i < deferred_count_ && deferred_[i].time != time) ++i;
    if (i == deferred_count_) {
      deferred_[deferred_count_++].time = time;
      deferred_[i].kinds = {};
    }
    return deferred_[i];
  }

  void defer(uint64_t time, uint32_t task) {
    Deferred& d = deferred_at(time);
    d.tasks.push_back(task);
    ++d.kinds[static_cast<size_t>(kinds_[task])];
  }

  // popped_[i:] (of `kinds`), all to be queued again at `time`.
  void defer_rest(uint64_t time, size_t i, const KindCounts& kinds) {
    Deferred& d = deferred_at(time);
    d.tasks.insert(d.tasks.end(), popped_.begin() + static_cast<std::ptrdiff_t>(i), popped_.end());
    add(d.kinds, kinds);
  }

  void flush_deferred() {
    for (size_t i = 0; i < deferred_count_; ++i) {
      Deferred& d = deferred_[i];
      const uint32_t first = d.tasks.front();
      push_task(d.time, first);  // a new batch, or the open one this time would have joined
      const auto open = static_cast<size_t>(open_batch_);
      --d.kinds[static_cast<size_t>(kinds_[first])];
      add(batch_kinds_[open], d.kinds);
      batches_[open].insert(batches_[open].end(), d.tasks.begin() + 1, d.tasks.end());
      d.tasks.clear();
    }
    deferred_count_ = 0;
  }

  // When a task of `kind` dispatched at `time` is queued again without a look: the time its
  // kind's first core frees, from pick()'s remembered look (0: it needs a look, or it parks).
  uint64_t busy_until(CoreKind kind, uint64_t time) const {
    const PickMemo& m = memo_[static_cast<size_t>(kind)];
    const bool later = m.version == cores_version_ && m.best.slot >= 0 && time < m.best.free;
    return later ? m.best.free : 0;
  }

  // The blocked instances are kept per cluster (an instance's `cluster`: its cluster's index,
  // or for a task on one core that core's), each list ascending: a push, free or set wakes
  // its own cluster's by reading one short list, not every blocked instance of the chip (most
  // of a run's instances wait on their cluster peers at any time, and a pass over all of them
  // read and rewrote a line per four on every wake).
  void block(size_t i) {
    Instance& in = *instances_[i];
    if (in.blocked) return;
    in.blocked = true;
    const auto c = static_cast<size_t>(in.cluster);
    if (c >= waiting_.size()) waiting_.resize(c + 1);
    std::vector<size_t>& list = waiting_[c];
    list.insert(std::upper_bound(list.begin(), list.end(), i), i);
  }

  // Wakes the blocked instances of `cluster` (every one when it is negative), in instance
  // order (the order events are queued in breaks ties between equal times). Only blocked ones
  // are visited.
  void wake(int cluster) {
    if (cluster >= 0) {
      if (static_cast<size_t>(cluster) >= waiting_.size()) return;
      std::vector<size_t>& list = waiting_[static_cast<size_t>(cluster)];
      for (const size_t i : list) unblock(i);
      list.clear();
      return;
    }
    woken_.clear();  // every list, merged into instance order
    for (std::vector<size_t>& list : waiting_) {
      woken_.insert(woken_.end(), list.begin(), list.end());
      list.clear();
    }
    std::sort(woken_.begin(), woken_.end());
    for (const size_t i : woken_) unblock(i);
  }

  void unblock(size_t i) {
    Instance& in = *instances_[i];
    in.blocked = false;
    push(in.key, i);
  }

  // ---- dispatch ---------------------------------------------------------------------------
  // Placing a task: the runtime hands it to an idle core, which starts it a head overhead
  // later: task_cold_head_cycles on a core that has not run a task yet in this run (the first
  // task's dispatch-to-start), task_head_cycles after that. Among the cores idle when the task
  // is ready it takes the one where it starts first, so a warm core wins over a cold one; when
  // none is idle it waits for the first to free up.
  struct Pick {
    int slot = -1;  // core index, or cluster index for a cluster task
    uint64_t free = 0;
    uint64_t start = 0;  // when the task would start there (idle slots only)
  };

  uint64_t head(bool warm) const {
    return static_cast<uint64_t>(warm ? platform_.task_head_cycles
                                      : platform_.task_cold_head_cycles);
  }

  // A pre-staged task (every producer resolves early) was handed over before its producers
  // ended: its head overlaps the wait. Any other task is handed over when it is ready.
  static uint64_t start_at(const Dispatch& d, uint64_t free, uint64_t head) {
    return std::max(d.staged ? d.ready : d.ready + head, free + head);
  }

  // A core for a task of `kind` dispatched at `time`. The look over the cores is remembered
  // until a core's state changes: while no core of the kind is idle, the answer is the one
  // that frees first for every task and every time before it frees (a finish re-tries every
  // parked task, and all of them but one find each core busy or not yet free).
  Pick pick(CoreKind kind, uint64_t time, const Dispatch& d) {
    PickMemo& memo = memo_[static_cast<size_t>(kind)];
    if (memo.version == cores_version_ && (memo.best.slot < 0 || time < memo.best.free))
      return memo.best;
    Pick best, idle;
    auto consider = [&](int slot, uint64_t free, bool warm) {
      if (best.slot < 0 || free < best.free) best = {slot, free, 0};
      if (free > time) return;
      const uint64_t start = start_at(d, free, head(warm));
      if (idle.slot < 0 || start < idle.start) idle = {slot, free, start};
    };
    // The cores no task of this run has been launched on (every core from aic_used_ / aiv_used_
    // on) are alike: free at time 0, cold and idle. The first of them stands for all, as a
    // later one never wins a tie; so a pick looks at the cores used so far and one more.
    if (kind == CoreKind::kCluster) {
      const size_t per = aic_free_.empty() ? 0 : aiv_free_.size() / aic_free_.size();
      const size_t fresh = per == 0 ? 0 : std::max(aic_used_, (aiv_used_ + per - 1) / per);
      const size_t clusters = std::min(aic_free_.size(), fresh + 1);
      for (size_t c = 0; per > 0 && c < clusters; ++c) {
        bool busy = aic_busy_[c] != 0, warm = aic_warm_[c] != 0;
        uint64_t free = aic_free_[c];
        for (size_t v = c * per; v < (c + 1) * per; ++v) {
          busy = busy || aiv_busy_[v] != 0;
          warm = warm && aiv_warm_[v] != 0;
          free = std::max(free, aiv_free_[v]);
        }
        if (!busy) consider(static_cast<int>(c), free, warm);
      }
    } else {
      const bool aic = kind == CoreKind::kAic;
      const auto& frees = aic ? aic_free_ : aiv_free_;
      const auto& busy = aic ? aic_busy_ : aiv_busy_;
      const auto& warm = aic ? aic_warm_ : aiv_warm_;
      const size_t cores = std::min(frees.size(), (aic ? aic_used_ : aiv_used_) + 1);
      for (size_t i = 0; i < cores; ++i) {
        if (busy[i] == 0) consider(static_cast<int>(i), frees[i], warm[i] != 0);
      }
    }
    memo = {cores_version_, best};
    return idle.slot >= 0 ? idle : best;
  }

  size_t cores_of(CoreKind kind) const {
    if (kind == CoreKind::kAic) return aic_free_.size();
    if (kind == CoreKind::kAiv) return aiv_free_.size();
    return aiv_free_.size() >= 2 * aic_free_.size() ? aic_free_.size() : 0;
  }

  void check_cores(const TaskSpec& t) const {
    if (cores_of(t.kind) > 0) return;
    const std::string kind = t.kind == CoreKind::kCluster ? "a cluster (1 AIC + 2 AIV cores)"
                             : t.kind == CoreKind::kAic   ? "an AIC core"
                                                          : "an AIV core";
    throw SimError(ErrorKind::kConfig,
                   "platform " + platform_.name + " has no cores for task " + t.name +
                       ": it runs on " + kind +
                       ", and aic_cores=" + std::to_string(platform_.aic_cores) +
                       ", aiv_cores=" + std::to_string(platform_.aiv_cores) +
                       " give none (a cluster kernel needs aiv_cores >= 2 * aic_cores)");
  }

  void dispatch(uint64_t time, uint32_t task_index) {
    const auto task = static_cast<int>(task_index);
    Pick p = pick(kinds_[task_index], time, dispatches_[task_index]);
    if (p.slot < 0) {  // every core of the kind is running: wait for one to finish
      parked_.push_back({time, task_index});
      return;
    }
    if (p.free > time) {  // a running core might free up sooner: look again then
      push_task(p.free, task_index);
      return;
    }
    const uint64_t start = p.start;
    const TaskSpec& t = (*tasks_)[task_index];
    for (int d : t.deps) flush_for(static_cast<size_t>(d));
    dispatched_[static_cast<size_t>(task)] = true;
    if (t.kind == CoreKind::kCluster) {
      launch_cluster(task, p.slot, start);
    } else {
      launch(task, t.kind == CoreKind::kAic, p.slot, p.slot, 0, start, nullptr);
    }
  }

  void launch_cluster(int task, int cluster, uint64_t start) {
    const int per = static_cast<int>(aiv_free_.size() / aic_free_.size());
    clusters_.push_back(std::make_unique<Cluster>(platform_, memory_));
    Cluster* c = clusters_.back().get();
    launch(task, true, cluster, cluster, 0, start, c);
    for (int v = 0; v < per; ++v) launch(task, false, cluster * per + v, cluster, v, start, c);
  }

  void launch(int task, bool aic, int core, int cluster, int subblock, uint64_t start,
              Cluster* shared) {
    const TaskSpec& t = (*tasks_)[static_cast<size_t>(task)];
    if (instances_.size() >= Event::kTask)  // an instance's number goes in its events
      throw SimError(ErrorKind::kConfig,
                     "a launch of more than " + std::to_string(Event::kTask) + " kernel instances");
    std::unique_ptr<Instance> inst;
    if (spare_.empty()) {
      inst = std::make_unique<Instance>();
    } else {
      inst = std::move(spare_.back());
      spare_.pop_back();
    }
    Instance& in = *inst;
    in.task = task;
    in.aic = aic;
    in.core = core;
    in.cluster = cluster;
    in.subblock = subblock;
    in.start = in.key = start;
    for (int i : t.tensors) in.descs.push_back(table_->at(static_cast<size_t>(i)));
    abi_args(in.descs, t.scalars, in.args);
    in.ctx =
        pool_ ? pool_->take(aic, t.block_idx, t.block_num, options_.record)
              : std::make_unique<CoreContext>(platform_, t.block_idx, t.block_num, options_.record);
    in.ctx->aic = aic;
    in.ctx->subblock = subblock;
    // Named as the instance's core and kernel; a kept context usually has those names already
    // (a warm run's kernel on the same core), and then nothing is copied.
    char name[24] = {'A', 'I', aic ? 'C' : 'V'};
    const char* name_end = std::to_chars(name + 3, name + sizeof name, core).ptr;
    const std::string_view core_name(name, static_cast<size_t>(name_end - name));
    if (in.ctx->core_name != core_name) in.ctx->core_name.assign(core_name);
    if (in.ctx->kernel != t.name) in.ctx->kernel = t.name;
    in.ctx->cluster = shared;
    in.ctx->waiter = this;
    in.ctx->atomic_log = &in.atomics;
    in.ctx->data = data_ ? &*data_ : nullptr;
    in.ctx->model.attach(this, start, options_.limits);
    in.ctx->model.gate_gm_writes(gates(t));
    KernelEntry entry = t.entry;
    Instance* raw = &in;
    in.fiber.emplace([entry, raw] {
      entry(raw->args.data());
      raw->ctx->model.finish();
    });
    (aic ? aic_busy_ : aiv_busy_)[static_cast<size_t>(core)] = 1;
    (aic ? aic_warm_ : aiv_warm_)[static_cast<size_t>(core)] = 1;
    ++cores_version_;
    size_t& used = aic ? aic_used_ : aiv_used_;
    used = std::max(used, static_cast<size_t>(core) + 1);
    task_left_[static_cast<size_t>(task)]++;
    instances_.push_back(std::move(inst));
    push(start, instances_.size() - 1);
  }

  std::vector<GmGate> gates(const TaskSpec& t) const {
    std::vector<GmGate> out;
    for (const auto& [task, tensor] : t.write_gates) {
      if (task < 0 || static_cast<size_t>(task) >= tasks_->size())
        throw SimError(ErrorKind::kInternal, "bad write gate");
      const pypto_tensor& d = table_->at(static_cast<size_t>(tensor));
      const int64_t lo = static_cast<int64_t>(reinterpret_cast<intptr_t>(d.data));
      out.push_back({lo, lo + tensor_bytes(d), task});
    }
    return out;
  }

  // ---- running ----------------------------------------------------------------------------
  void step(size_t i) {
    Instance& in = *instances_[i];
    if (in.done) return;
    // Woken from a wait whose condition still fails (a wake is for the whole cluster): it
    // would only block again, unchanged, so it does without switching to its fiber.
    if (in.ready != nullptr && !(*in.ready)()) {
      block(i);
      return;
    }
    running_ = static_cast<int>(i);
    {
      CoreBinding bind(in.ctx.get());
      in.fiber->resume();
    }
    running_ = -1;
    if (in.fiber->finished()) {
      finish(i);
    } else if (!in.blocked) {
      push(in.key, i);
    }
  }

  void finish(size_t i) {
    Instance& in = *instances_[i];
    const TaskSpec& t = (*tasks_)[static_cast<size_t>(in.task)];
    if (std::exception_ptr err = in.fiber->error()) {
      try {
        std::rethrow_exception(err);
      } catch (const SimError& e) {
        throw SimError(e.kind(), where(in, t) + ": " + e.what());
      }
    }
    in.done = true;
    in.fiber.reset();
    in.ctx->flush_put_off();  // a peer's pop may still read its memory
    // Its queued work need not be done yet: the next work on its memory (the context kept for a
    // later task) is queued behind it or drains first, as every run's-thread read does. A
    // decode's 16 thousand ends had each waited for the data thread (a tenth of its call).
    // Unless the data thread writes its atomic adds' log (moved below), or its memory may be
    // freed (no pool, or no room kept in it).
    if (in.ctx->queued_atomics || pool_ == nullptr || !pool_->has_room(in.aic)) drain();
    CoreModel& m = in.ctx->model;
    in.result.block = t.block_idx;
    in.result.stats = m.stats();
    if (options_.record) in.result.records = m.take_records();  // else empty, as it stays
    in.result.hazards = m.hazards().found();
    in.result.hazard_count = m.hazards().count();
    if (options_.hazards_fatal && in.result.hazard_count > 0) {
      throw SimError(ErrorKind::kHazard, hazard_message(t.name, in.result));
    }
    in.end = in.start + m.stats().total_cycles;
    (in.aic ? aic_free_ : aiv_free_)[static_cast<size_t>(in.core)] = in.end;
    (in.aic ? aic_busy_ : aiv_busy_)[static_cast<size_t>(in.core)] = 0;
    ++cores_version_;
    if (!in.atomics.empty())
      pending_.push_back({in.end, static_cast<size_t>(in.task), std::move(in.atomics)});
    if (t.kind == CoreKind::kCluster) {  // named in a deadlock report of its cluster peers
      in.ended = where(in, t) + " on " + in.ctx->core_name + " has ended" +
                 (in.ctx->loc[0] ? std::string(", last at ") + in.ctx->loc : std::string());
    }
    if (pool_ != nullptr) {
      pool_->give(std::move(in.ctx));
    } else {
      in.ctx.reset();
    }
    const size_t task = static_cast<size_t>(in.task);
    task_end_[task] = std::max(task_end_[task], in.end);
    if (--task_left_[task] == 0) complete(task);
    for (const Parked& e : parked_) push_task(e.time, e.task);
    parked_.clear();
  }

  void complete(size_t task) {
    wake(-1);  // write gates wait on task ends
    for (int d : dependents_[task]) {
      if (--remaining_deps_[static_cast<size_t>(d)] > 0) continue;
      uint64_t ready = 0;
      bool staged = true;  // every producer allows early resolve: the consumer waits pre-staged
      for (int dep : (*tasks_)[static_cast<size_t>(d)].deps) {
        ready = std::max(ready, task_end_[static_cast<size_t>(dep)]);
        staged = staged && (*tasks_)[static_cast<size_t>(dep)].early_resolve;
      }
      // assumption: a pre-staged consumer starts the cycle its last producer ends (the doorbell
      // that releases it is not measured); otherwise the runtime notices the producers' ends
      // and hands it over task_dispatch_cycles later (its head follows, see pick()).
      if (!staged) ready += static_cast<uint64_t>(platform_.task_dispatch_cycles);
      dispatches_[static_cast<size_t>(d)] = {ready, staged};
      push_task(ready, static_cast<size_t>(d));
    }
  }

  void check_all_done() const {
    const std::string msg = deadlock_report(instances_, *tasks_);
    if (!msg.empty()) {
      throw SimError(ErrorKind::kDeadlock,
                     "deadlock across cores: every unfinished kernel waits for another core" + msg);
    }
  }

  // ---- data -------------------------------------------------------------------------------
  // The queued data work is done (the run's thread is about to read or free what it writes).
  void drain() {
    if (data_) data_->drain();
  }

  // ---- atomics ----------------------------------------------------------------------------
  // The generator that shuffles atomic adds, or null when they are not shuffled. Seeded on first
  // use: seeding a Mersenne twister fills 312 words, a tenth of a tiny kernel's run.
  std::mt19937_64* shuffler() {
    if (!options_.shuffle_atomics) return nullptr;
    if (!rng_) rng_.emplace(options_.seed);
    return &*rng_;
  }

  void flush_all() {
    apply_atomics(pending_, shuffler());
    pending_.clear();
  }

  // A task that depends on `task` sees its atomic adds (see take_atomics_for).
  void flush_for(size_t task) {
    std::vector<PendingAtomics> now = take_atomics_for(pending_, task);
    if (now.empty()) return;
    drain();
    apply_atomics(now, shuffler());
  }

  // The run's results into `r`; `found`: its races.
  void collect(ChipResult& r, std::vector<std::string> found) {
    r.races = std::move(found);
    if (options_.hazards_fatal && !r.races.empty())
      throw SimError(ErrorKind::kRace, r.races.front());
    // By task, then AIC before its AIVs; nothing reads instances_ by index after this.
    if (instances_.size() > 1) {
      std::stable_sort(instances_.begin(), instances_.end(), [](const auto& a, const auto& b) {
        const Instance &x = *a, &y = *b;
        return x.task != y.task ? x.task < y.task
                                : x.aic > y.aic || (x.aic == y.aic && x.subblock < y.subblock);
      });
    }
    // Written in place, field by field, over what an earlier run left in `r` (its entries are
    // reused, not destroyed and made again): the record table (three buffers and a map) is
    // moved only when the run records, and no temporary result is moved and destroyed.
    r.instances.resize(instances_.size());
    for (size_t i = 0; i < instances_.size(); ++i) {
      Instance& in = *instances_[i];
      TaskResult& t = r.instances[i];
      t.block.block = in.result.block;
      t.block.stats = in.result.stats;
      if (options_.record) {
        t.block.records = std::move(in.result.records);
      } else if (t.block.records.size() > 0) {  // an earlier recorded run's, never handed over
        t.block.records = RecordTable();
      }
      t.block.hazards = std::move(in.result.hazards);
      t.block.hazard_count = in.result.hazard_count;
      t.task = in.task;
      t.core = in.core;
      t.cube = in.aic;
      t.cluster = in.cluster;
      t.subblock = in.subblock;
      t.start = in.start;
      t.end = in.end;
    }
    r.memory = memory_.stats();
  }

  const std::vector<TaskSpec>* tasks_ = nullptr;      // the run's (begin)
  const std::vector<pypto_tensor>* table_ = nullptr;  // the run's (begin)
  std::vector<std::pair<int64_t, int64_t>> written_;  // see find_written
  bool written_known_ = false;
  const Platform& platform_;
  ScheduleOptions options_;
  CorePool* pool_ = nullptr;
  uint64_t runs_ = 0;                                   // runs begun
  const std::vector<TaskSpec>* small_tasks_ = nullptr;  // see small()
  size_t small_count_ = 0;
  MemorySystem memory_;
  std::optional<std::mt19937_64> rng_;  // see shuffler()
  std::vector<uint64_t> aic_free_, aiv_free_;
  // 0 or 1: bytes, not std::vector<bool>, so a run's reset of the used entries is a memset
  std::vector<uint8_t> aic_busy_, aiv_busy_;
  std::vector<uint8_t> aic_warm_, aiv_warm_;  // has run a task in this run (see pick())
  std::vector<size_t> remaining_deps_;
  std::vector<uint64_t> task_end_;
  std::vector<int> task_left_;
  size_t aic_used_ = 0, aiv_used_ = 0;  // the cores launched on: a prefix of each table
  std::vector<std::vector<int>> dependents_;
  std::vector<bool> dispatched_;
  EventQueue events_;
  std::vector<Dispatch> dispatches_;  // per task
  // Per task, its TaskSpec's kind: a finish re-tries every parked task, thousands on a large
  // decode, and each re-try reads only the kind (a 168-byte TaskSpec apiece missed the cache).
  std::vector<CoreKind> kinds_;
  // A task that found every core of its kind running, and when it looked (dispatch()).
  struct Parked {
    uint64_t time;
    uint32_t task;
  };
  std::vector<Parked> parked_;
  // The tasks of each queued dispatch event (push_task), free slots for new ones, the batch
  // being dispatched, and the last one pushed while it may still grow.
  std::vector<std::vector<uint32_t>> batches_;
  std::vector<size_t> free_batches_;
  std::vector<uint32_t> popped_;
  std::vector<KindCounts> batch_kinds_;  // per batch, its tasks of each kind
  // dispatch_batch's re-queues gathered per time (one per kind at most), in first-push order.
  Deferred deferred_[3];
  size_t deferred_count_ = 0;
  int64_t open_batch_ = -1;
  uint64_t open_seq_ = 0, open_time_ = 0;
  // pick()'s last look per core kind, valid while cores_version_ (bumped by every launch and
  // finish) has not moved.
  struct PickMemo {
    uint64_t version = ~uint64_t{0};
    Pick best;
  };
  PickMemo memo_[3];
  uint64_t cores_version_ = 0;
  std::vector<std::unique_ptr<Instance>> instances_;
  std::vector<std::unique_ptr<Instance>> spare_;  // cleared ones from earlier runs
  std::vector<std::vector<size_t>> waiting_;      // the blocked instances per cluster: block()
  std::vector<size_t> woken_;                     // wake(-1)'s merge of them
  std::vector<std::unique_ptr<Cluster>> clusters_;
  std::vector<PendingAtomics> pending_;
  uint64_t seq_ = 0;
  int running_ = -1;
  // Last, so it is destroyed first: its thread finishes the queued work while the cores'
  // memories, the rings and the atomics logs it writes still exist.
  std::optional<DataQueue> data_;
};

}  // namespace

ChipResult run_tasks(const std::vector<TaskSpec>& tasks, const std::vector<pypto_tensor>& table,
                     const Platform& platform, const ScheduleOptions& options, CorePool* pool) {
  ChipResult out;
  run_tasks(tasks, table, platform, options, pool, out);
  return out;
}

void run_tasks(const std::vector<TaskSpec>& tasks, const std::vector<pypto_tensor>& table,
               const Platform& platform, const ScheduleOptions& options, CorePool* pool,
               ChipResult& out) {
  std::optional<ChipScheduler> local;
  ChipScheduler* s = nullptr;
  if (pool == nullptr) {
    s = &local.emplace(platform);
  } else {
    s = static_cast<ChipScheduler*>(pool->run_state.get());  // the only kind of Kept
    if (s == nullptr || &s->platform() != &platform) {
      pool->run_state = std::make_unique<ChipScheduler>(platform);
      s = static_cast<ChipScheduler*>(pool->run_state.get());
    }
  }
  // Before any core allocates its on-chip spaces; once for a pool's tasks that need little.
  if (!s->small(tasks) && check_host_memory(tasks, platform)) s->set_small(tasks);
  s->begin(tasks, table, options, pool);
  try {
    s->run(out);
  } catch (...) {
    s->end();  // its kernels unwound and its data thread ended now, as the run's own thread
    throw;
  }
  s->end();
}

}  // namespace pypto
