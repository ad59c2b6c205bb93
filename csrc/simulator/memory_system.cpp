#include "simulator/memory_system.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cstddef>
#include <limits>
#include <memory>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "simulator/errors.hpp"
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

// Two arrays, so a lookup touches few cache lines: per set a fill word, (run << 8) | ways
// filled in that run (eight sets to a cache line, so a run of consecutive sets shares them),
// then per set a row of its ways' tags and LRU stamps, a cache line's worth of ways together —
// their tags, then their stamps (8 ways of 32-bit words, 4 of 64-bit) — so a hit in one of the
// first ways reads and writes one line of the row. A run fills a set's ways in order, so a
// lookup scans only the ways this run filled, and a miss with a free way takes it without an
// LRU search (a streaming kernel never searches).
struct MemorySystem::Store {
  static constexpr size_t kLineWords = 8;
  size_t sets = 0, ways = 0, word = 0;  // word: bytes of a tag or a stamp
  size_t row_bytes = 0;                 // a set's row: its ways to whole cache lines
  Array words;                          // the fill words, then the rows
  uint64_t* rows = nullptr;
  uint64_t clock = 0;  // the LRU clock: grows across runs (renumbered before a stamp overflows)
  uint64_t runs = 0;   // run ids
  // The buffer list and the claims of the thread's last run, emptied, with their capacity:
  // a warm call of a small kernel allocates neither again.
  std::vector<Buffer> buffers;
  std::vector<std::pair<double, double>> used;

  void shape(size_t n_sets, size_t n_ways, size_t word_bytes) {
    sets = n_sets;
    ways = n_ways;
    word = word_bytes;
    const size_t group = 32 / word;  // ways to a cache line
    row_bytes = (ways + group - 1) / group * 64;
    const size_t fill_words = (sets + kLineWords - 1) / kLineWords * kLineWords;
    words = zeroed(fill_words + sets * row_bytes / sizeof(uint64_t));
    rows = words.get() + fill_words;
    clock = 0;
  }
  uint64_t& filled(size_t s) { return words[s]; }
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
  // The highest line a run can look up: a host address (below 2**48) or a device address
  // (2**48 up, by the bytes registered): its tag, the line's quotient by the sets, plus one.
  const uint64_t top_line = (uint64_t{1} << 49) / static_cast<uint64_t>(line_bytes_);
  narrow_ = top_line / sets_ + 1 < UINT32_MAX;
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
  const size_t word = narrow_ ? sizeof(uint32_t) : sizeof(uint64_t);
  if (store.ways != ways_ || store.sets != sets_ || store.word != word) {
    store.shape(sets_, ways_, word);
  }
  store_ = &store;
  epoch_ = ++store.runs;  // a new run id: sets filled by earlier runs read as empty
  buffers_.clear();
  registered_ = 0;
  next_dev_ = uint64_t{1} << 48;
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
  const Buffer b{lo, lo + bytes, static_cast<uint64_t>(++registered_), next_dev_};
  const auto line = static_cast<uint64_t>(line_bytes_);
  next_dev_ += (static_cast<uint64_t>(std::max<int64_t>(bytes, 1)) + line - 1) / line * line;
  // Kept sorted by first byte (ties in registration order), so an address is found by a
  // binary search; overlapping registrations resolve to the earliest, as a linear scan would.
  auto at = std::upper_bound(buffers_.begin(), buffers_.end(), b,
                             [](const Buffer& x, const Buffer& y) { return x.lo < y.lo; });
  at = buffers_.insert(at, b);  // may reallocate: the index is taken after
  const auto i = static_cast<size_t>(at - buffers_.begin());
  // Sorted and disjoint before: only the new buffer's neighbours can overlap it.
  overlap_ = overlap_ || (i > 0 && buffers_[i - 1].hi > b.lo) ||
             (i + 1 < buffers_.size() && b.hi > buffers_[i + 1].lo);
  if (overlap_) resolve_overlaps();
}

// Overlapping registrations (an array passed twice, views of one array) cut into disjoint
// segments, each resolved once to the earliest registration holding it — what a scan of every
// buffer per address would find — so an address is again one binary search, however many
// tensors a run has. Registrations are few (a run's tensors and pipe rings): rebuilt each time.
void MemorySystem::resolve_overlaps() {
  std::vector<int64_t> cuts;
  for (const Buffer& b : buffers_) {
    cuts.push_back(b.lo);
    cuts.push_back(b.hi);
  }
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  segments_.clear();
  for (size_t i = 0; i + 1 < cuts.size(); ++i) {
    const int64_t lo = cuts[i], hi = cuts[i + 1];
    const Buffer* first = nullptr;
    for (const Buffer& b : buffers_) {
      if (b.lo > lo) break;  // sorted by lo: no later buffer holds [lo, hi)
      if (b.hi >= hi && (first == nullptr || b.tag < first->tag)) first = &b;
    }
    if (first == nullptr) continue;
    Segment* back = segments_.empty() ? nullptr : &segments_.back();
    if (back != nullptr && back->hi == lo && back->tag == first->tag) {
      back->hi = hi;
    } else {
      segments_.push_back({lo, hi, first->lo, first->tag, first->dev});
    }
  }
  last_ = 0;
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

// The tag store as one transfer's lookups see it, in locals: a lookup's stores into the tags
// and stamps could alias the system's own members, so reading those in the loop would reload
// them at every line. A line's tag is its quotient by the number of sets, plus one (0: never
// filled): the set is its remainder, so the pair names the line.
template <class Word>
struct MemorySystem::Sets {
  static constexpr size_t kGroup = 32 / sizeof(Word);  // ways to a cache line of a row
  static constexpr uint64_t kMaxStamp = std::numeric_limits<Word>::max();
  uint64_t* fills;
  Word* rows;
  size_t stride, ways, count;  // stride: words per row
  uint64_t epoch;

  // Way w's tag in its set's row; its stamp is kGroup words on.
  static size_t tag_at(size_t w) { return w / kGroup * 2 * kGroup + w % kGroup; }
  Word* row(size_t set) const { return rows + set * stride; }
  static Word tag_of(uint64_t quotient) {
    if (quotient + 1 > kMaxStamp) {  // not below 2**49: an address no run can have
      throw SimError(ErrorKind::kInternal, "an L2 line beyond the tag store's range: quotient " +
                                               std::to_string(quotient));
    }
    return static_cast<Word>(quotient + 1);
  }

  // True on a hit; a miss installs the line. `clock` is the LRU clock. The set is given by
  // its fill word and its row. `way` is set to the way that holds the line.
  bool lookup_at(uint64_t& filled, Word* way_row, Word tag, uint64_t& clock, size_t& way) const {
    const size_t valid = (filled >> 8) == epoch ? static_cast<size_t>(filled & 0xff) : 0;
    for (size_t w = 0; w < valid; ++w) {
      if (way_row[tag_at(w)] == tag) {
        way_row[tag_at(w) + kGroup] = static_cast<Word>(++clock);
        way = w;
        return true;
      }
    }
    size_t victim = valid;
    if (valid < ways) {
      filled = (epoch << 8) | (valid + 1);
    } else {  // full: the least recently used way
      victim = 0;
      for (size_t w = 1; w < ways; ++w) {
        if (way_row[tag_at(w) + kGroup] < way_row[tag_at(victim) + kGroup]) victim = w;
      }
    }
    way_row[tag_at(victim)] = tag;
    way_row[tag_at(victim) + kGroup] = static_cast<Word>(++clock);
    way = victim;
    return false;
  }

  // Before `n` more lookups: a clock that would pass a stamp's range is renumbered first.
  // Every set's stamps (of the ways its fill word counts, whichever run filled it) become
  // their ranks 1..ways, in the same order, and the clock restarts above them: LRU compares
  // stamps only within a set, so every answer stays the same.
  void make_room(uint64_t& clock, uint64_t n) const {
    if (n <= kMaxStamp - clock) return;
    renumber();
    clock = ways;
  }
  [[gnu::noinline, gnu::cold]] void renumber() const {
    for (size_t s = 0; s < count; ++s) {
      Word* r = row(s);
      const size_t filled = std::min<size_t>(fills[s] & 0xff, ways);
      size_t order[hw::kMaxL2Ways];
      for (size_t w = 0; w < filled; ++w) order[w] = w;
      std::sort(order, order + filled,
                [&](size_t x, size_t y) { return r[tag_at(x) + kGroup] < r[tag_at(y) + kGroup]; });
      for (size_t k = 0; k < filled; ++k) r[tag_at(order[k]) + kGroup] = static_cast<Word>(k + 1);
    }
  }

  // The tag store spans megabytes touched at random, so a lookup would wait on a cache miss:
  // the fill word and the first line of the row of the set kAhead lookups on are prefetched
  // while this one is looked up.
  static constexpr int64_t kAhead = 4;
  static void prefetch_at(const uint64_t* fill, const Word* way_row) {
    __builtin_prefetch(fill, 1);
    __builtin_prefetch(way_row, 1);
  }
  void prefetch(size_t set) const { prefetch_at(fills + set, row(set)); }

  // Lines of quotient q in sets set, set + 1, ... (n of them), none past the last set: how
  // many hit. They share a tag; consecutive sets' fill words are consecutive and their rows a
  // stride apart, so the run walks them by pointer. Each set is prefetched kAhead lookups
  // before its own (past the run's end too: a prefetch never faults).
  uint64_t lookup_run(size_t set, uint64_t q, uint64_t n, uint64_t& lru_clock) const {
    make_room(lru_clock, n);
    uint64_t* fill = fills + set;
    uint64_t* const fill_end = fill + n;
    Word* way_row = row(set);
    const size_t step = stride, ahead = kAhead * stride;
    const uint64_t mark = epoch << 8;  // a fill word of this run, its way count masked off
    const Word tag = tag_of(q);
    uint64_t clock = lru_clock, hits = 0;
    for (int64_t k = 0; k < kAhead; ++k) prefetch_at(fill + k, way_row + k * step);
    // The line in the first way of a set filled this run (which has at least one way): a hit
    // found without the way loop, as lookup_at finds it (a line is in at most one way). While
    // the data fits the L2 a set holds few lines, so this is the common hit. Failing that, the
    // way the last line of the run was found or installed in: consecutive lines of one buffer
    // lie in consecutive sets, filled in the same order, so they share a way (a tile of a
    // kernel's second input is in the second way of every set it spans).
    size_t way = 0;
    for (; fill != fill_end; ++fill, way_row += step) {
      prefetch_at(fill + kAhead, way_row + ahead);
      const uint64_t f = *fill;
      if ((f & ~uint64_t{0xff}) == mark) {
        if (way_row[0] == tag) {
          way_row[kGroup] = static_cast<Word>(++clock);
          ++hits;
          continue;
        }
        if (way < (f & 0xff) && way_row[tag_at(way)] == tag) {
          way_row[tag_at(way) + kGroup] = static_cast<Word>(++clock);
          ++hits;
          continue;
        }
      }
      hits += lookup_at(*fill, way_row, tag, clock, way) ? 1 : 0;
    }
    lru_clock = clock;
    return hits;
  }

  // Lines first..end, in order: consecutive lines in consecutive sets, as runs up to the
  // last set (a run's lines share their quotient by the sets, so their tag). How many hit.
  uint64_t lookup_range(uint64_t first, uint64_t end, uint64_t& clock) const {
    uint64_t q = first / count, hits = 0;
    size_t set = static_cast<size_t>(first % count);
    for (uint64_t line = first; line <= end; set = 0, ++q) {
      const uint64_t run = std::min<uint64_t>(end - line + 1, count - set);
      hits += lookup_run(set, q, run, clock);
      line += run;
    }
    return hits;
  }
};

template <class Word>
MemorySystem::Sets<Word> MemorySystem::sets() const {
  return {&store_->filled(0),
          reinterpret_cast<Word*>(store_->rows),
          store_->row_bytes / sizeof(Word),
          ways_,
          sets_,
          epoch_};
}

void MemorySystem::set_lru_clock(uint64_t clock) { store_->clock = clock; }

// Looks up the lines a window touches (each row's lines once; a line shared by consecutive
// rows counts once): how many hit the L2 and how many missed. A window inside one buffer maps
// onto canonical addresses linearly, so its rows' addresses need no search; one whose rows
// leave no gap is a single run of consecutive lines in consecutive sets. Either way the lines
// are looked up in the same order, so hits, misses and the LRU state are the same.
MemorySystem::Lines MemorySystem::lookup_lines(const Access& gm) {
  uint64_t clock = store_->clock;
  const Lines n =
      narrow_ ? lookup_lines_as<uint32_t>(gm, clock) : lookup_lines_as<uint64_t>(gm, clock);
  store_->clock = clock;
  stats_.l2_hits += n.hits;
  stats_.l2_misses += n.misses;
  return n;
}

template <class Word>
MemorySystem::Lines MemorySystem::lookup_lines_as(const Access& gm, uint64_t& clock) {
  Lines n;
  const int64_t extent = (gm.rows - 1) * gm.stride + gm.row_bytes;
  const Linear at = linear(gm.base);
  if (gm.stride >= 0 && extent <= at.hi - gm.base) {
    if (gm.rows == 1 || gm.stride <= gm.row_bytes) {
      lookup_span<Word>(at.canon, extent, n, clock);
    } else {
      const auto stride = static_cast<uint64_t>(gm.stride);
      lookup_rows<Word>(
          gm, [&](int64_t r) { return at.canon + static_cast<uint64_t>(r) * stride; }, n, clock);
    }
  } else {
    lookup_rows<Word>(
        gm, [&](int64_t r) { return linear(gm.base + r * gm.stride).canon; }, n, clock);
  }
  return n;
}

// The lines of the canonical bytes [lo, lo + bytes).
template <class Word>
void MemorySystem::lookup_span(uint64_t lo, int64_t bytes, Lines& n, uint64_t& lru_clock) {
  const Sets<Word> sets = this->sets<Word>();
  const uint64_t shift = static_cast<uint64_t>(__builtin_ctzll(static_cast<uint64_t>(line_bytes_)));
  const uint64_t first = lo >> shift, end = (lo + static_cast<uint64_t>(bytes) - 1) >> shift;
  const uint64_t hits = sets.lookup_range(first, end, lru_clock);
  n.hits += hits;
  n.misses += end + 1 - first - hits;
}

// Row by row, `row_lo(r)` the canonical address of row r's first byte.
template <class Word, class Canonical>
void MemorySystem::lookup_rows(const Access& gm, Canonical row_lo, Lines& n, uint64_t& lru_clock) {
  constexpr int64_t kAhead = Sets<Word>::kAhead;
  const Sets<Word> sets = this->sets<Word>();
  uint64_t clock = lru_clock, hits = 0, looked = 0;  // in registers across the loop
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
    hits += sets.lookup_range(line, end, clock);
    looked += end + 1 - line;
    last = end;
  }
  lru_clock = clock;
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
