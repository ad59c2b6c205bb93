// Race detection on the simulated timeline.
//
// Every access an instruction makes (space, rows x row_bytes at a row stride) is kept while
// it may still be in flight. A later instruction (program order) on another pipe that starts
// before an earlier conflicting access ends (RAW, WAR or WAW on overlapping bytes) was not
// ordered by any sync: that is a race, reported with both instructions.
#pragma once
#include <array>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <type_traits>
#include <vector>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "pypto/abi.h"

namespace pypto {

// A plain aggregate (no member initialisers): an instruction's access list is built on every
// issue, and zero-filling its unused slots cost more than the rest of the list. Value-
// initialise (`Access{}`) where zeros are wanted. Every field is 64-bit so the struct has no
// padding: its bytes are its value, and lists of accesses compare as bytes (same_accesses).
struct Access {
  int64_t space;      // pypto_mem; GM accesses use host addresses
  int64_t base;       // first byte
  int64_t rows;       // number of rows
  int64_t row_bytes;  // bytes per row
  int64_t stride;     // bytes between row starts (== row_bytes when contiguous)
  int64_t write;      // 1 for a write, 0 for a read
};
static_assert(std::has_unique_object_representations_v<Access>, "Access compares as bytes");

struct AccessList {
  std::array<Access, 4> items;  // only the first `size` are set
  int size = 0;
  void add(const Access& a) { items[size++] = a; }
};

bool accesses_overlap(const Access& a, const Access& b);

// The repeat check runs on every instruction of a loop: accesses compare as bytes. Most lists
// that are not a repeat differ in their first access's base, tested inline first; a likely
// repeat is compared inline too, 16 bytes at a time (a call to memcmp, and the registers the
// caller saved around it, cost more than the comparison).
[[gnu::always_inline]] inline bool same_accesses(const Access* a, const Access* b, size_t n) {
  if (n == 0) return true;
  if (a->base != b->base) return false;
#if defined(__SSE2__)
  static_assert(sizeof(Access) == 48, "an access is three 16-byte blocks");
  const auto* x = reinterpret_cast<const __m128i*>(a);
  const auto* y = reinterpret_cast<const __m128i*>(b);
  const auto block = [x, y](size_t i) {
    return _mm_xor_si128(_mm_loadu_si128(x + i), _mm_loadu_si128(y + i));
  };
  // A list (AccessList) holds at most four accesses: compared without a loop, as a loop's
  // counters and branches cost as much as the compares of two accesses.
  __m128i diff = _mm_or_si128(block(0), _mm_or_si128(block(1), block(2)));
  switch (n) {
    case 4:
      diff = _mm_or_si128(diff, _mm_or_si128(block(9), _mm_or_si128(block(10), block(11))));
      [[fallthrough]];
    case 3:
      diff = _mm_or_si128(diff, _mm_or_si128(block(6), _mm_or_si128(block(7), block(8))));
      [[fallthrough]];
    case 2:
      diff = _mm_or_si128(diff, _mm_or_si128(block(3), _mm_or_si128(block(4), block(5))));
      [[fallthrough]];
    case 1:
      break;
    default:  // longer than a list
      return std::memcmp(a, b, n * sizeof(Access)) == 0;
  }
  return _mm_movemask_epi8(_mm_cmpeq_epi8(diff, _mm_setzero_si128())) == 0xffff;
#else
  return std::memcmp(a, b, n * sizeof(Access)) == 0;
#endif
}
inline bool same_access(const Access& a, const Access& b) { return same_accesses(&a, &b, 1); }

struct InstrRef {
  uint32_t index = 0;
  int pipe = 0;
  const char* name = "";
  const char* loc = "";
  uint64_t start = 0, end = 0;
};

struct Hazard {
  const char* kind;  // "RAW", "WAR", "WAW"
  int space;
  InstrRef earlier, later;
  std::string describe() const;
};

class HazardChecker {
 public:
  static constexpr size_t kMaxKept = 16;        // hazards kept with full detail
  static constexpr size_t kMaxInFlight = 4096;  // per pipe; bounds memory on runaway kernels

  // Checks `accesses` of instruction `ref` against in-flight accesses of other pipes, then
  // records them. `horizon`: no future instruction starts before it, so older accesses that
  // ended by then are dropped.
  void check_and_add(const InstrRef& ref, const AccessList& accesses, uint64_t horizon);
  // check_and_add with its common cases inline. No other pipe in flight at `start`: nothing to
  // scan; then a loop's instruction, whose accesses repeat its pipe's newest, takes over their
  // entries, and any other is only recorded (add: the repeat test is not made twice). The
  // instruction comes as fields: a reference built on the stack just before would be copied
  // back in wider loads than it was stored in.
  [[gnu::always_inline]] void check(int pipe, uint64_t start, uint64_t end, uint32_t index,
                                    const char* name, const char* loc, const AccessList& accesses,
                                    uint64_t horizon) {
    if (in_flight_elsewhere(pipe, start)) {
      check_and_add(InstrRef{index, pipe, name, loc, start, end}, accesses, horizon);
      return;
    }
    record(pipe, start, end, index, name, loc, accesses, horizon);
  }

  const std::vector<Hazard>& found() const { return found_; }
  uint64_t count() const { return count_; }
  // Nothing in flight and nothing found, as constructed; the rings keep their buffers.
  void reset();
  // Its rings' buffers given to the thread's spares (as if destroyed), the rings empty: a kept
  // context whose storage goes back to the thread keeps no ring memory either. reset() follows.
  void release_buffers();

 private:
  // One in-flight access with its instruction, in one cache line (the ring's buffer is aligned
  // to 64 bytes): a push writes one cold line, where an InstrRef and an Access side by side
  // (88 bytes) spanned two lines at most slots. The pipe is the ring's; rows, row bytes and
  // stride are kept in 32 bits and space and write in 8, exactly: an access with a field
  // outside those ranges is marked `wide` and kept whole in the ring's side array instead.
  struct alignas(64) Live {
    uint64_t end, start;
    const char* name;
    const char* loc;
    int64_t base;
    uint32_t index;
    int32_t rows, row_bytes, stride;
    uint8_t space, write, wide;
  };
  static_assert(sizeof(Live) == 64, "an entry is one cache line");
  // In-flight accesses of one pipe, oldest first: a ring that grows by doubling up to
  // kMaxInFlight (a deque would allocate a block every few instructions).
  class LiveRing {
   public:
    LiveRing() = default;
    LiveRing(LiveRing&&) = default;
    LiveRing& operator=(LiveRing&&) = default;
    ~LiveRing();  // its buffer is kept for the thread's next ring
    bool empty() const { return size_ == 0; }
    size_t size() const { return size_; }
    // The oldest entry's end, kept beside the ring: most instructions drop nothing, and the
    // check then reads no ring memory (cold after another core ran).
    uint64_t front_end() const { return front_end_; }
    Access access_from_back(size_t i) const {
      const size_t slot = slot_from_back(i);
      const Live& e = buf_[slot];
      if (e.wide != 0) return wide_[slot];
      return Access{e.space, e.base, e.rows, e.row_bytes, e.stride, e.write};
    }
    // The instruction of the i-th newest entry (the ring's pipe is `pipe`): the tail's
    // (tail_ref_) for the newest `tail_size_`, whose fields in the ring are not kept up to date.
    InstrRef ref_from_back(size_t i, int pipe) const {
      if (i < static_cast<size_t>(tail_size_)) return tail_ref_;
      const Live& e = at_back(i);
      return InstrRef{e.index, pipe, e.name, e.loc, e.start, e.end};
    }
    uint64_t end_from_back(size_t i) const {
      return i < static_cast<size_t>(tail_size_) ? tail_ref_.end : at_back(i).end;
    }
    // Whether the ring ends with exactly these accesses (in order). Replacing their
    // instruction by a later one on the same pipe loses no race: the later one ends no
    // earlier and touches the same bytes.
    [[gnu::always_inline]] bool repeats_tail(const AccessList& accesses) const {
      const size_t n = static_cast<size_t>(accesses.size), t = static_cast<size_t>(tail_size_);
      if (n == 0 || size_ < n || t == 0) return false;
      // the ring's newest n entries: the tail list's last n (when n <= t)
      if (n <= t) return same_accesses(&tail_items_[t - n], accesses.items.data(), n);
      if (!same_access(tail_items_[t - 1], accesses.items[n - 1])) return false;
      return tail_reaches_back(accesses);
    }
    // The newest entries, which repeats_tail found equal to `accesses`, are now ref's. A loop's
    // repeat (the whole tail list again) writes only tail_ref_, not a ref per entry.
    void retag_tail(const AccessList& accesses, const InstrRef& ref) {
      if (accesses.size != tail_size_) retag_other_tail(accesses);
      tail_ref_ = ref;
      tail_stale_ = true;
      if (static_cast<size_t>(accesses.size) >= size_) front_end_ = ref.end;
    }
    void pop_front() {
      head_ = (head_ + 1) & mask_;
      if (--size_ > 0) {
        front_end_ = size_ <= static_cast<size_t>(tail_size_) ? tail_ref_.end : buf_[head_].end;
      }
      if (size_ == 0) head_ = 0;  // refill from the start: the ring's cache lines stay few
    }
    void clear() { head_ = size_ = 0; }
    void reset();    // empty, keeping its buffer
    void release();  // empty, its buffer (if any) given to the thread's spares
    void push_back(const InstrRef& ref, const Access& access);
    // The accesses of one instruction, in order (its list becomes the ring's tail list).
    void push_list(const InstrRef& ref, const AccessList& accesses);

   private:
    size_t slot_from_back(size_t i) const { return (head_ + size_ - 1 - i) & mask_; }
    Live& at_back(size_t i) const { return buf_[slot_from_back(i)]; }
    // Slot `slot` holds `access`, a field of which does not fit the entry: whole in wide_.
    [[gnu::noinline, gnu::cold]] void put_wide(size_t slot, const Access& access);
    bool tail_reaches_back(const AccessList& accesses) const;
    // The tail's entries take tail_ref_ into the ring (before the tail list changes), if a
    // retag has left them behind it.
    void settle_tail_refs();
    // retag_tail of a list longer or shorter than the tail list: it becomes the tail list.
    void retag_other_tail(const AccessList& accesses);
    void grow();
    bool take_spare();
    // Entries are written before they are read, so the storage is left uninitialised.
    struct Free {
      void operator()(Live* p) const { ::operator delete (p, std::align_val_t{alignof(Live)}); }
    };
    struct Spare {
      std::unique_ptr<Live[], Free> live;
      size_t capacity;
    };
    // Buffers of rings destroyed or emptied on this thread (release(): a kept core context past
    // its pool's storage budget keeps none): a new or emptied context's ring takes one at its
    // first entry rather than growing by doubling through fresh pages.
    static std::vector<Spare>* spares();
    // First, on one line: what every instruction with accesses reads or writes when it repeats
    // its pipe's newest accesses (the ring's size, its oldest end, the tail list's size and
    // instruction); then the tail list; the buffer's fields, which only a push or a drop reads,
    // last. (Members in declaration order had spread a repeat over five lines.)
    alignas(64) size_t size_ = 0;
    uint64_t front_end_ = 0;
    // The instruction the tail list's entries belong to (the newest to repeat them): kept here
    // alone, and written into their ring entries only when another list is pushed.
    InstrRef tail_ref_{};
    // A copy of the accesses of the newest instruction pushed (tail_items_, the first
    // tail_size_ of them): while the ring holds at least their count, they are its newest
    // entries, so a loop repeating one instruction is recognised by comparing two small lists
    // without reading the ring's memory (cold after another core ran). tail_size_ is 0 when
    // nothing was pushed since the last reset.
    int tail_size_ = 0;
    // Whether the tail list's entries in the ring still lack tail_ref_ (a retag since the push
    // that wrote them): settle_tail_refs writes them only then, not lines long evicted.
    bool tail_stale_ = false;
    alignas(64) std::array<Access, 4> tail_items_{};
    std::unique_ptr<Live[], Free> buf_;
    size_t capacity_ = 0;  // a power of two (or 0)
    size_t mask_ = 0, head_ = 0;
    // Per slot, the access of an entry marked wide (allocated at the ring's first such entry,
    // with the buffer's capacity, and grown with it).
    std::unique_ptr<Access[]> wide_;
  };
  // Only a pipe with an access still in flight when this one starts can race with it; most
  // instructions find none and skip the scan. The latest end of the other pipes is the top one,
  // or the runner-up for the top pipe itself.
  bool in_flight_elsewhere(int pipe, uint64_t start) const {
    return latest_end_[pipe == top_pipe_ ? runner_up_ : top_pipe_] > start;
  }
  // Keeps the two pipes with the latest ends, in O(1): a pipe's ends only grow (it runs in
  // order), so a new end can only move its own pipe up the ranking.
  void set_latest_end(int pipe, uint64_t end) {
    const bool grows = end >= latest_end_[pipe];
    latest_end_[pipe] = end;
    if (!grows) {
      rank_latest_ends();  // not on an in-order pipe; kept exact all the same
    } else if (pipe != top_pipe_ && end >= latest_end_[top_pipe_]) {
      runner_up_ = top_pipe_;
      top_pipe_ = pipe;
    } else if (pipe != top_pipe_ && end > latest_end_[runner_up_]) {
      runner_up_ = pipe;
    }
  }
  void rank_latest_ends();
  // Records the accesses of an instruction already checked: a loop's instruction re-touching
  // the bytes of its pipe's newest takes over their entries (the newest ref stands); any other
  // is added.
  [[gnu::always_inline]] void record(int pipe, uint64_t start, uint64_t end, uint32_t index,
                                     const char* name, const char* loc, const AccessList& accesses,
                                     uint64_t horizon) {
    LiveRing& q = live_[pipe];
    if (q.repeats_tail(accesses)) {
      set_latest_end(pipe, end);
      q.retag_tail(accesses, InstrRef{index, pipe, name, loc, start, end});
      return;
    }
    add(InstrRef{index, pipe, name, loc, start, end}, accesses, horizon);
  }
  // Records the accesses of `ref`, which do not repeat its pipe's newest.
  void add(const InstrRef& ref, const AccessList& accesses, uint64_t horizon);
  void scan(const InstrRef& ref, const Access& acc, std::vector<uint32_t>& reported);

  // Per pipe, the end of its newest access (pipes run in order: no kept access ends later).
  // First, in one cache line with the top two: every instruction reads them.
  std::array<uint64_t, PYPTO_NUM_PIPES> latest_end_{};
  int top_pipe_ = 0, runner_up_ = 1;  // the pipes with the latest and next latest ends
  std::array<LiveRing, PYPTO_NUM_PIPES> live_;
  std::vector<Hazard> found_;
  uint64_t count_ = 0;
};

}  // namespace pypto
