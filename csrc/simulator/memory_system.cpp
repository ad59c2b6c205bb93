#include "simulator/memory_system.hpp"

#include <sys/mman.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <algorithm>
#include <cstddef>
#include <memory>
#include <new>
#include <queue>
#include <set>
#include <utility>
#include <vector>

#include "simulator/hardware.hpp"
#include "simulator/huge_pages.hpp"

namespace pypto {
namespace {

// Zeroed words on their own mapping, 2 MiB-aligned and marked for huge pages: the tag store
// is touched at random across megabytes, and 4 KiB pages cost a TLB miss per lookup. Only
// the pages a run touches are ever backed.
struct Unmap {
  size_t bytes = 0;
  void operator()(uint64_t* p) const { munmap(p, bytes); }
};
using Array = std::unique_ptr<uint64_t[], Unmap>;

Array zeroed(size_t n) {
  const size_t bytes = (n * sizeof(uint64_t) + kHugePage - 1) / kHugePage * kHugePage;
  void* raw = mmap(nullptr, bytes + kHugePage, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (raw == MAP_FAILED) throw std::bad_alloc();
  const auto at = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = (at + kHugePage - 1) / kHugePage * kHugePage;
  if (aligned > at) munmap(raw, aligned - at);  // trim to the aligned span
  munmap(reinterpret_cast<void*>(aligned + bytes), kHugePage - (aligned - at));
  void* p = reinterpret_cast<void*>(aligned);
  advise_huge_pages(p, bytes);
  return Array(static_cast<uint64_t*>(p), Unmap{bytes});
}

}  // namespace

// The per-thread tag store, laid out for the sets' view (PackedSets or WideSets below): with
// at most 16 ways 32 bytes per set, then the side array of escaped quotients (a word per set
// and way: pages no run touches are never backed); else the fill words, then the ways'
// quotients, then their ranks. A run fills a set's ways in order, so a lookup compares only
// the ways this run filled, and a miss with a free way takes it without an LRU search.
struct MemorySystem::Store {
  size_t sets = 0, ways = 0;
  Array words;
  uint64_t runs = 0;  // run ids
  // The buffer list and the claims of the thread's last run, emptied, with their capacity:
  // a warm call of a small kernel allocates neither again.
  std::vector<Buffer> buffers;
  std::vector<std::pair<double, double>> used;

  static constexpr size_t kPackedWays = 16;
  bool packed() const { return ways <= kPackedWays; }
  void shape(size_t n_sets, size_t n_ways) {
    sets = n_sets;
    ways = n_ways;
    const size_t n =
        packed() ? sets * (4 + kPackedWays) : sets * (1 + ways) + (sets * ways + 7) / 8;
    words = zeroed(n);
  }
};

namespace {
// The calling thread's tag store. On the heap, the thread holding only its pointer: the
// library's thread-locals must fit the static TLS glibc keeps for a dlopen'ed library (512
// bytes), or every thread-local read takes the dynamic path (__tls_get_addr), as the current
// core's pointer is read per op.
template <class Store>
std::unique_ptr<Store>& thread_store() {
  thread_local std::unique_ptr<Store> kept;
  return kept;
}
// Claims of a long run are not kept: at most kKeptBuckets of them (1 MiB).
constexpr size_t kKeptBuckets = size_t{1} << 16;
}  // namespace

MemorySystem::MemorySystem(const Platform& p)
    : platform_(p), line_bytes_(std::max<int64_t>(p.l2_line_bytes, 1)) {
  ways_ = static_cast<size_t>(std::max(p.l2_ways, 1));
  sets_ = std::max<size_t>(static_cast<size_t>(p.l2_bytes / line_bytes_) / ways_, 1);
  ways_ = std::min<size_t>(ways_, hw::kMaxL2Ways);  // overrides beyond are refused earlier
  restart();
  buffers_ = std::move(store_->buffers);  // empty when another system on this thread holds it
  buffers_.clear();
  used_ = std::move(store_->used);
  used_.clear();
}

void MemorySystem::restart() {
  std::unique_ptr<Store>& kept = thread_store<Store>();
  if (!kept) kept = std::make_unique<Store>();
  Store& store = *kept;
  if (store.ways != ways_ || store.sets != sets_) store.shape(sets_, ways_);
  store_ = &store;
  epoch_ = ++store.runs;  // a new run id: sets filled by earlier runs read as empty
  buffers_.clear();
  unsettled_ = false;
  registered_ = 0;
  next_dev_ = kFirstDevice;
  overlap_ = false;
  segments_.clear();
  last_ = 0;
  window_base_ = held_ = 0;
  if (used_.capacity() > kKeptBuckets) std::vector<std::pair<double, double>>().swap(used_);
  used_.clear();
  stats_ = MemoryStats();
}

MemorySystem::~MemorySystem() {
  // Only to this thread's store: a kept system may end on another thread than its last run's,
  // whose store that thread's runs use meanwhile.
  if (store_ != thread_store<Store>().get()) return;
  if (store_->buffers.capacity() == 0) store_->buffers = std::move(buffers_);
  if (store_->used.capacity() == 0 && used_.capacity() <= kKeptBuckets)
    store_->used = std::move(used_);
}

void MemorySystem::add_buffer(const void* base, int64_t bytes) {
  const auto lo = static_cast<int64_t>(reinterpret_cast<intptr_t>(base));
  buffers_.push_back({lo, lo + bytes, static_cast<uint64_t>(++registered_), next_dev_});
  const auto line = static_cast<uint64_t>(line_bytes_);
  next_dev_ += (static_cast<uint64_t>(std::max<int64_t>(bytes, 1)) + line - 1) / line * line;
  unsettled_ = true;  // ordered at the next lookup: a run registers its tensors all at once
}

// The registrations sorted by first byte (ties in registration order), so an address is found
// by a binary search, and where some overlap, cut into segments. Once per batch of
// registrations: a run of tens of thousands of views sorted and cut in O(n log n), where
// sorting each one in on arrival and cutting again after each cost O(n^2) and more.
void MemorySystem::settle() {
  unsettled_ = false;
  std::stable_sort(buffers_.begin(), buffers_.end(),
                   [](const Buffer& x, const Buffer& y) { return x.lo < y.lo; });
  int64_t reach = INT64_MIN;
  overlap_ = false;
  for (const Buffer& b : buffers_) {
    overlap_ = overlap_ || b.lo < reach;
    reach = std::max(reach, b.hi);
  }
  segments_.clear();
  last_ = 0;
  if (overlap_) resolve_overlaps();
}

// Overlapping registrations (an array passed twice, views of one array) cut into disjoint
// segments, each resolved once to the earliest registration holding it — what a scan of every
// buffer per address would find — so an address is again one binary search, however many
// tensors a run has. A sweep over the cuts: the registrations holding the current piece kept
// by tag (the earliest first), entering at their first byte, leaving at their end.
void MemorySystem::resolve_overlaps() {
  std::vector<int64_t> cuts;
  for (const Buffer& b : buffers_) {
    cuts.push_back(b.lo);
    cuts.push_back(b.hi);
  }
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  std::set<std::pair<uint64_t, size_t>> holding;  // (tag, index into buffers_)
  using End = std::pair<int64_t, size_t>;         // (hi, index)
  std::priority_queue<End, std::vector<End>, std::greater<>> ends;
  size_t next = 0;
  for (size_t i = 0; i + 1 < cuts.size(); ++i) {
    const int64_t lo = cuts[i], hi = cuts[i + 1];
    for (; next < buffers_.size() && buffers_[next].lo <= lo; ++next) {
      holding.insert({buffers_[next].tag, next});
      ends.push({buffers_[next].hi, next});
    }
    for (; !ends.empty() && ends.top().first <= lo; ends.pop()) {
      holding.erase({buffers_[ends.top().second].tag, ends.top().second});
    }
    if (holding.empty()) continue;
    const Buffer& first = buffers_[holding.begin()->second];
    Segment* back = segments_.empty() ? nullptr : &segments_.back();
    if (back != nullptr && back->hi == lo && back->tag == first.tag) {
      back->hi = hi;
    } else {
      segments_.push_back({lo, hi, first.lo, first.tag, first.dev});
    }
  }
}

MemorySystem::Linear MemorySystem::linear(int64_t host) const {
  // The region (buffer, or segment with overlaps) holding `host`: the last one starting at or
  // before it, if it reaches that far. The rows of a transfer share one, so it is tried first.
  auto find = [&](const auto& regions, auto base_of) -> Linear {
    if (last_ < regions.size() && host >= regions[last_].lo && host < regions[last_].hi) {
      const auto& r = regions[last_];
      return {r.dev + static_cast<uint64_t>(host - base_of(r)), r.hi};
    }
    auto it = std::upper_bound(regions.begin(), regions.end(), host,
                               [](int64_t h, const auto& r) { return h < r.lo; });
    // Unregistered: tagged by address, up to the next registration.
    const int64_t next = it == regions.end() ? INT64_MAX : it->lo;
    if (it == regions.begin() || host >= (it - 1)->hi) return {static_cast<uint64_t>(host), next};
    const auto& r = *(it - 1);
    last_ = static_cast<size_t>(&r - regions.data());
    return {r.dev + static_cast<uint64_t>(host - base_of(r)), r.hi};
  };
  if (overlap_) return find(segments_, [](const Segment& g) { return g.base; });
  return find(buffers_, [](const Buffer& b) { return b.lo; });
}

// The tag store as one transfer's lookups see it, in locals: a lookup's stores into the sets
// could alias the system's own members, so reading those in the loop would reload them at
// every line. A line's set is its remainder by the number of sets and its tag follows from the
// quotient, so the pair names the line. LRU is exact and kept per set as the order of its ways
// (packed) or their ranks (wide), not as stamps of a clock that could run out: a hit or an
// install makes its way the most recent and ages by one place the ways that were more recent,
// and a full set's victim is the least recent way.

// An L2 of at most 16 ways: a set is 32 bytes, two to a host cache line, so a lookup reads
// and writes one line and FlashAttention's sets (about five ways filled each) fit the host's
// caches twice as well as in 64. A tag is 8 bits: the line's quotient by the sets less that of
// the first device line (2**48, where the registrations start); a quotient outside
// 0..kEscaped - 1 (an unregistered host address, or a device line past the first 255 rows of
// sets: 3 GiB registered on a2a3) is stored as kEscaped with its whole quotient in a side
// array, read only then.
struct alignas(32) MemorySystem::PackedSet {
  uint8_t tag[Store::kPackedWays];
  uint64_t order;  // nibble i: the way i places from the most recent (i < the ways filled)
  uint64_t fill;   // (run << 8) | ways filled in that run
};

struct MemorySystem::PackedSets {
  static_assert(sizeof(PackedSet) == 32, "two sets to a host cache line");
  static constexpr uint8_t kEscaped = 0xff;
  PackedSet* sets;
  uint64_t* escaped;  // per set and way, the quotient of a way tagged kEscaped
  size_t ways, count;
  uint64_t first_quotient, epoch;

  // `order` with the way at place `p` (or a new way `w` taking place `p` of a set that fills
  // it) moved to the front, the ways before it one place back; the places after stay.
  static uint64_t to_front(uint64_t order, uint64_t p, size_t w) {
    const uint64_t before = (uint64_t{1} << (4 * p)) - 1;  // places 0..p-1
    const uint64_t after = ~((before << 4) | 0xf);         // places p+1..15
    return (order & after) | ((order & before) << 4) | w;
  }
  // The place of way `w` in `order`, where it is among the first `valid` places: the lowest
  // nibble equal to w (a borrow can flag only nibbles above a true zero one; the places past
  // the filled ways hold stale nibbles, above it).
  static uint64_t place(uint64_t order, size_t w) {
    constexpr uint64_t kOnes = 0x1111111111111111, kTops = 0x8888888888888888;
    const uint64_t x = order ^ (w * kOnes);
    return static_cast<uint64_t>(__builtin_ctzll((x - kOnes) & ~x & kTops)) / 4;
  }

  // Bit w set when way w's tag is `tag`.
  static uint32_t matches(const PackedSet& s, uint8_t tag) {
#if defined(__SSE2__)
    const __m128i key = _mm_set1_epi8(static_cast<char>(tag));
    const __m128i at = _mm_load_si128(reinterpret_cast<const __m128i*>(s.tag));
    return static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(at, key)));
#else
    uint32_t m = 0;
    for (size_t w = 0; w < Store::kPackedWays; ++w) m |= (s.tag[w] == tag ? 1u : 0u) << w;
    return m;
#endif
  }

  uint8_t tag_of(uint64_t quotient) const {
    const uint64_t t = quotient - first_quotient;  // wraps above kEscaped below the first
    return t < kEscaped ? static_cast<uint8_t>(t) : kEscaped;
  }
  // The way of set `s` holding the line of `quotient`, tagged `tag`, among its `valid` ways
  // (this run's), as a bit; 0 when none does. An escaped tag is confirmed by its quotient.
  uint32_t holding(const PackedSet& s, uint8_t tag, uint64_t quotient, size_t valid) const {
    uint32_t m = matches(s, tag) & ((1u << valid) - 1);
    if (tag == kEscaped) [[unlikely]] {
      const size_t set = static_cast<size_t>(&s - sets);
      for (uint32_t left = m; left != 0; left &= left - 1) {
        const auto w = static_cast<size_t>(__builtin_ctz(left));
        if (escaped[set * Store::kPackedWays + w] != quotient) m &= ~(1u << w);
      }
    }
    return m;
  }

  // Installs the line of `quotient`, tagged `tag`, in set `set` whose `valid` ways (this
  // run's) do not hold it: in the next free way, or over the least recent one.
  void install(size_t set, uint8_t tag, uint64_t quotient, size_t valid) const {
    PackedSet& s = sets[set];
    size_t way = valid;
    uint64_t p = valid;  // a free way: behind every filled one
    if (valid < ways) {
      s.fill = (epoch << 8) | (valid + 1);
    } else {
      p = ways - 1;
      way = static_cast<size_t>((s.order >> (4 * p)) & 0xf);
    }
    s.order = to_front(s.order, p, way);
    s.tag[way] = tag;
    if (tag == kEscaped) escaped[set * Store::kPackedWays + way] = quotient;
  }

  // The sets are consecutive: the one kAhead lookups on is prefetched while this one is looked
  // up (a run prefetches past its end too: a prefetch never faults).
  static constexpr int64_t kAhead = 4;
  void prefetch(size_t set) const { __builtin_prefetch(sets + set, 1); }

  // Lines of quotient q in sets set, set + 1, ... (n of them), none past the last set: how
  // many hit. They share a tag. One compare of a set's 16 tags finds the way, whichever it is.
  uint64_t lookup_run(size_t set, uint64_t q, uint64_t n) const {
    const uint8_t tag = tag_of(q);
    const uint64_t run = epoch;
    PackedSet* s = sets + set;
    PackedSet* const end = s + n;
    uint64_t hits = 0;
    for (int64_t k = 0; k < kAhead; ++k) __builtin_prefetch(s + k, 1);
    for (; s != end; ++s) {
      __builtin_prefetch(s + kAhead, 1);
      const size_t valid = (s->fill >> 8) == run ? static_cast<size_t>(s->fill & 0xff) : 0;
      const uint32_t hit = holding(*s, tag, q, valid);
      if (hit != 0) {
        // Already the most recent (the set's last line read again): no move.
        const auto w = static_cast<size_t>(__builtin_ctz(hit));
        if ((s->order & 0xf) != w) s->order = to_front(s->order, place(s->order, w), w);
        ++hits;
      } else {
        install(static_cast<size_t>(s - sets), tag, q, valid);
      }
    }
    return hits;
  }
};

// An L2 of more than 16 ways: per set a fill word, its ways' quotients (whole) and their LRU
// ranks a byte each, in three arrays; the way loops are plain.
struct MemorySystem::WideSets {
  uint64_t* fills;
  uint64_t* quotients;  // per set, its ways'
  uint8_t* ranks;       // per set, its ways'
  size_t ways, count;
  uint64_t epoch;

  // True on a hit; a miss installs the line, in a free way or over the way of the oldest rank.
  bool lookup(size_t set, uint64_t q) const {
    uint64_t* tag = quotients + set * ways;
    uint8_t* rank = ranks + set * ways;
    const size_t valid = (fills[set] >> 8) == epoch ? static_cast<size_t>(fills[set] & 0xff) : 0;
    size_t way = 0;
    while (way < valid && tag[way] != q) ++way;
    const bool hit = way < valid;
    size_t age = hit ? rank[way] : valid;  // a free way: every valid way is more recent
    if (!hit && valid < ways) {
      fills[set] = (epoch << 8) | (valid + 1);
    } else if (!hit) {  // full: the way of the oldest rank
      age = ways - 1;
      way = 0;
      while (rank[way] != age) ++way;
    }
    tag[way] = q;
    for (size_t w = 0; w < valid; ++w) rank[w] += rank[w] < age ? 1 : 0;
    rank[way] = 0;
    return hit;
  }
  static constexpr int64_t kAhead = 4;
  void prefetch(size_t set) const { __builtin_prefetch(fills + set, 1); }
  uint64_t lookup_run(size_t set, uint64_t q, uint64_t n) const {
    uint64_t hits = 0;
    for (uint64_t k = 0; k < n; ++k) hits += lookup(set + k, q) ? 1 : 0;
    return hits;
  }
};

namespace {
// Lines first..end, in order: consecutive lines in consecutive sets, as runs up to the last
// set (a run's lines share their quotient by the sets, so their tag). How many hit.
template <class Sets>
uint64_t lookup_range(const Sets& sets, uint64_t first, uint64_t end) {
  uint64_t q = first / sets.count, hits = 0;
  size_t set = static_cast<size_t>(first % sets.count);
  for (uint64_t line = first; line <= end; set = 0, ++q) {
    const uint64_t run = std::min<uint64_t>(end - line + 1, sets.count - set);
    hits += sets.lookup_run(set, q, run);
    line += run;
  }
  return hits;
}
}  // namespace

template <>
MemorySystem::PackedSets MemorySystem::sets() const {
  PackedSet* packed = reinterpret_cast<PackedSet*>(store_->words.get());
  const uint64_t first_line = kFirstDevice / static_cast<uint64_t>(line_bytes_);
  return {packed, reinterpret_cast<uint64_t*>(packed + sets_), ways_, sets_, first_line / sets_,
          epoch_};
}

template <>
MemorySystem::WideSets MemorySystem::sets() const {
  uint64_t* fills = store_->words.get();
  return {fills, fills + sets_, reinterpret_cast<uint8_t*>(fills + sets_ * (1 + ways_)),
          ways_, sets_,         epoch_};
}

// Looks up the lines a window touches (each row's lines once; a line shared by consecutive
// rows counts once): how many hit the L2 and how many missed. A window inside one buffer maps
// onto canonical addresses linearly, so its rows' addresses need no search; one whose rows
// leave no gap is a single run of consecutive lines in consecutive sets. Either way the lines
// are looked up in the same order, so hits, misses and the LRU state are the same.
MemorySystem::Lines MemorySystem::lookup_lines(const Access& gm) {
  if (unsettled_) settle();
  const Lines n =
      store_->packed() ? lookup_lines_as<PackedSets>(gm) : lookup_lines_as<WideSets>(gm);
  stats_.l2_hits += n.hits;
  stats_.l2_misses += n.misses;
  return n;
}

template <class Sets>
MemorySystem::Lines MemorySystem::lookup_lines_as(const Access& gm) {
  Lines n;
  const int64_t extent = (gm.rows - 1) * gm.stride + gm.row_bytes;
  const Linear at = linear(gm.base);
  if (gm.stride >= 0 && extent <= at.hi - gm.base) {
    if (gm.rows == 1 || gm.stride <= gm.row_bytes) {
      lookup_span<Sets>(at.canon, extent, n);
    } else {
      const auto stride = static_cast<uint64_t>(gm.stride);
      lookup_rows<Sets>(
          gm, [&](int64_t r) { return at.canon + static_cast<uint64_t>(r) * stride; }, n);
    }
  } else {
    lookup_rows<Sets>(
        gm, [&](int64_t r) { return linear(gm.base + r * gm.stride).canon; }, n);
  }
  return n;
}

// The lines of the canonical bytes [lo, lo + bytes).
template <class Sets>
void MemorySystem::lookup_span(uint64_t lo, int64_t bytes, Lines& n) {
  const Sets sets = this->sets<Sets>();
  const uint64_t shift = static_cast<uint64_t>(__builtin_ctzll(static_cast<uint64_t>(line_bytes_)));
  const uint64_t first = lo >> shift, end = (lo + static_cast<uint64_t>(bytes) - 1) >> shift;
  const uint64_t hits = lookup_range(sets, first, end);
  n.hits += hits;
  n.misses += end + 1 - first - hits;
}

// Row by row, `row_lo(r)` the canonical address of row r's first byte; each row's first set
// is prefetched kAhead rows before its lookup.
template <class Sets, class Canonical>
void MemorySystem::lookup_rows(const Access& gm, Canonical row_lo, Lines& n) {
  constexpr int64_t kAhead = Sets::kAhead;
  const Sets sets = this->sets<Sets>();
  uint64_t hits = 0, looked = 0;  // in registers across the loop
  const uint64_t shift = static_cast<uint64_t>(__builtin_ctzll(static_cast<uint64_t>(line_bytes_)));
  auto row_at = [&](int64_t r) {  // where a row's lines sit depends only on its address
    const uint64_t lo = row_lo(r);
    sets.prefetch(static_cast<size_t>((lo >> shift) % sets_));
    return lo;
  };
  uint64_t ahead[kAhead];
  for (int64_t r = 0; r < std::min(kAhead, gm.rows); ++r) ahead[r] = row_at(r);
  uint64_t last = UINT64_MAX;
  for (int64_t r = 0; r < gm.rows; ++r) {
    const uint64_t lo = ahead[r % kAhead];
    if (r + kAhead < gm.rows) ahead[r % kAhead] = row_at(r + kAhead);
    const uint64_t first = lo >> shift,
                   end = (lo + static_cast<uint64_t>(gm.row_bytes) - 1) >> shift;
    const uint64_t line = std::max(first, last == UINT64_MAX ? first : last + 1);
    if (line > end) continue;  // the row's lines were the last row's
    hits += lookup_range(sets, line, end);
    looked += end + 1 - line;
    last = end;
  }
  n.hits += hits;
  n.misses += looked - hits;
}

std::pair<double, double>* MemorySystem::claims(uint64_t bucket) {
  if (bucket < window_base_) return nullptr;
  if (bucket - window_base_ >= kWindowBuckets) {  // slide: forget the oldest half
    const uint64_t base = bucket - kWindowBuckets / 2;
    if (base > held_) {
      const uint64_t drop = std::min<uint64_t>(base - held_, used_.size());
      used_.erase(used_.begin(), used_.begin() + static_cast<std::ptrdiff_t>(drop));
      held_ = base;
    }
    window_base_ = base;
  }
  if (used_.empty()) held_ = bucket;  // the window's buckets before the first claimed are zero
  if (bucket < held_) {               // before every bucket held (rare: claims come in order)
    used_.insert(used_.begin(), static_cast<size_t>(held_ - bucket), {0.0, 0.0});
    held_ = bucket;
  }
  const auto i = static_cast<size_t>(bucket - held_);
  if (i >= used_.size()) {
    // At least kFirstBuckets at once (a held bucket with no claims is one not held): a short
    // run's few transfers then grow the list once, not at each bucket.
    constexpr size_t kFirstBuckets = 16;
    const auto room = static_cast<size_t>(kWindowBuckets - (held_ - window_base_));
    used_.resize(std::min(std::max({i + 1, used_.size() * 2, kFirstBuckets}), room), {0.0, 0.0});
  }
  return &used_[i];
}

double MemorySystem::transfer(double start, double lead_miss, double lead_hit, double port_bw,
                              const Access& gm) {
  const double bytes = static_cast<double>(gm.rows * gm.row_bytes);
  if (bytes <= 0 || port_bw <= 0) return lead_miss;
  const Lines lines = lookup_lines(gm);
  const double total = static_cast<double>(lines.hits + lines.misses);
  const double hit = total > 0 ? static_cast<double>(lines.hits) / total : 0.0;
  const double lead = lines.misses == 0 ? lead_hit : lead_miss, t0 = start + lead;
  // A missed line is filled whole from HBM, whatever part of it the transfer asked for: a
  // 256 B row of a 512 B line draws 512 B of HBM. Per byte moved the transfer draws `miss`
  // bytes of HBM (above 1 when rows cover lines partly) and `hit` bytes of L2.
  const double hbm = static_cast<double>(lines.misses) * static_cast<double>(line_bytes_);
  const double miss = hbm / bytes;
  stats_.hbm_bytes += hbm;
  stats_.l2_bytes += bytes * hit;
  const double hbm_cap = platform_.hbm_achievable() * kBucketCycles;
  const double l2_cap = platform_.l2_bytes_per_cycle * kBucketCycles;
  double left = bytes, t = t0;
  bool stalled = false;
  for (size_t step = 0; left > 0; ++step) {
    if (step == kMaxSteps) {  // beyond any realistic transfer: the rest at the port rate
      t += left / port_bw;
      break;
    }
    const auto b = static_cast<uint64_t>(t / kBucketCycles);
    const double span = static_cast<double>(b + 1) * kBucketCycles - t;
    std::pair<double, double> none{0.0, 0.0};
    // A bucket already in the window is read in place; claims() slides or grows it.
    const uint64_t i = b - held_;  // wraps above the held buckets for b < held_
    std::pair<double, double>* c = i < used_.size() ? &used_[i] : claims(b);
    if (c == nullptr) c = &none;
    double can = port_bw * span;
    if (miss > 0) can = std::min(can, std::max(hbm_cap - c->first, 0.0) / miss);
    if (hit > 0) can = std::min(can, std::max(l2_cap - c->second, 0.0) / hit);
    stalled = stalled || can < port_bw * span;
    const double moved = std::min(can, left);
    c->first += moved * miss;
    c->second += moved * hit;
    left -= moved;
    // The last piece ends part-way through the bucket, at the rate the bucket allowed.
    t = left > 0 ? t + span : t + (can > 0 ? span * moved / can : 0);
  }
  if (!stalled) return lead + bytes / port_bw;  // exactly the port figure when nothing was shared
  ++stats_.stalled_transfers;
  return lead + (t - t0);
}

}  // namespace pypto
