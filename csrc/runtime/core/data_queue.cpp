#include "runtime/core/data_queue.hpp"

#include <chrono>
#include <cstdlib>
#include <system_error>
#include <utility>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace pypto {
namespace {

void cpu_relax() {
#if defined(__x86_64__)
  _mm_pause();
#endif
}

// Waits until `done()` holds: spinning first (the other side is usually microseconds away),
// then yielding the CPU so a busy host or a pool of processes is not starved.
template <class Done>
void spin_until(Done done) {
  constexpr auto kSpin = std::chrono::microseconds(50);
  const auto until = std::chrono::steady_clock::now() + kSpin;
  for (unsigned i = 1; !done(); ++i) {
    cpu_relax();
    if (i % 64 == 0 && std::chrono::steady_clock::now() > until) std::this_thread::yield();
  }
}

}  // namespace

std::unique_ptr<DataQueue> DataQueue::for_run() {
  const char* env = std::getenv("PYPTO_SIM_THREADS");
  if (env != nullptr && std::atoi(env) == 1) return nullptr;
  if (std::thread::hardware_concurrency() < 2) return nullptr;
  return std::make_unique<DataQueue>();
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
    spin_until([this] { return head_seen_ - tail_.load(std::memory_order_acquire) < kSlots; });
    tail_seen_ = tail_.load(std::memory_order_acquire);
  }
  return slots_[head_seen_ % kSlots];
}

void DataQueue::publish() {
  head_.store(++head_seen_, std::memory_order_seq_cst);
  pending_ = true;
  // The thread publishes `sleeping_` before it looks at head_ a last time (both seq_cst):
  // either it sees this slot, or this load sees it asleep and wakes it.
  if (sleeping_.load(std::memory_order_seq_cst)) {
    { std::lock_guard<std::mutex> lock(mutex_); }
    wake_.notify_one();
  }
}

void DataQueue::wait_empty() {
  spin_until([this] { return tail_.load(std::memory_order_acquire) == head_seen_; });
  tail_seen_ = head_seen_;
  pending_ = false;
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
}

void DataQueue::work() {
  uint64_t tail = 0;
  for (;;) {
    const auto idle_since = std::chrono::steady_clock::now();
    for (unsigned i = 1; head_.load(std::memory_order_acquire) == tail; ++i) {
      cpu_relax();
      if (i % 64 != 0 ||
          std::chrono::steady_clock::now() - idle_since < std::chrono::microseconds(50))
        continue;
      std::unique_lock<std::mutex> lock(mutex_);
      sleeping_.store(true, std::memory_order_seq_cst);
      wake_.wait(lock, [&] { return stop_ || head_.load(std::memory_order_seq_cst) != tail; });
      sleeping_.store(false, std::memory_order_relaxed);
      if (head_.load(std::memory_order_acquire) == tail) return;  // stopped with nothing queued
    }
    const Slot& s = slots_[tail % kSlots];
    if (!error_) {
      try {
        s.run(s.fn);
      } catch (...) {
        error_ = std::current_exception();
      }
    }
    tail_.store(++tail, std::memory_order_release);
  }
}

}  // namespace pypto
