#include "simulator/hazard.hpp"

#include <algorithm>
#include <new>

#include "simulator/core_model.hpp"

namespace pypto {
namespace {

int64_t floor_div(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

int64_t extent_end(const Access& a) { return a.base + (a.rows - 1) * a.stride + a.row_bytes; }

bool contiguous(const Access& a) { return a.rows == 1 || a.stride == a.row_bytes; }

// Does the byte interval [x, x + len) touch any row of `b`?
bool interval_hits_rows(int64_t x, int64_t len, const Access& b) {
  if (b.stride <= 0 || b.row_bytes >= b.stride) return x < extent_end(b) && x + len > b.base;
  int64_t j_min = floor_div(x - b.row_bytes - b.base, b.stride) + 1;
  int64_t j_max = -floor_div(-(x + len - b.base), b.stride) - 1;  // ceil(...) - 1
  j_min = std::max<int64_t>(j_min, 0);
  j_max = std::min<int64_t>(j_max, b.rows - 1);
  return j_min <= j_max;
}

const char* conflict_kind(const Access& earlier, const Access& later) {
  if (earlier.write && later.write) return "WAW";
  if (earlier.write) return "RAW";
  if (later.write) return "WAR";
  return nullptr;
}

}  // namespace

bool accesses_overlap(const Access& a, const Access& b) {
  if (a.space != b.space || a.row_bytes <= 0 || b.row_bytes <= 0) return false;
  if (extent_end(a) <= b.base || extent_end(b) <= a.base) return false;
  if (contiguous(a) && contiguous(b)) return true;
  const Access& few = a.rows <= b.rows ? a : b;
  const Access& many = a.rows <= b.rows ? b : a;
  for (int64_t r = 0; r < few.rows; ++r) {
    if (interval_hits_rows(few.base + r * few.stride, few.row_bytes, many)) return true;
  }
  return false;
}

std::string Hazard::describe() const {
  auto one = [](const InstrRef& r) {
    return std::string(r.name) + " #" + std::to_string(r.index) + " on " + pipe_name(r.pipe) +
           " [" + std::to_string(r.start) + ", " + std::to_string(r.end) + ")" +
           (r.loc[0] ? std::string(" at ") + r.loc : std::string());
  };
  return std::string(kind) + " race: " + one(later) + " overlaps " + one(earlier) +
         " with no sync between them";
}

void HazardChecker::scan(const InstrRef& ref, const Access& acc, std::vector<uint32_t>& reported) {
  for (int p = 0; p < PYPTO_NUM_PIPES; ++p) {
    // A pipe executes in order: no race with itself. A pipe whose newest access (its latest
    // end) ended by ref's start has none in flight: the walk below would stop at once, after
    // reading the ring's memory.
    if (p == ref.pipe || latest_end_[p] <= ref.start) continue;
    const LiveRing& q = live_[p];
    for (size_t i = 0; i < q.size() && q.end_from_back(i) > ref.start; ++i) {
      const InstrRef earlier = q.ref_from_back(i, p);
      const Access access = q.access_from_back(i);
      const char* kind = conflict_kind(access, acc);
      if (kind == nullptr || earlier.index == ref.index) continue;
      if (!accesses_overlap(access, acc)) continue;
      // one report per pair of instructions, however many of their accesses collide
      if (std::find(reported.begin(), reported.end(), earlier.index) != reported.end()) continue;
      reported.push_back(earlier.index);
      ++count_;
      if (found_.size() < kMaxKept)
        found_.push_back({kind, static_cast<int>(acc.space), earlier, ref});
    }
  }
}

void HazardChecker::reset() {
  for (LiveRing& q : live_) q.reset();
  latest_end_.fill(0);
  top_pipe_ = 0;
  runner_up_ = 1;
  found_.clear();
  count_ = 0;
}

// The buffer is kept: a core context is reset for each task it runs, and a ring freed and
// grown again by doubling on every task cost a page fault per fresh page and a copy of every
// entry on the way. (A context kept between runs is reset only when it is taken again, so it
// holds its rings at its last task's size either way.)
void HazardChecker::LiveRing::reset() {
  head_ = size_ = 0;
  front_end_ = 0;
  tail_size_ = 0;
  tail_stale_ = false;
}

namespace {
// Kept per thread: every ring of a chip-wide run. FlashAttention [24, 2048, 128] holds ~225
// rings at once, most of them at kMaxInFlight entries (~360 KiB): ~80 MiB, which a smaller
// budget freed after each run, and the next run's rings grew again by doubling through fresh
// pages (a page fault per 4 KiB and a copy of every entry at each doubling).
constexpr size_t kSpareBytes = size_t{128} << 20;
thread_local bool spares_gone = false;  // set at thread exit, when the list is freed
}  // namespace

std::vector<HazardChecker::LiveRing::Spare>* HazardChecker::LiveRing::spares() {
  struct Kept {
    std::vector<Spare> list;
    ~Kept() { spares_gone = true; }
  };
  thread_local Kept kept;
  return spares_gone ? nullptr : &kept.list;
}

HazardChecker::LiveRing::~LiveRing() { release(); }

void HazardChecker::LiveRing::release() {
  std::vector<Spare>* kept = buf_ ? spares() : nullptr;
  if (kept != nullptr) {
    size_t bytes = capacity_ * sizeof(Live);
    for (const Spare& s : *kept) bytes += s.capacity * sizeof(Live);
    if (bytes <= kSpareBytes) {
      try {
        kept->push_back({std::move(buf_), capacity_});
      } catch (const std::bad_alloc&) {  // the buffer is freed below
      }
    }
  }
  buf_.reset();
  wide_.reset();
  capacity_ = mask_ = head_ = size_ = 0;
  front_end_ = 0;
  tail_size_ = 0;
  tail_stale_ = false;
}

void HazardChecker::release_buffers() {
  for (LiveRing& q : live_) q.release();
}

// The largest buffer a destroyed ring left on this thread, for an empty ring's first entry.
bool HazardChecker::LiveRing::take_spare() {
  std::vector<Spare>* kept = spares();
  if (kept == nullptr || kept->empty()) return false;
  auto largest = std::max_element(kept->begin(), kept->end(), [](const Spare& a, const Spare& b) {
    return a.capacity < b.capacity;
  });
  buf_ = std::move(largest->live);
  capacity_ = largest->capacity;
  mask_ = capacity_ - 1;
  head_ = 0;
  kept->erase(largest);
  return true;
}

// Full: unrolled into a ring twice the size (an empty one takes a spare buffer if there is one).
void HazardChecker::LiveRing::grow() {
  if (capacity_ == 0 && take_spare()) return;
  const size_t capacity = std::max<size_t>(16, 2 * capacity_);
  std::unique_ptr<Live[], Free> grown(static_cast<Live*>(
      ::operator new (capacity * sizeof(Live), std::align_val_t{alignof(Live)})));
  for (size_t i = 0; i < size_; ++i) grown[i] = buf_[(head_ + i) & mask_];
  if (wide_) {
    std::unique_ptr<Access[]> wide(new Access[capacity]);
    for (size_t i = 0; i < size_; ++i) wide[i] = wide_[(head_ + i) & mask_];
    wide_ = std::move(wide);
  }
  buf_ = std::move(grown);
  capacity_ = capacity;
  mask_ = capacity - 1;
  head_ = 0;
}

namespace {
// Whether an access fits a ring entry's narrow fields: rows, row bytes and stride in 32 bits
// (signed), space and write in 8 (unsigned). Tested with one compare per width.
[[gnu::always_inline]] inline bool fits_entry(const Access& a) {
  const auto off = [](int64_t x) { return static_cast<uint64_t>(x) + (uint64_t{1} << 31); };
  return ((off(a.rows) | off(a.row_bytes) | off(a.stride)) >> 32) == 0 &&
         ((static_cast<uint64_t>(a.space) | static_cast<uint64_t>(a.write)) >> 8) == 0;
}
}  // namespace

void HazardChecker::LiveRing::push_back(const InstrRef& ref, const Access& access) {
  if (size_ == capacity_) grow();
  const size_t slot = (head_ + size_) & mask_;
  Live& e = buf_[slot];  // written in place: no temporary entry to copy
  e.end = ref.end;
  e.start = ref.start;
  e.name = ref.name;
  e.loc = ref.loc;
  e.index = ref.index;
  e.base = access.base;
  if (fits_entry(access)) [[likely]] {
    e.rows = static_cast<int32_t>(access.rows);
    e.row_bytes = static_cast<int32_t>(access.row_bytes);
    e.stride = static_cast<int32_t>(access.stride);
    e.space = static_cast<uint8_t>(access.space);
    e.write = static_cast<uint8_t>(access.write);
    e.wide = 0;
  } else {
    put_wide(slot, access);
  }
  if (size_++ == 0) front_end_ = ref.end;
}

void HazardChecker::LiveRing::put_wide(size_t slot, const Access& access) {
  if (!wide_) wide_.reset(new Access[capacity_]);
  wide_[slot] = access;
  buf_[slot].wide = 1;
}

// The tail list is copied entry by entry in the same loop: a copy of the whole list moved four
// entries, most of them unused, and a loop of its own became a library call. The entries are
// written whole (their refs are the tail's), so each is written once whatever comes next.
void HazardChecker::LiveRing::push_list(const InstrRef& ref, const AccessList& accesses) {
  settle_tail_refs();
  for (int i = 0; i < accesses.size; ++i) {
    push_back(ref, accesses.items[i]);
    tail_items_[static_cast<size_t>(i)] = accesses.items[static_cast<size_t>(i)];
  }
  tail_size_ = accesses.size;
  tail_ref_ = ref;
  tail_stale_ = false;  // its entries were just written with it
}

void HazardChecker::LiveRing::settle_tail_refs() {
  if (!tail_stale_) return;
  tail_stale_ = false;
  const size_t n = std::min(static_cast<size_t>(tail_size_), size_);
  for (size_t i = 0; i < n; ++i) {
    Live& e = at_back(i);
    e.end = tail_ref_.end;
    e.start = tail_ref_.start;
    e.name = tail_ref_.name;
    e.loc = tail_ref_.loc;
    e.index = tail_ref_.index;
  }
}

void HazardChecker::LiveRing::retag_other_tail(const AccessList& accesses) {
  settle_tail_refs();
  tail_items_ = accesses.items;
  tail_size_ = accesses.size;
}

// More accesses than the tail list holds: the older ones are compared in the ring itself.
bool HazardChecker::LiveRing::tail_reaches_back(const AccessList& accesses) const {
  const size_t n = static_cast<size_t>(accesses.size);
  for (size_t i = 0; i < n; ++i) {
    if (!same_access(access_from_back(n - 1 - i), accesses.items[i])) return false;
  }
  return true;
}

void HazardChecker::rank_latest_ends() {
  top_pipe_ = 0;
  for (int p = 1; p < PYPTO_NUM_PIPES; ++p) {
    if (latest_end_[p] > latest_end_[top_pipe_]) top_pipe_ = p;
  }
  runner_up_ = top_pipe_ == 0 ? 1 : 0;
  for (int p = 0; p < PYPTO_NUM_PIPES; ++p) {
    if (p != top_pipe_ && latest_end_[p] > latest_end_[runner_up_]) runner_up_ = p;
  }
}

void HazardChecker::check_and_add(const InstrRef& ref, const AccessList& accesses,
                                  uint64_t horizon) {
  if (in_flight_elsewhere(ref.pipe, ref.start)) {
    std::vector<uint32_t> reported;
    for (int i = 0; i < accesses.size; ++i) scan(ref, accesses.items[i], reported);
  }
  record(ref.pipe, ref.start, ref.end, ref.index, ref.name, ref.loc, accesses, horizon);
}

void HazardChecker::add(const InstrRef& ref, const AccessList& accesses, uint64_t horizon) {
  auto& q = live_[ref.pipe];
  if (accesses.size > 0) set_latest_end(ref.pipe, ref.end);
  // Ends never decrease along a pipe: when its newest access has ended, all have.
  if (latest_end_[ref.pipe] <= horizon) q.clear();
  while (!q.empty() && (q.front_end() <= horizon ||
                        q.size() + static_cast<size_t>(accesses.size) > kMaxInFlight)) {
    q.pop_front();
  }
  q.push_list(ref, accesses);
}

}  // namespace pypto
