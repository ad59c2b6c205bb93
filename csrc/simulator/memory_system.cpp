#include "simulator/memory_system.hpp"

#include <algorithm>
#include <cstdlib>
#include <new>

#include "simulator/hardware.hpp"

namespace pypto {
namespace {

struct Freed {
  void operator()(uint64_t* p) const { std::free(p); }
};
using Array = std::unique_ptr<uint64_t[], Freed>;

// calloc'd: only the pages a run touches are ever backed.
Array zeroed(size_t n) {
  void* p = std::calloc(n, sizeof(uint64_t));
  if (p == nullptr) throw std::bad_alloc();
  return Array(static_cast<uint64_t*>(p));
}

}  // namespace

// One block of words per set, so a lookup touches one or two cache lines: word 0 is
// (run << 8) | ways filled in that run, then (tag, LRU stamp) per way. A run fills a set's
// ways in order, so a lookup scans only the ways this run filled, and a miss with a free way
// takes it without an LRU search (a streaming kernel never searches).
struct MemorySystem::Store {
  size_t sets = 0, ways = 0;
  Array words;
  uint64_t clock = 0;  // LRU stamps; grows across runs
  uint64_t* set(size_t s) { return words.get() + s * (1 + 2 * ways); }
};

MemorySystem::MemorySystem(const Platform& p)
    : platform_(p), line_bytes_(std::max<int64_t>(p.l2_line_bytes, 1)) {
  ways_ = static_cast<size_t>(std::max(p.l2_ways, 1));
  sets_ = std::max<size_t>(static_cast<size_t>(p.l2_bytes / line_bytes_) / ways_, 1);
  ways_ = std::min<size_t>(ways_, hw::kMaxL2Ways);  // overrides beyond are refused earlier
  thread_local Store store;
  if (store.ways != ways_ || store.sets != sets_) {
    store.sets = sets_;
    store.ways = ways_;
    store.words = zeroed(sets_ * (1 + 2 * ways_));
  }
  store_ = &store;
  epoch_ = ++store.clock;  // a new run id: sets filled by earlier runs read as empty
}

void MemorySystem::add_buffer(const void* base, int64_t bytes) {
  const auto lo = static_cast<int64_t>(reinterpret_cast<intptr_t>(base));
  buffers_.push_back({lo, lo + bytes, static_cast<uint64_t>(buffers_.size() + 1)});
}

uint64_t MemorySystem::canonical(int64_t host) const {
  for (const Buffer& b : buffers_) {
    if (host >= b.lo && host < b.hi) return (b.tag << 40) + static_cast<uint64_t>(host - b.lo);
  }
  return static_cast<uint64_t>(host);  // an unregistered buffer: tagged by its address
}

bool MemorySystem::lookup(size_t set, uint64_t line) {
  const uint64_t tag = line + 1;
  uint64_t* block = store_->set(set);
  uint64_t& filled = block[0];
  uint64_t* way = block + 1;  // way w: tag at way[2w], stamp at way[2w + 1]
  const size_t valid = (filled >> 8) == epoch_ ? static_cast<size_t>(filled & 0xff) : 0;
  for (size_t w = 0; w < valid; ++w) {
    if (way[2 * w] == tag) {
      way[2 * w + 1] = ++store_->clock;
      return true;
    }
  }
  size_t victim = valid;
  if (valid < ways_) {
    filled = (epoch_ << 8) | (valid + 1);
  } else {  // full: the least recently used way
    victim = 0;
    for (size_t w = 1; w < ways_; ++w) {
      if (way[2 * w + 1] < way[2 * victim + 1]) victim = w;
    }
  }
  way[2 * victim] = tag;
  way[2 * victim + 1] = ++store_->clock;
  return false;
}

// The share of the lines a window touches that the L2 already holds (each row's lines are
// looked up once; a line shared by consecutive rows counts once).
double MemorySystem::hit_fraction(const Access& gm) {
  uint64_t hits = 0, total = 0, last = UINT64_MAX;
  const uint64_t shift = static_cast<uint64_t>(__builtin_ctzll(static_cast<uint64_t>(line_bytes_)));
  for (int64_t r = 0; r < gm.rows; ++r) {
    const uint64_t lo = canonical(gm.base + r * gm.stride);
    const uint64_t first = lo >> shift,
                   end = (lo + static_cast<uint64_t>(gm.row_bytes) - 1) >> shift;
    uint64_t line = std::max(first, last == UINT64_MAX ? first : last + 1);
    size_t set = static_cast<size_t>(line % sets_);  // consecutive lines, consecutive sets
    for (; line <= end; ++line) {
      hits += lookup(set, line) ? 1 : 0;
      ++total;
      last = line;
      set = set + 1 == sets_ ? 0 : set + 1;
    }
  }
  stats_.l2_hits += hits;
  stats_.l2_misses += total - hits;
  return total ? static_cast<double>(hits) / static_cast<double>(total) : 0.0;
}

std::pair<double, double>* MemorySystem::claims(uint64_t bucket) {
  if (bucket < window_base_) return nullptr;
  if (bucket - window_base_ >= kWindowBuckets) {  // slide: forget the oldest half
    const uint64_t base = bucket - kWindowBuckets / 2;
    const uint64_t drop = std::min<uint64_t>(base - window_base_, used_.size());
    used_.erase(used_.begin(), used_.begin() + static_cast<std::ptrdiff_t>(drop));
    window_base_ = base;
  }
  const auto i = static_cast<size_t>(bucket - window_base_);
  if (i >= used_.size())
    used_.resize(std::min(std::max(i + 1, used_.size() * 2), kWindowBuckets), {0.0, 0.0});
  return &used_[i];
}

double MemorySystem::transfer(double start, double lead_miss, double lead_hit, double port_bw,
                              const Access& gm) {
  const double bytes = static_cast<double>(gm.rows * gm.row_bytes);
  if (bytes <= 0 || port_bw <= 0) return lead_miss;
  const double hit = hit_fraction(gm), miss = 1.0 - hit;
  const double lead = hit >= 1.0 ? lead_hit : lead_miss, t0 = start + lead;
  stats_.hbm_bytes += bytes * miss;
  stats_.l2_bytes += bytes * hit;
  const double hbm_cap = platform_.hbm_bytes_per_cycle * kBucketCycles;
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
    std::pair<double, double>* c = claims(b);
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
