// One core's lanes of the whole-run Perfetto trace (pypto/report/perfetto.py writes the
// tracks and interned strings around them): its records split by pipe, each pipe's slices
// ordered by start and spread over as few sub-lanes as nest properly, the strings each lane
// uses, and the flag arrows from each set_flag to the wait_flag it released. Built in one
// pass over the core's tasks' records tables — a million-instruction core otherwise costs a
// few dozen numpy passes — which also keeps what the encoder needs of each row (its times and
// strings, 24 bytes where a records row is 88) per pipe, so the lanes' slices are encoded from
// that and the wide tables are read once.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "simulator/huge_pages.hpp"

namespace pypto::tools {

// Where the columns the lanes read sit in a records row (RECORD_COLUMNS positions).
struct LaneColumnsAt {
  size_t kind = 0, pipe = 0, start = 0, end = 0, flag_src = 0, flag_dst = 0, flag_id = 0;
};

// One task of the core: its records table (one row of `width` values per record, as the
// runtime returns it; the few columns read here come with each row's cache line), in the
// order the core ran them.
struct CoreTask {
  const int64_t* table = nullptr;
  size_t rows = 0, width = 0;
  int64_t offset = 0;                // the task's start in run cycles (its records count from it)
  const int32_t* name_id = nullptr;  // per record: the task's string ids
  const int32_t* loc_id = nullptr;
  const int64_t* core_id = nullptr;  // task string id -> the core's string id
  size_t strings = 0;                // entries of core_id
};

// What the encoder needs of a record: its times in run cycles and its name and source line
// as the core's string ids.
struct LaneSlice {
  uint64_t start, end;
  uint32_t name, loc;
};

// One pipe's slices in row order, in blocks of 2 MiB (appended without moving what is there;
// each block after the first asks for huge pages, so filling it faults once rather than 512
// times).
class PipeSlices {
 public:
  static constexpr size_t kBlockBytes = kHugePage, kBlock = kBlockBytes / sizeof(LaneSlice);
  // Room for the next slices: where they go and how many fit before the block is full (at
  // least one); `added(n)` then counts the first n as stored.
  LaneSlice* room(size_t& free) {
    if (fill_ == kBlock) grow();
    free = kBlock - fill_;
    return last_ + fill_;
  }
  void added(size_t n) { fill_ += n; }
  size_t size() const { return blocks_.empty() ? 0 : (blocks_.size() - 1) * kBlock + fill_; }
  const LaneSlice& operator[](size_t i) const { return blocks_[i / kBlock].get()[i % kBlock]; }
  // Calls fn(slice, i) for every slice in order.
  template <class Fn>
  void each(Fn&& fn) const {
    for (size_t b = 0, i = 0; b < blocks_.size(); ++b) {
      const LaneSlice* block = blocks_[b].get();
      const size_t n = b + 1 < blocks_.size() ? kBlock : fill_;
      for (size_t k = 0; k < n; ++k, ++i) fn(block[k], i);
    }
  }

 private:
  struct Free {
    void operator()(LaneSlice* p) const;
  };
  void grow();
  std::vector<std::unique_ptr<LaneSlice, Free>> blocks_;
  LaneSlice* last_ = nullptr;
  size_t fill_ = kBlock;  // slices in the last block
};

// A lane: the slices of one pipe's sub-lane, in slice order.
struct CoreLane {
  int64_t pipe = 0, sub = 0;
  bool all = false;            // every slice of the pipe in order (then `rows` is empty)
  std::vector<int64_t> rows;   // positions in the pipe's slices
  std::vector<int64_t> names;  // the core's string ids the lane's names use, ascending
  std::vector<int64_t> locs;   // likewise for its source lines
};

class CoreLanes {
 public:
  // Checks the records (a negative time or pipe, or a string id outside its task's table,
  // throws std::invalid_argument) and lays out the lanes: pipes in number order, sub-lanes
  // in order. Flag arrows are numbered on from `first_flow` + 1, by flag (source pipe,
  // destination pipe, id), then by the wait's time: each wait takes the earliest set of its
  // flag still unclaimed by its start (a set before a wait of the same cycle); a wait with
  // none gets no arrow.
  CoreLanes(std::vector<CoreTask> tasks, const LaneColumnsAt& at, size_t strings,
            uint64_t first_flow);

  const std::vector<CoreLane>& lanes() const { return lanes_; }
  size_t flows() const { return flows_; }

  // The lane's slices (see perfetto_slices.hpp: a begin and an end packet each, names and
  // source lines by the lane's interned ids 1, 2, ... in the order of `names` / `locs`),
  // written to `fd` a chunk at a time; returns the bytes written.
  size_t write_lane(size_t lane, uint64_t seq, int fd, const std::string& path) const;

 private:
  struct PipeScan;  // what the pass over the records learns about one pipe
  std::vector<PipeScan> scan();
  void pair_flags(uint64_t first_flow);
  void lay_out_pipe(int64_t pipe, const PipeScan& scan);
  void intern(CoreLane& lane) const;

  std::vector<CoreTask> tasks_;
  LaneColumnsAt at_;
  size_t strings_ = 0, flows_ = 0;
  std::vector<PipeSlices> pipes_;  // by pipe number
  struct Sync {                    // a set_flag or wait_flag row
    int64_t src, dst, id, start;
    bool wait;
    size_t pipe, at;  // its pipe and position in the pipe's slices
  };
  std::vector<Sync> sync_;  // in row order
  // Per pipe, per slice: the arrow it starts and the one it ends; empty without arrows.
  std::vector<std::vector<uint64_t>> flow_out_, flow_in_;
  std::vector<CoreLane> lanes_;
};

}  // namespace pypto::tools
