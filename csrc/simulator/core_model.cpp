#include "simulator/core_model.hpp"

#include <algorithm>
#include <string>

#include "simulator/cost_model.hpp"
#include "simulator/errors.hpp"
#include "simulator/hardware.hpp"
#include "simulator/interrupt.hpp"

namespace pypto {

const char* pipe_name(int pipe) {
  if (pipe >= 0 && pipe < PYPTO_NUM_PIPES) return hw::kPipeNames[pipe];
  return pipe == PYPTO_PIPE_ALL ? "ALL" : "?";
}

namespace {

std::string where(const char* name, uint32_t index, const char* loc) {
  return std::string(name) + " #" + std::to_string(index) +
         (loc[0] ? std::string(" at ") + loc : "");
}

std::string flag_text(const Instr& in) {
  return std::string("(") + pipe_name(in.flag_src) + " -> " + pipe_name(in.flag_dst) + ", event " +
         std::to_string(in.flag_id) + ")";
}

}  // namespace

CoreModel::CoreModel(const Platform& platform, bool record)
    : platform_(platform),
      record_(record),
      fired_(static_cast<size_t>(PYPTO_NUM_PIPES * PYPTO_NUM_PIPES *
                                 std::max(platform.event_ids, 0))) {
  issue_cycles_ = static_cast<uint64_t>(platform.scalar_issue_cycles);
  clear_prices();
}

// Every slot holds OpDesc{} (a fixed op of 0 cycles) with its true price, as if priced.
void CoreModel::clear_prices() {
  prices_.fill(Price{});
  for (Price& p : prices_) p.ends_run = cost::ends_vector_run(platform_, p.op);
  last_ends_run_ = false;
  for (auto& by_run : vector_prices_) {
    for (auto& two : by_run) two.fill(VectorPrice{});
  }
  last_vector_ = &vector_prices_[0][0][0];
  last_vector_continues_ = false;
}

void CoreModel::reset(bool record) {
  record_ = record;
  issue_cycles_ = static_cast<uint64_t>(platform_.scalar_issue_cycles);
  chip_ = nullptr;
  origin_ = 0;
  limits_ = RunLimits{};
  armed_ = false;
  check_at_ = next_check();
  issue_time_ = 0;
  pipe_free_.fill(0);
  vector_run_end_ = UINT64_MAX;
  for (Blocked& b : blocked_) b.queued.clear();  // `wait` is set when its pipe blocks
  blocked_pipes_ = 0;
  for (size_t i = 0; i < fired_used_.size(); ++i) {
    fired_[fired_used_[i]] = Fired{};
    fired_later_[i].times.clear();
    fired_later_[i].head = 0;
  }
  fired_used_.clear();
  hazards_.reset();
  // The price memo stays: a price is a pure function of the op and the platform, which is
  // fixed for the model's lifetime (read-only from Python), so the next run's lookups hit.
  gates_.clear();
  stats_ = CoreStats{};
  records_ = RecordTable();
}

// Valid for a flag that passed check_flag.
CoreModel::FlagKey CoreModel::flag_key(int src, int dst, int id) const {
  return (src * PYPTO_NUM_PIPES + dst) * platform_.event_ids + id;
}

void CoreModel::refuse_flag(const Instr& in) const {
  bool pipes_ok = in.flag_src >= 0 && in.flag_src < PYPTO_NUM_PIPES && in.flag_dst >= 0 &&
                  in.flag_dst < PYPTO_NUM_PIPES && in.flag_src != in.flag_dst;
  if (!pipes_ok) {
    throw SimError(ErrorKind::kFlag, std::string(in.name) + " " + flag_text(in) +
                                         ": a flag joins two different pipes" +
                                         (in.loc[0] ? std::string(" at ") + in.loc : ""));
  }
  if (in.flag_id < 0 || in.flag_id >= platform_.event_ids) {
    throw SimError(ErrorKind::kFlag,
                   std::string(in.name) + " " + flag_text(in) + ": event id out of range [0, " +
                       std::to_string(platform_.event_ids) + ") on " + platform_.name +
                       (in.loc[0] ? std::string(" at ") + in.loc : ""));
  }
  throw SimError(ErrorKind::kInternal, std::string(in.name) + " " + flag_text(in) +
                                           ": refused a flag that passed every check");
}

uint64_t CoreModel::next_check() const {
  if (limits_.max_cycles != 0) return 0;
  const uint64_t budget = limits_.max_instructions != 0 ? limits_.max_instructions : UINT64_MAX;
  return armed_ ? budget : std::min(budget, kArmAfterInstructions);
}

void CoreModel::check_limits(const Instr& in) {
  const bool stop = interrupt_flag().load(std::memory_order_relaxed);
  if (!stop && stats_.instructions < check_at_) return;  // the usual case
  stop_if_past_limits(in, stop);
}

void CoreModel::stop_if_past_limits(const Instr& in, bool stop) {
  if (stop) {
    throw SimError(ErrorKind::kInterrupted,
                   std::string("interrupted at ") + in.name +
                       (in.loc[0] ? std::string(" (") + in.loc + ")" : std::string()));
  }
  if (!armed_ && stats_.instructions >= kArmAfterInstructions) {
    armed_ = true;
    arm_interrupts();
    check_at_ = next_check();
  }
  const bool budget = limits_.max_instructions && stats_.instructions >= limits_.max_instructions;
  const bool cycles = limits_.max_cycles && origin_ + issue_time_ > limits_.max_cycles;
  if (!budget && !cycles) return;
  const std::string what =
      budget ? "the instruction budget of " + std::to_string(limits_.max_instructions)
             : "max_cycles=" + std::to_string(limits_.max_cycles);
  throw SimError(ErrorKind::kLimit,
                 "the run passed " + what + " at " + in.name +
                     (in.loc[0] ? std::string(" (") + in.loc + ")" : std::string()) +
                     ": a kernel that never finishes, or raise the limit in RunConfig");
}

void CoreModel::issue(const Instr& instr) {
  check_limits(instr);
  if (instr.kind == InstrKind::kSetFlag || instr.kind == InstrKind::kWaitFlag) check_flag(instr);
  int pipe = instr.pipe;
  if (instr.kind == InstrKind::kBarrier && pipe == PYPTO_PIPE_ALL) {
    drain_for_barrier();
    pipe = PYPTO_SCALAR;
  }
  const uint64_t issue_cost = issue_cycles_;
  issue_time_ += issue_cost;
  stats_.pipe_busy[PYPTO_SCALAR] += issue_cost;
  const auto index = static_cast<uint32_t>(stats_.instructions++);
  if (!blocked(pipe) && pipe == instr.pipe) {  // the common case: no copy of the instruction
    schedule(index, issue_time_, instr);
    return;
  }
  issue_copy(index, instr, pipe);
}

// Out of line, as block(): the copy would give every issue a frame of an Instr.
void CoreModel::issue_copy(uint32_t index, const Instr& instr, int pipe) {
  Pending p{index, issue_time_, instr};
  p.instr.pipe = pipe;
  if (blocked(pipe)) {
    blocked_[pipe].queued.push_back(std::move(p));
    return;
  }
  schedule(p);
}

void CoreModel::issue_vector(const char* name, const char* loc, VecClass c, int64_t bytes,
                             int64_t addr, const AccessList& accesses) {
  // A blocked vector pipe, a limit or an interrupt to look at: the general path.
  if (blocked(PYPTO_VECTOR) || interrupt_flag().load(std::memory_order_relaxed) ||
      stats_.instructions >= check_at_) [[unlikely]] {
    issue_vector_in_full(name, loc, c, bytes, addr, accesses);
    return;
  }
  issue_time_ += issue_cycles_;
  stats_.pipe_busy[PYPTO_SCALAR] += issue_cycles_;
  const auto index = static_cast<uint32_t>(stats_.instructions++);
  // schedule() for an op with no flag, no GM access (so no gate and no GM race note), no
  // cross-core start, end or hold.
  const uint64_t start = std::max(issue_time_, pipe_free_[PYPTO_VECTOR]);
  const VectorPrice& price = vector_price(c, bytes, start == vector_run_end_);
  const uint64_t cost = price.cost;
  vector_run_end_ = price.ends_run ? UINT64_MAX : start + cost;
  uint64_t end = 0;
  if (__builtin_add_overflow(start, cost, &end)) end = UINT64_MAX;
  pipe_free_[PYPTO_VECTOR] = end;
  stats_.pipe_busy[PYPTO_VECTOR] += cost;
  stats_.total_cycles = std::max(stats_.total_cycles, end);
  if (accesses.size > 0) {
    hazards_.check(PYPTO_VECTOR, start, end, index, name, loc, accesses, issue_time_);
  }
  if (record_) {
    records_.add({index, static_cast<int64_t>(InstrKind::kOp), PYPTO_VECTOR, name, loc, issue_time_,
                  start, end, 0, 0, 0, static_cast<uint64_t>(bytes), addr});
  }
}

void CoreModel::issue_vector_in_full(const char* name, const char* loc, VecClass c, int64_t bytes,
                                     int64_t addr, const AccessList& accesses) {
  Instr in;
  in.pipe = PYPTO_VECTOR;
  in.op.cls = OpClass::kVector;
  in.op.vec = c;
  in.op.bytes = bytes;
  in.name = name;
  in.loc = loc;
  in.bytes = static_cast<uint64_t>(bytes);
  in.addr = addr;
  in.accesses = accesses;
  issue(in);
}

// PIPE_ALL: every pipe drains before the barrier issues; a pipe blocked forever is a deadlock.
void CoreModel::drain_for_barrier() {
  for (int p = 0; p < PYPTO_NUM_PIPES; ++p) {
    if (blocked(p)) {
      const Pending& w = blocked_[p].wait;
      throw SimError(ErrorKind::kDeadlock,
                     "deadlock: pipe_barrier(PIPE_ALL) #" +
                         std::to_string(static_cast<uint32_t>(stats_.instructions)) +
                         " waits for " + pipe_name(p) + ", which is blocked forever on " +
                         where(w.instr.name, w.index, w.instr.loc) + " " + flag_text(w.instr) +
                         " (no matching set_flag was issued before the barrier)");
    }
  }
  for (uint64_t t : pipe_free_) issue_time_ = std::max(issue_time_, t);
}

void CoreModel::schedule(uint32_t index, uint64_t issue, const Instr& in) {
  uint64_t start = std::max(issue, pipe_free_[in.pipe]);
  if (in.kind == InstrKind::kWaitFlag) {
    Fired& q = fired_[static_cast<size_t>(flag_key(in.flag_src, in.flag_dst, in.flag_id))];
    if (q.count == 0) {  // the set comes later in program order: block until then
      block(index, issue, in);
      return;
    }
    start = std::max(start, take(q));
  }
  if (in.not_before > origin_) start = std::max(start, in.not_before - origin_);
  if (!gates_.empty()) start = gated_start(in, start);
  const uint64_t cost = cost_of(in, start);
  uint64_t end = 0;
  if (__builtin_add_overflow(start, cost, &end)) end = UINT64_MAX;  // saturates, never wraps
  pipe_free_[in.pipe] = end;
  stats_.pipe_busy[in.pipe] += cost;
  if (in.publish_end != nullptr) *in.publish_end = origin_ + end;
  // Scalar GM accesses (TREAD / TWRITE) are priced on chip but race like any GM access.
  const bool gm_access = in.op.touches_gm() || in.op.cls == OpClass::kScalarAccess;
  if (chip_ != nullptr && gm_access && !in.pipe_transfer()) {
    for (int i = 0; i < in.accesses.size; ++i) {
      const Access& a = in.accesses.items[i];
      if (a.space == PYPTO_GM) chip_->note_gm(a, in.op.atomic, in.name, in.loc);
    }
  }
  stats_.total_cycles = std::max(stats_.total_cycles, end);
  if (in.hold != Instr::Hold::kNone && platform_.cross_sync_holds_issue != 0) hold_issue(in, end);
  if (in.accesses.size > 0) {
    hazards_.check(in.pipe, start, end, index, in.name, in.loc, in.accesses, issue_time_);
  }
  record(index, issue, in, start, end);
  if (in.kind == InstrKind::kSetFlag) {
    FlagKey key = flag_key(in.flag_src, in.flag_dst, in.flag_id);
    fire(static_cast<size_t>(key), end);
    unblock_waiters(key);
  }
}

// Out of line: the wait it copies (a whole Instr) gave every schedule a 504-byte frame, whose
// lines a core's turn touched after the other cores' turns had evicted them.
void CoreModel::block(uint32_t index, uint64_t issue, const Instr& in) {
  if (blocked_.empty()) blocked_.resize(PYPTO_NUM_PIPES);  // this model's first block
  blocked_pipes_ |= 1U << in.pipe;
  blocked_[static_cast<size_t>(in.pipe)].wait = Pending{index, issue, in};
}

// A cross-core sync as a scalar instruction (cross_sync_holds_issue): a wait holds the issue
// until its peer's set has passed, not until its pipe is free (the scalar unit waits, the pipe
// does not hold it); a set or push until the work before it and its own data have ended.
void CoreModel::hold_issue(const Instr& in, uint64_t end) {
  uint64_t until = end;
  if (in.hold == Instr::Hold::kUntilStart) {
    until = in.not_before > origin_ ? in.not_before - origin_ : 0;
  }
  issue_time_ = std::max(issue_time_, until);
}

uint64_t CoreModel::gated_start(const Instr& in, uint64_t start) const {
  for (int i = 0; i < in.accesses.size; ++i) {
    const Access& a = in.accesses.items[i];
    if (a.space != PYPTO_GM || !a.write) continue;
    const int64_t hi = a.base + (a.rows - 1) * a.stride + a.row_bytes;
    for (const GmGate& g : gates_) {
      if (a.base >= g.hi || g.lo >= hi || chip_ == nullptr) continue;
      const uint64_t at = chip_->task_end(g.task);
      if (at > origin_) start = std::max(start, at - origin_);
    }
  }
  return start;
}

// cost_of past its inline vector case: GM transfers are priced by the memory system at their
// absolute start; the rest by the cost model alone.
uint64_t CoreModel::cost_off_vector(const Instr& in, uint64_t start) {
  if (!in.op.touches_gm() || chip_ == nullptr) return on_chip_cost(in.op, false);
  const Access* gm = nullptr;
  for (int i = 0; i < in.accesses.size; ++i) {
    if (in.accesses.items[i].space == PYPTO_GM) gm = &in.accesses.items[i];
  }
  if (gm == nullptr) return cost::cycles(platform_, in.op);
  const uint64_t at = origin_ + start;
  chip_->reach(at);
  MemorySystem& memory = chip_->memory();
  const MemoryStats before = memory.stats();
  const double phase = memory.transfer(
      static_cast<double>(at), cost::gm_lead(platform_, in.op, false),
      cost::gm_lead(platform_, in.op, true), cost::port_bandwidth(platform_, in.op), *gm);
  const MemoryStats& after = memory.stats();
  stats_.memory.l2_hits += after.l2_hits - before.l2_hits;
  stats_.memory.l2_misses += after.l2_misses - before.l2_misses;
  stats_.memory.hbm_bytes += after.hbm_bytes - before.hbm_bytes;
  stats_.memory.l2_bytes += after.l2_bytes - before.l2_bytes;
  stats_.memory.stalled_transfers += after.stalled_transfers - before.stalled_transfers;
  return cost::gm_cycles(platform_, in.op, phase);
}

void CoreModel::price(Price& p, const OpDesc& op, bool continues_run) {
  p.op = op;
  p.continues = continues_run;
  p.cost = cost::cycles(platform_, op, continues_run);
  p.ends_run = cost::ends_vector_run(platform_, op);
}

void CoreModel::price_vector(VectorPrice& v, VecClass c, int64_t bytes, bool continues_run) {
  OpDesc op;
  op.cls = OpClass::kVector;
  op.vec = c;
  op.bytes = bytes;
  v = {c, cost::ends_vector_run(platform_, op), true, bytes,
       cost::cycles(platform_, op, continues_run)};
}

// fire past its common case: the flag's first set since the reset, or one that has sets
// not waited for yet.
void CoreModel::fire_again(Fired& f, size_t key, uint64_t t) {
  if (f.used == 0) {
    fired_used_.push_back(key);
    if (fired_later_.size() < fired_used_.size()) fired_later_.emplace_back();
    f.used = static_cast<uint32_t>(fired_used_.size());
  }
  if (f.count++ == 0) {
    f.first = t;
  } else {
    fired_later_[f.used - 1].times.push_back(t);
  }
}

uint64_t CoreModel::take(Fired& f) {
  const uint64_t t = f.first;
  if (--f.count > 0) {
    FiredLater& q = fired_later_[f.used - 1];
    f.first = q.times[q.head++];
    if (q.head == q.times.size()) {
      q.times.clear();
      q.head = 0;
    }
  }
  return t;
}

// Only the blocked pipes' entries are read (most sets find none).
void CoreModel::unblock_waiters(FlagKey key) {
  for (uint32_t left = blocked_pipes_; left != 0; left &= left - 1) {
    const int pipe = __builtin_ctz(left);
    Blocked& b = blocked_[pipe];
    const Instr& w = b.wait.instr;
    if (flag_key(w.flag_src, w.flag_dst, w.flag_id) != key) continue;
    blocked_pipes_ &= ~(1U << pipe);
    std::deque<Pending> queued;
    queued.swap(b.queued);
    schedule(b.wait);
    while (!queued.empty()) {  // replay in order; a later wait may block the pipe again
      Pending next = std::move(queued.front());
      queued.pop_front();
      if (blocked(pipe)) {
        blocked_[pipe].queued.push_back(std::move(next));
      } else {
        schedule(next);
      }
    }
    return;
  }
}

void CoreModel::record(uint32_t index, uint64_t issue, const Instr& in, uint64_t start,
                       uint64_t end) {
  if (!record_) return;
  records_.add({index, static_cast<int64_t>(in.kind), in.pipe, in.name, in.loc, issue, start, end,
                in.flag_src, in.flag_dst, in.flag_id, in.bytes, in.addr});
}

void CoreModel::finish() {
  for (int p = 0; p < PYPTO_NUM_PIPES; ++p) {
    if (!blocked(p)) continue;
    const Pending& w = blocked_[p].wait;
    throw SimError(ErrorKind::kDeadlock,
                   "deadlock: " + where(w.instr.name, w.index, w.instr.loc) + " " +
                       flag_text(w.instr) +
                       " is never satisfied: no matching set_flag was issued; " +
                       std::to_string(blocked_[p].queued.size()) + " later " + pipe_name(p) +
                       " instruction(s) never ran");
  }
  stats_.total_cycles = std::max(stats_.total_cycles, issue_time_);
}

}  // namespace pypto
