// The chip's memory system: every GM access of every core goes through one object.
//
// Contract. A transfer's data phase runs at its core's port bandwidth (the per-route figures
// of the platform table) unless shared resources are saturated: bytes that miss the L2 draw
// on one HBM bandwidth, bytes that hit draw on one L2 bandwidth, both shared by all cores.
// Time is cut into buckets of kBucketCycles; a transfer takes, bucket by bucket, what its port
// can move and what the shared budgets still hold, so a core alone (whose port is narrower
// than HBM) always gets exactly bytes / port bandwidth. Budgets are claimed in the order the
// chip scheduler presents transfers, which is simulated-time order.
//
// The L2 is set-associative with LRU replacement over lines of l2_line_bytes; a missed line
// is filled whole, so it draws l2_line_bytes of HBM however little of it a transfer asked
// for (a neighbour's later access to the rest of the line hits). Lines are
// tagged by (buffer, offset), never by host address, so timing does not depend on where the
// host allocator put an array: the registered buffers lie one after another in a device
// address space, each starting on a line, in registration order — as a device allocator
// hands out one workspace after another — and a line's set follows from that address.
// A line being filled counts as present (the miss is merged).
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "simulator/hazard.hpp"
#include "simulator/platform/platform.hpp"

namespace pypto {

struct MemoryStats {
  uint64_t l2_hits = 0, l2_misses = 0;  // line lookups
  double hbm_bytes = 0, l2_bytes = 0;   // HBM: whole lines filled; L2: bytes served by hits
  uint64_t stalled_transfers = 0;       // transfers slowed by a shared budget
};

class MemorySystem {
 public:
  static constexpr double kBucketCycles = 64;
  // Claims are kept for a sliding window of buckets (64 M cycles): memory stays bounded on
  // long runs; a transfer older than the window is taken as uncontended. A transfer walks at
  // most kMaxSteps buckets and finishes the rest at its port rate (absurd what-if bandwidths).
  static constexpr size_t kWindowBuckets = size_t{1} << 20;
  static constexpr size_t kMaxSteps = size_t{1} << 16;

  explicit MemorySystem(const Platform& p);
  ~MemorySystem();  // hands its lists' storage to the thread's next run (when made on this thread)
  // Ready for another run on the calling thread, as if just made: no buffers, no claims, no
  // lines (a new run id), zero stats. A system kept between runs (a pooled chip scheduler's)
  // keeps its lists' storage.
  void restart();
  MemorySystem(const MemorySystem&) = delete;
  MemorySystem& operator=(const MemorySystem&) = delete;

  // Registers a GM buffer: its lines get device addresses after the last registration's.
  void add_buffer(const void* base, int64_t bytes);
  // Cycles from a transfer's start (absolute cycle `start`) to its last data beat: the lead
  // (`lead_hit` when every line hits, else `lead_miss`) and the data phase at `port_bw` B/cycle.
  double transfer(double start, double lead_miss, double lead_hit, double port_bw,
                  const Access& gm);

  const MemoryStats& stats() const { return stats_; }

 private:
  // A registration: host bytes [lo, hi), its order `tag`, the device address of `lo`.
  struct Buffer {
    int64_t lo, hi;
    uint64_t tag, dev;
  };
  // A run of addresses that resolve to one registration: [lo, hi) of the buffer starting at
  // host address `base` (device address `dev`) with `tag`.
  struct Segment {
    int64_t lo, hi, base;
    uint64_t tag, dev;
  };
  // The canonical address of `host`, and the first host address past the run of addresses
  // that map onto canonical ones linearly with it: the end of its buffer or segment, or for an
  // unregistered address the next registration's start.
  struct Linear {
    uint64_t canon;
    int64_t hi;
  };
  Linear linear(int64_t host) const;
  void settle();
  void resolve_overlaps();
  struct Lines {
    uint64_t hits = 0, misses = 0;
  };
  Lines lookup_lines(const Access& gm);
  template <class Sets>
  void lookup_span(uint64_t lo, int64_t bytes, Lines& n);
  template <class Sets, class Canonical>
  void lookup_rows(const Access& gm, Canonical row_lo, Lines& n);
  template <class Sets>
  Lines lookup_lines_as(const Access& gm);
  // The tag store's sets, for the lookups of one transfer: an L2 of at most 16 ways keeps a
  // set in one cache line (PackedSets), a wider one in plain arrays (WideSets).
  struct PackedSet;
  struct PackedSets;
  struct WideSets;
  template <class Sets>
  Sets sets() const;
  // Bytes claimed from HBM and the L2 in `bucket`, or null when it fell out of the window.
  std::pair<double, double>* claims(uint64_t bucket);

  const Platform& platform_;
  std::vector<Buffer> buffers_;  // sorted by lo once settled
  uint64_t registered_ = 0;
  // Where the registrations' device addresses start: above every user-space host address,
  // so an unregistered access (tagged by its host address) never shares a line.
  static constexpr uint64_t kFirstDevice = uint64_t{1} << 48;
  uint64_t next_dev_ = kFirstDevice;  // where the next registration's start
  bool overlap_ = false;              // some buffers overlap (then lookups search segments_)
  bool unsettled_ = false;            // buffers added since they were last sorted and cut
  std::vector<Segment> segments_;     // with overlaps: disjoint, sorted, each the earliest buffer
  mutable size_t last_ = 0;           // the buffer (or segment) found last
  int64_t line_bytes_;
  size_t sets_, ways_;
  // The tag store (per set: a fill count, tags and the LRU order) is kept per thread and
  // reused by the next run: no 192 MiB-L2-sized allocation per launch. A set's fill count is
  // valid only if stamped with this run (epoch_), so runs never see each other's lines.
  struct Store;
  Store* store_;
  uint64_t epoch_ = 0;
  uint64_t window_base_ = 0;  // the window's first bucket: claims before it are forgotten
  // (HBM, L2) bytes claimed per bucket, held from bucket held_ (>= window_base_) on: the
  // window's buckets before the first one a run claims are zero, and are not stored, so a
  // short run late in simulated time (a kernel started after the dispatch overhead) does not
  // fill thousands of empty buckets.
  uint64_t held_ = 0;
  std::vector<std::pair<double, double>> used_;
  MemoryStats stats_;
};

}  // namespace pypto
