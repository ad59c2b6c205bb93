// The chip scheduler's state and reports (internal to csrc/chip/core): one kernel
// instance, the event queue's entries, the atomic adds waiting to be applied, and the messages
// a run ends with (scheduler_report.cpp) — shared by scheduler.cpp and its helpers.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "chip/core/context.hpp"
#include "chip/core/scheduler.hpp"
#include "simulator/fiber.hpp"

namespace pypto::sched {

constexpr size_t kMaxGmTouches = 4096;  // per instance, for the cross-task race check

struct PendingAtomics {
  uint64_t end;
  size_t task;
  std::vector<AtomicWrite> writes;
};

struct GmTouch {
  Access access;
  const char* name;
  const char* loc;
  uint32_t phase;  // SYNCALL rounds the instance had passed when it touched
};

struct Instance {
  int task = 0;
  bool aic = false;
  int core = 0, cluster = 0, subblock = 0;
  uint64_t start = 0, end = 0, key = 0;  // key: the simulated time it continues at
  bool done = false, blocked = false;
  // While blocked: what it waits for (described only by a deadlock report) and where.
  const std::function<std::string()>* waiting_on = nullptr;
  const char* waiting_at = "";
  // While blocked or woken from a wait: the condition it waits for (on its fiber's stack).
  const std::function<bool()>* ready = nullptr;
  std::string ended;    // a cluster core that finished: who and its last line
  std::string barrier;  // the SYNCALL barrier it takes part in ("" if none) ...
  uint32_t phase = 0;   // ... and the rounds it has passed
  std::vector<pypto_tensor> descs;
  std::vector<int64_t> args;
  std::unique_ptr<CoreContext> ctx;
  std::optional<Fiber> fiber;  // in place: no heap block per instance
  std::vector<AtomicWrite> atomics;
  std::vector<GmTouch> writes, reads;
  BlockResult result;

  // As if just constructed, for another run's kernel instance: an unfinished kernel is
  // cancelled and a core context still held is freed; the small lists keep their storage.
  void clear();
};

// An entry of the event queue: at `time`, resume an instance or dispatch a task (its ready
// time and whether it is staged are the task's: Dispatch). 16 bytes: the queue is a heap a pop
// walks from the root down, and it is cold at every core's turn.
struct Event {
  static constexpr int kWhatBits = 24;
  static constexpr uint64_t kTask = uint64_t{1} << (kWhatBits - 1);  // what: a task to dispatch
  static constexpr uint64_t kMaxSeq = uint64_t{1} << (64 - kWhatBits);
  uint64_t time;
  uint64_t order;  // the push's sequence number (ties go to the earlier push) << kWhatBits | what
  uint64_t what() const { return order & ((uint64_t{1} << kWhatBits) - 1); }
  bool operator>(const Event& o) const { return time != o.time ? time > o.time : order > o.order; }
};

// A task's dispatch: when it is ready, and whether it is staged (its producers all resolve
// early, see complete()).
struct Dispatch {
  uint64_t ready = 0;
  bool staged = false;
};

// What a run's scheduler leaves in its CorePool for the next run of the same tasks: the chip
// scheduler itself (scheduler.cpp), its state cleared but for its storage — its per-core and
// per-task tables (of which the next run resets only the entries this one used), the
// instances it ran, cleared (a warm run of a small kernel then allocates no instance, fiber or
// argument array), its memory system, the event queue and its other lists. A warm run of a
// small kernel then makes and frees no scheduler and moves no table in and out of the pool.
struct Kept {
  virtual ~Kept() = default;
};

// "kernel 'k' (block b[, core])": how messages name an instance.
std::string where(const Instance& in, const TaskSpec& t);

// The hazard checker's findings in one instance, for a fatal error.
std::string hazard_message(const std::string& kernel, const BlockResult& r);

// One line per unfinished instance and what it waits for, plus the ended cluster peers of a
// blocked one; empty when every instance is done.
std::string deadlock_report(const std::vector<std::unique_ptr<Instance>>& instances,
                            const std::vector<TaskSpec>& tasks);

// Instances of different tasks that overlap in simulated time and touch the same GM bytes,
// one writing: at most 8, described.
std::vector<std::string> races(const std::vector<std::unique_ptr<Instance>>& instances,
                               const std::vector<TaskSpec>& tasks);

// Applies pending atomic adds in simulated completion order (shuffled by `shuffle` unless null).
void apply_atomics(std::vector<PendingAtomics>& v, std::mt19937_64* shuffle);

// Takes out of `pending` the adds a task depending on `task` must see: `task`'s own and every
// other pending add to the same tensors (to keep the completion order).
std::vector<PendingAtomics> take_atomics_for(std::vector<PendingAtomics>& pending, size_t task);

}  // namespace pypto::sched
