// The data work of a run's instructions — what they compute; what they cost is the timing
// model's — done on a second host thread, in issue order, while the run's thread goes on with
// the cores' control flow, checks and timing. The work runs in the order it ran in before and
// only on data no later check or cost depends on, so every value and every cycle is unchanged.
// Whatever reads or writes data on the run's thread — an op that does its work in place, a
// scalar read, applying atomics, the end of a task whose atomic adds the queue logs — drains
// the queue first. Other ends of tasks need not: the next work on the ended core's memory is
// queued behind its work, or drains first.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

namespace pypto {

class DataQueue {
 public:
  static constexpr size_t kBytes = 304;  // the largest closure an op queues
  // Whether a run gets a queue: not on one host CPU, nor with PYPTO_SIM_THREADS=1 in the
  // environment (read at every run, so a process can change it between runs).
  static bool wanted();
  DataQueue() = default;
  ~DataQueue();  // does the queued work, then ends the thread
  // Ready for another run as if just made, when its thread never started (a short run does
  // all its work in place): the reads put off on it are dropped, as by its destruction. False
  // when the thread started: then a new queue is needed.
  bool restart() {
    if (started_) return false;
    put_off_.clear();
    put_off_span_ = 0;
    in_place_ = 0;
    recent_bytes_ = kWorthBytes;
    return true;
  }
  DataQueue(const DataQueue&) = delete;
  DataQueue& operator=(const DataQueue&) = delete;

  // Queues `fn` (its captures are copied: values only, nothing on a kernel's stack), an op
  // of about `bytes` of data work. Done at once instead, behind the queued work: the first
  // ops of a run (a short run never pays for starting the thread), and every op while the
  // run's recent ops average under kWorthBytes (a hand-over costs about as much as that).
  template <class Fn>
  void push(int64_t bytes, const Fn& fn) {
    if (runs_in_place(bytes)) {
      fn();
    } else {
      queue(fn);
    }
  }
  // push in two steps, for an op that does in-place work without building its closure:
  // whether an op of about `bytes` does its work at once (the queued work before it is then
  // done), and if not, queueing it.
  bool runs_in_place(int64_t bytes) {
    recent_bytes_ += (bytes - recent_bytes_) / 32;
    if (recent_bytes_ < kWorthBytes) {
      drain();
      return true;
    }
    return !started_ && !start();
  }
  template <class Fn>
  void queue(const Fn& fn) {
    static_assert(std::is_trivially_copyable_v<Fn> && sizeof(Fn) <= kBytes &&
                      alignof(Fn) <= alignof(std::max_align_t),
                  "queued data work captures plain values");
    Slot& s = claim();
    s.run = [](const void* p) { (*static_cast<const Fn*>(p))(); };
    std::memcpy(s.fn, &fn, sizeof(Fn));
    publish();
  }

  // Waits until every queued op's work is done; rethrows a failure of one of them (a
  // SimError: kInternal for anything but a SimError).
  void drain() {
    if (pending_) wait_empty();
  }
  // Whether work may be queued and not yet done (drain would wait).
  bool pending() const { return pending_; }

  // Reads put off (a tile pipe's push: chip/isa/crosscore.cpp): work that only reads the
  // host bytes [begin, end) and can wait until they are about to change — perhaps for ever, as
  // its reader may take it back and read the bytes itself. `flush(queue, arg)` queues it (or
  // does it: push). `*count` counts the put-off reads of the memory holding the bytes (a
  // core's), so that memory's users look here only while it has some. All on the run's
  // thread; queued work stays in issue order, as a flush is queued before the work that
  // writes the bytes.
  struct PutOff {
    const uint8_t* begin;
    const uint8_t* end;
    void (*flush)(DataQueue&, void*);
    void* arg;
    int* count;
  };
  void put_off(const PutOff& r);
  // Takes back the read put off with `arg`: whether it was still put off (false: flushed).
  bool take_back(const void* arg);
  // Before [begin, end) is written (or read: callers need not say which): flushes the reads
  // put off on those bytes; whether there were any.
  bool before_write(const uint8_t* begin, const uint8_t* end);

  // Where the host CPU time of every run with a data thread went, summed over the process's
  // runs (thread CPU nanoseconds, so a busy host's preemptions do not count): the run's thread
  // spinning for queued work (a full queue, a drain) besides the shared pieces it ran, and the
  // part of that spent on a full queue (the rest waited for a result: a drain); those pieces
  // (timed on the monotonic clock: see help); the data thread spinning for want of work; the
  // data thread waiting in a fork-join for the run's thread's pieces (monotonic clock, part of
  // its busy time); the data thread's whole CPU time; and how many times the run's thread
  // needed the queued work done (drains with work queued: each one stops the two threads
  // overlapping). Read by benchmarks to show which side of a run bounds it and where the
  // threads wait for each other; the thread CPU clock (a system call) is read per wait spell,
  // never per op.
  struct Times {
    int64_t run_waiting_ns, run_full_ns, run_helping_ns, data_idle_ns, data_joining_ns, data_cpu_ns;
    int64_t drains;
  };
  static Times times();

  // fn(begin, end) over [0, n) in pieces of `grain`: a queued op's large, splittable work
  // (a matmul's output rows). On the data thread the run's thread takes pieces too when it
  // would otherwise wait for the queue or queues an op behind kHelpBacklog others; anywhere
  // else it is fn(0, n). Each piece writes its own outputs, so the values do not depend on who
  // ran it.
  template <class Fn>
  static void split(int64_t n, int64_t grain, const Fn& fn) {
    if (t_worker_ == nullptr || t_worker_->sharing_ || grain >= n) return fn(0, n);
    t_worker_->share(
        n, grain, [](const void* f, int64_t b, int64_t e) { (*static_cast<const Fn*>(f))(b, e); },
        &fn);
  }
  // split for work too small to share with a busy run's thread (the helper reads its piece
  // from the other host core's cache while the data thread waits for it): shared only while
  // the run's thread waits for the queue, so the helper is a thread that would otherwise spin.
  template <class Fn>
  static void split_when_waited(int64_t n, int64_t grain, const Fn& fn) {
    if (t_worker_ == nullptr || !t_worker_->run_waiting_.load(std::memory_order_relaxed)) {
      return fn(0, n);
    }
    split(n, grain, fn);
  }

 private:
  struct alignas(64) Slot {
    void (*run)(const void*);
    alignas(std::max_align_t) unsigned char fn[kBytes];
  };
  static constexpr uint64_t kSlots = 512;
  static constexpr uint64_t kStartAfter = 256;  // ops done in place before the thread starts
  static constexpr int64_t kWorthBytes = 2048;
  // Queued ops past which the run's thread, queueing one, takes pieces of the split op the data
  // thread is in: the data thread then bounds the run, and the backlog (~150 us of
  // FlashAttention's data work) keeps it busy meanwhile. Measured on FlashAttention: the run's
  // thread had waited for a full queue for a quarter of its time, helping only then.
  static constexpr uint64_t kHelpBacklog = 64;

  using PieceFn = void (*)(const void*, int64_t, int64_t);
  bool start();
  Slot& claim();
  void publish();
  void wake_worker();  // wakes the data thread from its sleep in wait_for_work
  void wait_empty();
  void work();
  bool wait_for_work(uint64_t tail);
  void share(int64_t n, int64_t grain, PieceFn run, const void* fn);
  void join(uint64_t theirs);
  void wait_for_pieces(uint64_t theirs);
  bool on_offer() const;  // a split op has pieces nobody has claimed
  bool help();            // the run's thread: runs shared pieces while there are any (false: none)
  bool help_one(int64_t& t0);  // one piece; t0: the monotonic clock at a streak's first
  template <class Done>
  void wait_helping(bool full, Done done);  // full: waiting for a slot, not for a result

  static thread_local DataQueue* t_worker_;  // the queue whose data thread this is

  // The pipes' pushes not yet popped, all cores' (a look in FlashAttention [24, 2048, 128] met 27),
  // in order of `begin`, and the longest one's length: before_write looks only at those that
  // begin within that length below the written bytes, found by a binary search, not at all of
  // them at every operand of a core that has any.
  std::vector<PutOff> put_off_;
  size_t put_off_span_ = 0;
  std::unique_ptr<Slot[]> slots_;
  std::thread thread_;
  bool started_ = false, pending_ = false;
  uint64_t in_place_ = 0, head_seen_ = 0, tail_seen_ = 0;  // the run's thread's own copies
  int64_t helping_ns_ = 0;                     // shared pieces the run's thread ran (Times)
  uint32_t helped_generation_ = 0;             // the split op it last ran a piece of (help_one)
  int64_t recent_bytes_ = kWorthBytes;         // a moving average of the ops' sizes (1/32 steps)
  alignas(64) std::atomic<uint64_t> head_{0};  // slots published
  alignas(64) std::atomic<uint64_t> tail_{0};  // slots done
  alignas(64) std::atomic<bool> sleeping_{false};
  alignas(64) std::atomic<bool> run_waiting_{false};  // the run's thread is in a wait spell
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::exception_ptr error_;  // the first op that threw; later ops are skipped
  // The split work on offer (data_queue.cpp: the offer word). A claim is a CAS on the word,
  // so it succeeds only while its generation has pieces left; the data thread describes the
  // next generation only after every piece of the last one is claimed and done.
  alignas(64) std::atomic<uint64_t> offer_{0};
  std::atomic<PieceFn> piece_run_{nullptr};
  std::atomic<const void*> piece_fn_{nullptr};
  std::atomic<int64_t> piece_n_{0}, piece_grain_{0};
  alignas(64) std::atomic<uint32_t> helped_{0};  // pieces the run's thread finished
  std::atomic<bool> joining_{false};             // the data thread sleeps until they are
  std::mutex join_mutex_;
  std::condition_variable join_wake_;
  uint32_t generation_ = 0;
  bool sharing_ = false;  // the data thread is inside split (a piece does not split again)
};

}  // namespace pypto
