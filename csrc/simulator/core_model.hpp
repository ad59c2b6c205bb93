// The timing model of one AI core: in-order scalar issue into per-pipe in-order queues.
//
// Contract: an instruction starts at max(issue time, its pipe free, the flag it waits on)
// and ends `cost` cycles later. set_flag fires when its source pipe reaches it; wait_flag
// blocks its destination pipe until then; a wait whose set has not been issued yet blocks
// that pipe (later instructions on it queue behind) until the set is scheduled. A pipe still
// blocked at the end, or at a PIPE_ALL barrier, is a deadlock. A GM write gate holds every
// write into its byte range until a given cycle (a tensor still being written by a task on
// another core). Pure event arithmetic: O(1) per instruction plus the hazard scan over
// in-flight accesses.
#pragma once
#include <array>
#include <cstdint>
#include <deque>
#include <vector>

#include "pypto/abi.h"
#include "simulator/cost_model.hpp"
#include "simulator/hazard.hpp"
#include "simulator/memory_system.hpp"
#include "simulator/op_desc.hpp"
#include "simulator/platform/platform.hpp"
#include "simulator/record_table.hpp"

namespace pypto {

enum class InstrKind : uint8_t { kOp, kSetFlag, kWaitFlag, kBarrier };

struct Instr {
  InstrKind kind = InstrKind::kOp;
  int pipe = 0;           // the pipe it runs on (dst pipe for wait, src pipe for set)
  OpDesc op;              // what the cost model prices
  const char* name = "";  // instruction name, static storage
  const char* loc = "";   // kernel source location, static storage
  // set/wait: the flag; a tile-pipe transfer (an op): its route, from core != to core
  int flag_src = 0, flag_dst = 0, flag_id = 0;
  uint64_t bytes = 0;  // data moved or processed (for reports)
  int64_t addr = -1;   // first on-chip address touched, -1 if none
  AccessList accesses;
  // Cross-core events: the instruction starts no earlier than `not_before` (absolute cycles),
  // and its absolute end is written to `*publish_end` once it is scheduled.
  uint64_t not_before = 0;
  uint64_t* publish_end = nullptr;
  // A cross-core sync: where a platform has cross_sync_holds_issue, later instructions issue
  // only once it has passed (kUntilStart: a wait, once satisfied; kUntilEnd: a set or push,
  // once the work before it and its own data have ended).
  enum class Hold : uint8_t { kNone, kUntilStart, kUntilEnd };
  Hold hold = Hold::kNone;

  // A push or pop of a tile pipe: its GM ring is private to the pipe's two cores and ordered
  // by the pipe itself, so it cannot race with another task.
  bool pipe_transfer() const { return kind == InstrKind::kOp && flag_src != flag_dst; }
};

// GM bytes [lo, hi) (host addresses) may not be written before task `task` has ended.
struct GmGate {
  int64_t lo = 0, hi = 0;
  int task = 0;
};

// What a core model sees of the chip it runs on (the chip scheduler implements it).
class ChipLink {
 public:
  virtual ~ChipLink() = default;
  // Before a GM transfer that starts at absolute cycle `t`: cores at earlier simulated times
  // run first, so shared resources are claimed in simulated-time order.
  virtual void reach(uint64_t t) = 0;
  // The absolute cycle at which task `task` ends (waits for it to finish if it has not).
  virtual uint64_t task_end(int task) = 0;
  virtual MemorySystem& memory() = 0;
  // Every GM access, for the race check between tasks that overlap in time.
  virtual void note_gm(const Access& a, bool atomic, const char* name, const char* loc) = 0;
  // Whether no op of the run can write the memory of the run's tensor `index`: no tensor of
  // the run's table that a kernel may write (flagged neither input nor read-only) overlaps it.
  virtual bool unwritten(int index) = 0;
};

// Run limits: 0 = none. Checked as instructions issue.
struct RunLimits {
  uint64_t max_cycles = 0;        // absolute simulated cycles
  uint64_t max_instructions = 0;  // per kernel instance
};

struct CoreStats {
  uint64_t total_cycles = 0;
  uint64_t instructions = 0;
  std::array<uint64_t, PYPTO_NUM_PIPES> pipe_busy{};
  // This kernel instance's share of the memory system's counters: what its own GM transfers
  // looked up in the L2 and drew from HBM and the L2 (a kernel's bytes and hit rate).
  MemoryStats memory;
};

class CoreModel {
 public:
  explicit CoreModel(const Platform& platform, bool record = false);
  CoreModel(const CoreModel&) = delete;  // holds a pointer into itself (last_vector_)
  CoreModel& operator=(const CoreModel&) = delete;
  // Back to the state the constructor leaves, keeping the buffers (a core context reused by
  // the next run of a program allocates nothing for its timing model).
  void reset(bool record);
  // The hazard rings' buffers given back to the thread (HazardChecker::release_buffers).
  void release_buffers() { hazards_.release_buffers(); }

  // Issues one instruction in program order and schedules it (or queues it behind a
  // blocked wait). Throws SimError(kFlag) for an invalid flag, kDeadlock at a PIPE_ALL
  // barrier while a pipe is blocked.
  void issue(const Instr& instr);
  // issue() of a vector instruction (OpClass::kVector of class `c` over `bytes`, first address
  // `addr`) whose accesses are all on chip: the hot path of a loop of small vector ops, which
  // neither builds the instruction nor walks the cases a vector op never has (flags, GM,
  // cross-core events). The same times, statistics, race check and record as issue().
  void issue_vector(const char* name, const char* loc, VecClass c, int64_t bytes, int64_t addr,
                    const AccessList& accesses);
  // Ends the kernel: throws kDeadlock naming the wait if a pipe is still blocked.
  void finish();
  // Places the model on a chip: times are relative to `origin` (the task's start, absolute);
  // GM transfers go through the chip's memory system.
  void attach(ChipLink* chip, uint64_t origin, const RunLimits& limits) {
    chip_ = chip;
    origin_ = origin;
    limits_ = limits;
    armed_ = false;
    check_at_ = next_check();
  }
  ChipLink* chip() const { return chip_; }  // null off a chip (a bare model)
  // Holds later writes into each gate's range until its task has ended.
  void gate_gm_writes(std::vector<GmGate> gates) { gates_ = std::move(gates); }

  const CoreStats& stats() const { return stats_; }
  const RecordTable& records() const { return records_; }
  RecordTable take_records() {
    RecordTable out = std::move(records_);
    records_ = RecordTable();
    return out;
  }
  const HazardChecker& hazards() const { return hazards_; }
  uint64_t now() const { return issue_time_; }

 private:
  struct Pending {
    uint32_t index;
    uint64_t issue;
    Instr instr;
  };
  // A pipe blocked on a wait whose set is not issued yet (its bit in blocked_pipes_): the wait
  // and the instructions queued behind it.
  struct Blocked {
    Pending wait;
    std::deque<Pending> queued;
  };
  using FlagKey = int;

  FlagKey flag_key(int src, int dst, int id) const;
  // A set's or wait's flag names two different pipes and an event id of the platform: tested
  // inline on every sync (a pipe compared as unsigned, so a negative one fails too), the message
  // built out of line.
  void check_flag(const Instr& in) const {
    const auto pipes = static_cast<unsigned>(PYPTO_NUM_PIPES);
    if (static_cast<unsigned>(in.flag_src) < pipes && static_cast<unsigned>(in.flag_dst) < pipes &&
        in.flag_src != in.flag_dst && in.flag_id >= 0 && in.flag_id < platform_.event_ids) {
      return;
    }
    refuse_flag(in);
  }
  [[noreturn, gnu::noinline, gnu::cold]] void refuse_flag(const Instr& in) const;
  void schedule(uint32_t index, uint64_t issue, const Instr& in);
  void schedule(const Pending& p) { schedule(p.index, p.issue, p.instr); }
  // schedule() of a wait whose set is not issued yet: its pipe blocks on it.
  [[gnu::noinline]] void block(uint32_t index, uint64_t issue, const Instr& in);
  // issue() of an instruction queued behind a blocked pipe or moved to another pipe (a
  // PIPE_ALL barrier issues on the scalar pipe): scheduled or queued as a copy.
  [[gnu::noinline]] void issue_copy(uint32_t index, const Instr& instr, int pipe);
  void unblock_waiters(FlagKey key);
  void record(uint32_t index, uint64_t issue, const Instr& in, uint64_t start, uint64_t end);
  uint64_t gated_start(const Instr& in, uint64_t start) const;
  void hold_issue(const Instr& in, uint64_t end);
  uint64_t cost_of(const Instr& in, uint64_t start) {
    if (in.pipe == PYPTO_VECTOR && cost::has_vector_head(in.op)) {  // runs: cost_model.hpp
      const uint64_t c = on_chip_cost(in.op, start == vector_run_end_);
      vector_run_end_ = last_ends_run_ ? UINT64_MAX : start + c;
      return c;
    }
    return cost_off_vector(in, start);
  }
  uint64_t cost_off_vector(const Instr& in, uint64_t start);
  // On-chip costs (and whether an op ends its vector run) are a pure function of the
  // description: the last op priced of each class is kept, so a loop whose body mixes classes
  // (a sync between vector ops, a move between matmuls) prices each op once.
  uint64_t on_chip_cost(const OpDesc& op, bool continues_run) {
    Price& p = prices_[static_cast<size_t>(op.cls) % kPriceSlots];
    if (!(op == p.op) || continues_run != p.continues) price(p, op, continues_run);
    last_ends_run_ = p.ends_run;
    return p.cost;
  }
  struct Price;
  void price(Price& p, const OpDesc& op, bool continues_run);
  // issue_vector's pricing of a kVector op of class `c` over `bytes` (whether it continues a
  // run): its cost and whether it ends its run, kept apart from prices_ as the key is three
  // small fields. The last two sizes of each class and run state are kept: a softmax's ops of
  // one class alternate between a block and its row vector.
  struct VectorPrice {
    VecClass cls = VecClass::kUnary;
    bool ends_run = false, priced = false;
    int64_t bytes = 0;
    uint64_t cost = 0;
    bool is(VecClass c, int64_t b) const { return b == bytes && c == cls && priced; }
  };
  const VectorPrice& vector_price(VecClass c, int64_t bytes, bool continues_run) {
    // The entry found last first: a loop of one op reads nothing else.
    if (last_vector_->is(c, bytes) && continues_run == last_vector_continues_) {
      return *last_vector_;
    }
    auto& two = vector_prices_[static_cast<size_t>(c) % kPriceSlots][continues_run];
    last_vector_continues_ = continues_run;
    if (two[1].is(c, bytes)) return *(last_vector_ = &two[1]);
    if (!two[0].is(c, bytes)) {
      two[1] = two[0];
      price_vector(two[0], c, bytes, continues_run);
    }
    return *(last_vector_ = &two[0]);
  }
  [[gnu::noinline]] void price_vector(VectorPrice& v, VecClass c, int64_t bytes,
                                      bool continues_run);
  // issue_vector through issue(), as a whole instruction: out of line, so the fast path's frame
  // holds no Instr.
  [[gnu::noinline, gnu::cold]] void issue_vector_in_full(const char* name, const char* loc,
                                                         VecClass c, int64_t bytes, int64_t addr,
                                                         const AccessList& accesses);
  void check_limits(const Instr& in);
  [[gnu::noinline, gnu::cold]] void stop_if_past_limits(const Instr& in, bool stop);
  uint64_t next_check() const;
  void drain_for_barrier();
  void clear_prices();

  const Platform& platform_;
  bool record_;
  ChipLink* chip_ = nullptr;
  uint64_t origin_ = 0;
  RunLimits limits_;
  // The instruction count at which check_limits next looks past its fast path: the budget, the
  // point this core arms the Ctrl-C handler (interrupt.hpp), or 0 with max_cycles (every one).
  uint64_t check_at_ = UINT64_MAX;
  bool armed_ = false;  // this core has armed the Ctrl-C handler in this run
  uint64_t issue_time_ = 0;
  // The platform's scalar issue cost in whole cycles, converted once (a double-to-integer
  // conversion on every issue sat on the chain of dependent issue times).
  uint64_t issue_cycles_ = 0;
  std::array<uint64_t, PYPTO_NUM_PIPES> pipe_free_{};
  uint64_t vector_run_end_ = UINT64_MAX;  // end of the last vector instruction (its run)
  // Bit p set: pipe p is blocked (blocked_[p] holds its wait). Read by every issue and every
  // set, it sits with the other state an instruction touches: the cores take turns every few
  // instructions, so each cache line a turn reads has mostly been evicted by the others'
  // (a flag per Blocked put seven lines apart, all of them read by every set).
  uint32_t blocked_pipes_ = 0;
  bool blocked(int pipe) const { return ((blocked_pipes_ >> pipe) & 1U) != 0; }
  CoreStats stats_;  // here too: every instruction adds to it
  std::vector<GmGate> gates_;
  // Set times not yet consumed, one FIFO per flag key in a flat table (a map's node walk
  // missed the cache on every set and wait). The oldest time sits in the entry itself: a
  // set is mostly consumed before the next, and then no other cache line is read. An entry is
  // 16 bytes, four to a cache line and never split across two (a set or wait read a line the
  // other cores' turns had evicted, sometimes two); the rest of a FIFO is kept aside.
  struct Fired {
    uint64_t first = 0;  // the oldest time, when count > 0
    uint32_t count = 0;
    uint32_t used = 0;  // 0 until set since the last reset; then 1 + its index in fired_used_
  };
  // The times after `first` of a flag set more than once before its waits, from `head` on.
  struct FiredLater {
    std::vector<uint64_t> times;
    size_t head = 0;
  };
  // A set of flag `key` fired at `t`. Inline, the common case: a flag set before, whose sets
  // were all waited for since.
  void fire(size_t key, uint64_t t) {
    Fired& f = fired_[key];
    if (f.used != 0 && f.count == 0) {
      f.count = 1;
      f.first = t;
      return;
    }
    fire_again(f, key, t);
  }
  [[gnu::noinline]] void fire_again(Fired& f, size_t key, uint64_t t);
  uint64_t take(Fired& f);
  std::vector<Fired> fired_;
  // The entries of fired_ set since the last reset: a reset clears only these (a platform has
  // 49 pipe pairs times its event ids, and a small kernel uses a handful). fired_later_[i]
  // belongs to fired_used_[i] (kept with its buffers across resets).
  std::vector<size_t> fired_used_;
  std::vector<FiredLater> fired_later_;
  // On a line of its own: its first (latest_end_ and the top two pipes) is read by every
  // instruction with accesses.
  alignas(64) HazardChecker hazards_;
  // The last op priced of each class (slot: the class's number; an OpDesc compares its class,
  // so a slot never answers for another), its cost and whether it ends its vector run.
  static constexpr size_t kPriceSlots = 16;
  struct Price {
    OpDesc op;  // an unused slot holds OpDesc{}: priced as a fixed 0-cycle op
    uint64_t cost = 0;
    bool continues = false, ends_run = false;
  };
  std::array<Price, kPriceSlots> prices_{};
  bool last_ends_run_ = false;  // of the op on_chip_cost answered for last
  std::array<std::array<std::array<VectorPrice, 2>, 2>, kPriceSlots> vector_prices_{};
  const VectorPrice* last_vector_ = &vector_prices_[0][0][0];  // and its run state:
  bool last_vector_continues_ = false;  // the entry's place in vector_prices_
  // Read only while a pipe is blocked, and made at the model's first block: seven waits (an
  // Instr each, ~2.7 KB to zero) and seven deques (an allocation each) had been built with
  // every model, and most of a run's core models are new ones, many never blocking.
  std::vector<Blocked> blocked_;
  RecordTable records_;
};

const char* pipe_name(int pipe);

}  // namespace pypto
