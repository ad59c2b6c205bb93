#include "chip/core/data_queue.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <string>
#include <system_error>
#include <utility>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "simulator/errors.hpp"

namespace pypto {
namespace {

void cpu_relax() {
#if defined(__x86_64__)
  _mm_pause();
#endif
}

// How long a thread spins before it yields (the run's thread) or sleeps (the data thread):
// the other side is usually microseconds away.
constexpr auto kSpin = std::chrono::microseconds(50);

// Waits until `done()` holds: spinning first, then yielding the CPU so a busy host or a pool
// of processes is not starved.
template <class Done>
void spin_until(Done done) {
  const auto until = std::chrono::steady_clock::now() + kSpin;
  for (unsigned i = 1; !done(); ++i) {
    cpu_relax();
    if (i % 64 == 0 && std::chrono::steady_clock::now() > until) std::this_thread::yield();
  }
}

using Clock = std::chrono::steady_clock;

// The calling thread's CPU time: what it computed or spun, not what a busy host took from it.
int64_t thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

int64_t monotonic_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
      .count();
}

// DataQueue::Times, accumulated by every queue of the process.
std::atomic<int64_t> g_run_waiting{0}, g_run_full{0}, g_run_helping{0}, g_data_idle{0},
    g_data_joining{0}, g_data_cpu{0}, g_drains{0};

}  // namespace

thread_local DataQueue* DataQueue::t_worker_ = nullptr;

DataQueue::Times DataQueue::times() {
  return {
      g_run_waiting.load(std::memory_order_relaxed),  g_run_full.load(std::memory_order_relaxed),
      g_run_helping.load(std::memory_order_relaxed),  g_data_idle.load(std::memory_order_relaxed),
      g_data_joining.load(std::memory_order_relaxed), g_data_cpu.load(std::memory_order_relaxed),
      g_drains.load(std::memory_order_relaxed)};
}

bool DataQueue::wanted() {
  const char* env = std::getenv("PYPTO_SIM_THREADS");
  if (env != nullptr && std::atoi(env) == 1) return false;
  static const bool one_cpu = std::thread::hardware_concurrency() < 2;  // reads sysfs: once
  return !one_cpu;
}

DataQueue::~DataQueue() {
  if (!started_) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

void DataQueue::put_off(const PutOff& r) {
  const auto at = std::upper_bound(put_off_.begin(), put_off_.end(), r.begin,
                                   [](const uint8_t* b, const PutOff& x) { return b < x.begin; });
  put_off_.insert(at, r);
  put_off_span_ = std::max(put_off_span_, static_cast<size_t>(r.end - r.begin));
  ++*r.count;
}

bool DataQueue::take_back(const void* arg) {
  for (auto it = put_off_.begin(); it != put_off_.end(); ++it) {
    if (it->arg != arg) continue;
    --*it->count;
    put_off_.erase(it);
    if (put_off_.empty()) put_off_span_ = 0;
    return true;
  }
  return false;
}

bool DataQueue::before_write(const uint8_t* begin, const uint8_t* end) {
  bool flushed = false;
  for (;;) {
    // A read [b, e) overlaps [begin, end) when b < end and e > begin; as e <= b + span, only
    // those with b > begin - span can: the first of them is found by a binary search (in
    // addresses, so that begin - span does not wrap below zero).
    const auto lowest = reinterpret_cast<uintptr_t>(begin);
    const uintptr_t above = lowest > put_off_span_ ? lowest - put_off_span_ : 0;
    auto it = std::upper_bound(
        put_off_.begin(), put_off_.end(), above,
        [](uintptr_t a, const PutOff& x) { return a < reinterpret_cast<uintptr_t>(x.begin); });
    while (it != put_off_.end() && it->begin < end && it->end <= begin) ++it;
    if (it == put_off_.end() || it->begin >= end) return flushed;
    const PutOff r = *it;
    put_off_.erase(it);  // removed before its flush runs (which may queue work, or put off more)
    if (put_off_.empty()) put_off_span_ = 0;
    --*r.count;
    r.flush(*this, r.arg);
    flushed = true;
  }
}

bool DataQueue::start() {
  if (++in_place_ <= kStartAfter) return false;
  try {
    slots_.reset(new Slot[kSlots]);
    thread_ = std::thread([this] { work(); });
  } catch (const std::exception&) {  // no thread to be had: the work stays in place
    in_place_ = 0;
    return false;
  }
  started_ = true;
  return true;
}

DataQueue::Slot& DataQueue::claim() {
  if (head_seen_ - tail_seen_ == kSlots) {
    tail_seen_ = tail_.load(std::memory_order_acquire);
    // Full: wait until half the queue is free, so a run the data thread bounds waits (and
    // counts its waiting) once per kSlots / 2 ops rather than at every op.
    if (head_seen_ - tail_seen_ == kSlots) {
      wait_helping(true, [this] {
        return head_seen_ - tail_.load(std::memory_order_acquire) <= kSlots / 2;
      });
      tail_seen_ = tail_.load(std::memory_order_acquire);
    }
  }
  return slots_[head_seen_ % kSlots];
}

void DataQueue::publish() {
  // Not fenced: a locked store here waited at every op for the slot's stores (lines the data
  // thread last read) to reach this host core. So the data thread, publishing `sleeping_` and
  // then looking at head_ a last time, may miss this slot while this load misses it asleep; it
  // then sleeps until the next publish (which sees it asleep) or until this thread waits for it
  // (wait_helping fences before it looks), never past a wait for its work.
  head_.store(++head_seen_, std::memory_order_release);
  pending_ = true;
  if (sleeping_.load(std::memory_order_relaxed)) wake_worker();
  // A backlog: the data thread bounds the run, so the run's thread takes pieces of its split op
  // now, not only once the queue is full and it must wait anyway. The offer word is looked at
  // first: it changes once per split op, so the look mostly hits the cache.
  if (on_offer() && head_seen_ - tail_.load(std::memory_order_acquire) >= kHelpBacklog) {
    const int64_t helped = helping_ns_;
    if (help()) g_run_helping.fetch_add(helping_ns_ - helped, std::memory_order_relaxed);
  }
}

void DataQueue::wait_empty() {
  g_drains.fetch_add(1, std::memory_order_relaxed);
  wait_helping(false, [this] { return tail_.load(std::memory_order_acquire) == head_seen_; });
  tail_seen_ = head_seen_;
  pending_ = false;
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
}

void DataQueue::wake_worker() {
  { std::lock_guard<std::mutex> lock(mutex_); }
  wake_.notify_one();
}

template <class Done>
void DataQueue::wait_helping(bool full, Done done) {
  if (done()) return;
  // The data thread may have fallen asleep missing the last publish (publish): with this
  // thread's stores of head_ ordered before the look, either it sees every slot or this look
  // sees it asleep.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (sleeping_.load(std::memory_order_relaxed)) wake_worker();
  const int64_t t0 = thread_cpu_ns(), helped = helping_ns_;
  run_waiting_.store(true, std::memory_order_relaxed);
  spin_until([&] { return done() || (help() && done()); });
  run_waiting_.store(false, std::memory_order_relaxed);
  // The pieces are timed on the monotonic clock (help), which also counts a preemption inside
  // one: the CPU left for waiting is then below zero, and counts as none.
  const int64_t helping = helping_ns_ - helped;
  const int64_t waiting = std::max<int64_t>(0, thread_cpu_ns() - t0 - helping);
  g_run_waiting.fetch_add(waiting, std::memory_order_relaxed);
  if (full) g_run_full.fetch_add(waiting, std::memory_order_relaxed);
  g_run_helping.fetch_add(helping, std::memory_order_relaxed);
}

// The offer word: generation (32 bits) | piece count (16) | next piece (16). The count in the
// word makes a claim check the count of its own generation.
constexpr uint64_t kPieceMask = 0xffff;

void DataQueue::share(int64_t n, int64_t grain, PieceFn run, const void* fn) {
  const auto pieces = static_cast<uint64_t>((n + grain - 1) / grain);
  if (pieces > kPieceMask) return run(fn, 0, n);
  sharing_ = true;
  piece_run_.store(run, std::memory_order_relaxed);
  piece_fn_.store(fn, std::memory_order_relaxed);
  piece_n_.store(n, std::memory_order_relaxed);
  piece_grain_.store(grain, std::memory_order_relaxed);
  helped_.store(0, std::memory_order_relaxed);
  const uint64_t open = uint64_t{++generation_} << 32 | pieces << 16;
  offer_.store(open, std::memory_order_release);
  uint64_t mine = 0;
  for (uint64_t w = open; (w & kPieceMask) < pieces;) {
    if (!offer_.compare_exchange_weak(w, w + 1, std::memory_order_acq_rel)) continue;
    const auto b = static_cast<int64_t>(w & kPieceMask) * grain;
    run(fn, b, std::min(n, b + grain));
    ++mine;
    w = offer_.load(std::memory_order_acquire);
  }
  join(pieces - mine);
  sharing_ = false;
}

// The data thread, its own pieces done, waits until the run's thread has finished `theirs`
// (acquire: and its reads of the description). It spins first (a piece takes microseconds),
// then sleeps: a helper that lost its host CPU mid-piece, perhaps to this very thread, is not
// waited for by spinning.
void DataQueue::join(uint64_t theirs) {
  if (helped_.load(std::memory_order_seq_cst) == theirs) return;
  const int64_t t0 = monotonic_ns();  // no system call: the helper may finish any moment
  wait_for_pieces(theirs);
  g_data_joining.fetch_add(monotonic_ns() - t0, std::memory_order_relaxed);
}

void DataQueue::wait_for_pieces(uint64_t theirs) {
  const auto done = [&] { return helped_.load(std::memory_order_seq_cst) == theirs; };
  const auto until = Clock::now() + kSpin;
  for (unsigned i = 1; !done(); ++i) {
    cpu_relax();
    if (i % 64 != 0 || Clock::now() < until) continue;
    std::unique_lock<std::mutex> lock(join_mutex_);
    // Published before the last look at helped_ (both seq_cst): either that look sees the
    // helper's last piece, or the helper sees this and wakes the thread.
    joining_.store(true, std::memory_order_seq_cst);
    join_wake_.wait(lock, done);
    joining_.store(false, std::memory_order_relaxed);
    return;
  }
}

// The data thread, out of work: spins, then sleeps until an op is queued after slot `tail`.
// False when the queue is stopped with nothing left.
bool DataQueue::wait_for_work(uint64_t tail) {
  const auto idle_since = Clock::now();
  const int64_t cpu0 = thread_cpu_ns();
  bool more = true;
  for (unsigned i = 1; head_.load(std::memory_order_acquire) == tail; ++i) {
    cpu_relax();
    if (i % 64 != 0 || Clock::now() - idle_since < kSpin) continue;
    std::unique_lock<std::mutex> lock(mutex_);
    sleeping_.store(true, std::memory_order_seq_cst);
    wake_.wait(lock, [&] { return stop_ || head_.load(std::memory_order_seq_cst) != tail; });
    sleeping_.store(false, std::memory_order_relaxed);
    more = head_.load(std::memory_order_acquire) != tail;  // else: stopped with nothing queued
    break;
  }
  g_data_idle.fetch_add(thread_cpu_ns() - cpu0, std::memory_order_relaxed);
  return more;
}

bool DataQueue::help() {
  // The pieces claimed back to back are timed as one streak on the monotonic clock (read
  // without a system call): the data thread joins on the streak's first piece, which a read
  // of the thread CPU clock (a system call, ~0.5 us) before it would delay. A piece takes
  // microseconds, so a preemption inside one is rare and counts as helping.
  int64_t t0 = -1;
  while (help_one(t0)) {
  }
  if (t0 < 0) return false;
  helping_ns_ += monotonic_ns() - t0;
  return true;
}

bool DataQueue::on_offer() const {
  const uint64_t w = offer_.load(std::memory_order_relaxed);
  return (w >> 32) != 0 && (w & kPieceMask) < ((w >> 16) & kPieceMask);
}

bool DataQueue::help_one(int64_t& t0) {
  uint64_t w = offer_.load(std::memory_order_acquire);
  const uint64_t next = w & kPieceMask, pieces = (w >> 16) & kPieceMask;
  const auto generation = static_cast<uint32_t>(w >> 32);
  if (generation == 0 || next >= pieces) return false;
  // Not the last piece of an op of three or more as this thread's first of it: a first piece
  // costs the helper about twice what a piece costs the data thread (an fp16 matmul's left
  // operand widened again, the operands read from the other host core's cache), so the data
  // thread, mid-piece, would wait for it longer than the piece takes it. Of two pieces the data
  // thread has claimed the first at once, so the helper could take none.
  if (next + 1 == pieces && pieces > 2 && generation != helped_generation_) return false;
  const PieceFn run = piece_run_.load(std::memory_order_relaxed);
  const void* fn = piece_fn_.load(std::memory_order_relaxed);
  const int64_t n = piece_n_.load(std::memory_order_relaxed);
  const int64_t grain = piece_grain_.load(std::memory_order_relaxed);
  // Succeeds only while that generation has pieces left, so the data thread is still inside
  // share() and has not described another: what was read above is this generation's.
  if (!offer_.compare_exchange_strong(w, w + 1, std::memory_order_acq_rel)) return false;
  if (t0 < 0) t0 = monotonic_ns();  // the streak's start
  helped_generation_ = generation;
  const auto b = static_cast<int64_t>(w & kPieceMask) * grain;
  run(fn, b, std::min(n, b + grain));
  helped_.fetch_add(1, std::memory_order_seq_cst);
  if (joining_.load(std::memory_order_seq_cst)) {  // the data thread sleeps in join()
    { std::lock_guard<std::mutex> lock(join_mutex_); }
    join_wake_.notify_one();
  }
  return true;
}

void DataQueue::work() {
  t_worker_ = this;
  struct Cpu {  // counted however the loop ends
    ~Cpu() { g_data_cpu.fetch_add(thread_cpu_ns(), std::memory_order_relaxed); }
  } cpu;
  // `head`: the published slots as last read. head_ is read again only once they are all
  // done, not at every op: its line is the run's thread's to write at every publish, and a
  // read per op pulled it across host cores twice per op (a miss here, and the run's thread's
  // locked store waiting for the line to come back) while a backlog was being worked off.
  // The slots' address is read once: the member sits beside fields the run's thread writes
  // at every op (its own head and tail copies), whose line a read per op would pull across too.
  const Slot* const slots = slots_.get();
  uint64_t tail = 0, head = 0;
  for (;;) {
    if (head == tail) {
      head = head_.load(std::memory_order_acquire);
      if (head == tail) {
        if (!wait_for_work(tail)) return;
        head = head_.load(std::memory_order_acquire);
      }
    }
    const Slot& s = slots[tail % kSlots];
    if (!error_) {
      try {
        s.run(s.fn);
      } catch (const SimError&) {
        error_ = std::current_exception();
      } catch (const std::exception& e) {  // a simulator bug (or no memory): typed, not raw
        error_ = std::make_exception_ptr(SimError(
            ErrorKind::kInternal, std::string("an instruction's data work failed: ") + e.what()));
      }
    }
    tail_.store(++tail, std::memory_order_release);
  }
}

}  // namespace pypto
