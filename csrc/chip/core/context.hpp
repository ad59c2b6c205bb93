// The core a kernel is running on: its on-chip memories (real byte arrays of the platform's
// sizes), its timing model and the current source location. ISA calls reach it through
// current_core(); the launcher binds it around each kernel_entry call.
#pragma once
#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "chip/core/core_storage.hpp"
#include "chip/isa/tile_view.hpp"
#include "pypto/abi.h"
#include "simulator/core_model.hpp"
#include "simulator/platform/platform.hpp"

namespace pypto {

struct AtomicWrite {
  void* tensor;  // base of the GM tensor (writes are grouped per tensor)
  void* dst;
  int dtype;
  size_t n;
  std::vector<uint8_t> data;
};

struct Cluster;
class DataQueue;

// How a kernel instance waits for another core (the chip scheduler implements it).
class Waiter {
 public:
  virtual ~Waiter() = default;
  // Suspends the running instance until `ready()` holds; `what()` names the wait in a
  // deadlock report (called only for that: most waits end, and the text is never needed).
  // Other cores run meanwhile.
  virtual void wait_until(const std::function<bool()>& ready,
                          const std::function<std::string()>& what) = 0;
  // Cross-core state of the running instance's cluster changed: its waiters look again.
  virtual void notify() = 0;
  // SYNCALL: the running instance arrives at barrier `key` (its arrival ended at absolute cycle
  // `arrived`) and waits until `participants` arrivals complete its round; returns the round's
  // last arrival. GM touches on either side of a round are ordered for the race check.
  virtual uint64_t syncall(const std::string& key, int64_t participants, uint64_t arrived) = 0;
};

struct CoreContext {
  CoreContext(const Platform& platform, int64_t block_idx, int64_t block_num, bool record);
  ~CoreContext();
  // Ready for another kernel instance, as if just constructed but for core_name and kernel
  // (the launch that takes it sets them) and the checked tiles (still true); the timing model
  // keeps its buffers and the on-chip storage stays (not cleared, as between runs on the device).
  void reuse(int64_t block_idx, int64_t block_num, bool record);
  // Its on-chip storage and its hazard rings' buffers given back to the thread's pools (as a
  // destroyed context's are), so a context kept empty holds little. The next reuse() takes
  // storage from the thread's pool: the same blocks if they are still there (the checked tiles
  // and one-input operands, which point into them, then hold), else any, and those are forgotten.
  void release_storage() noexcept;
  CoreContext(const CoreContext&) = delete;
  CoreContext& operator=(const CoreContext&) = delete;

  // A space's bytes, allocated on first use. Storage is recycled between kernel runs on a
  // thread and, as on the device, not cleared: a kernel must write a tile before reading it.
  uint8_t* space_data(int mem) {
    if (memory[mem].size() < sizes[mem]) memory[mem].resize(sizes[mem]);
    return memory[mem].data();
  }
  int64_t capacity(int mem) const { return capacities[mem]; }

  const Platform& platform;
  // Tile descriptors that passed every check on this core (they depend only on the descriptor
  // and the platform): a loop re-issuing the same tiles skips the checks. Direct-mapped by
  // descriptor address; an entry is used only if the descriptor's bytes are unchanged. A
  // kernel's descriptors sit side by side on its stack, 32 bytes apart: a loop body touching up
  // to kCheckedSlots of them never evicts its own. Each slot also keeps the descriptor it held
  // before (`checked_before`): a double-buffered tile's descriptor alternates between two
  // addresses from one loop trip to the next, and then both are found. Kept when a run's pool
  // reuses the context (CorePool::take): a warm run's tiles are found from its first op.
  static constexpr size_t kCheckedSlots = 32;
  struct CheckedTile {
    pypto_tile desc{};
    isa::TileView view{};  // view.data is null while the entry is unused
  };
  std::array<CheckedTile, kCheckedSlots> checked{}, checked_before{};
  // The operands of one-input elementwise ops as last checked (isa::check_one_input),
  // direct-mapped by the op and the dst descriptor's address.
  static constexpr size_t kOneInputSlots = 16;
  std::array<isa::OneInputOperands, kOneInputSlots> one_input{};
  std::array<SpaceBytes, PYPTO_NUM_MEM> memory;  // on huge pages: core_storage.hpp
  bool released = false;  // storage given back by release_storage(), none taken since
  std::array<const uint8_t*, PYPTO_NUM_MEM> released_at{};  // where that storage was
  std::array<size_t, PYPTO_NUM_MEM> released_bytes{};       // and its sizes
  std::array<int64_t, PYPTO_NUM_MEM> capacities{};
  std::array<size_t, PYPTO_NUM_MEM> sizes{};  // bytes backing each space
  CoreModel model;
  const char* loc = "";
  int64_t block_idx, block_num;
  // The fmatrix register (SETFMATRIX): the fmap size and padding TIMG2COL reads; unset
  // until the kernel loads it.
  pypto_conv_geom fmatrix{};
  bool fmatrix_set = false;
  // When set, atomic-add stores are logged here instead of applied: the scheduler applies
  // them in simulated completion order.
  std::vector<AtomicWrite>* atomic_log = nullptr;
  // An atomic-add store of this instance was queued: the data thread then reads this context
  // (atomic_log) as it runs, so the instance's end waits for its queued work.
  bool queued_atomics = false;
  // Where this instance runs: its core kind, its AIV index inside the cluster (0 on the AIC),
  // the cluster's cross-core state (null outside a cluster launch) and the scheduler.
  bool aic = false;
  int subblock = 0;
  std::string core_name = "AIV0";
  std::string kernel = "kernel";
  Cluster* cluster = nullptr;
  Waiter* waiter = nullptr;
  // The run's data thread (null: ops do their data work in place) and whether the running op
  // queues its work there (isa::Deferred) rather than doing it in place after a drain.
  DataQueue* data = nullptr;
  bool deferring = false;
  int put_offs = 0;  // reads of this core's memory put off on `data` (DataQueue::put_off)

  // Before this core's memory is recycled (its task ended): the reads put off on it (a tile
  // pipe's pushes a peer has not popped yet: DataQueue::put_off) are queued.
  void flush_put_off();

  // dst += src (n elements of dtype), now or in completion order.
  void atomic_add(void* tensor_base, void* dst, int dtype, const void* src, size_t n);
};

namespace detail {
// `__thread` (not thread_local): a plain pointer with no dynamic initialiser, so every ISA
// call reads it directly instead of through a TLS wrapper function.
extern __thread CoreContext* current_core_ptr;
[[noreturn]] void no_running_kernel();
}  // namespace detail

// The core of the running kernel; throws SimError(kInternal) when no kernel is running.
inline CoreContext& current_core() {
  if (detail::current_core_ptr == nullptr) detail::no_running_kernel();
  return *detail::current_core_ptr;
}

// Binds `core` as current for the lifetime of the guard (restores the previous one).
class CoreBinding {
 public:
  explicit CoreBinding(CoreContext* core);
  ~CoreBinding();
  CoreBinding(const CoreBinding&) = delete;
  CoreBinding& operator=(const CoreBinding&) = delete;

 private:
  CoreContext* previous_;
};

const char* mem_name(int mem);

}  // namespace pypto
