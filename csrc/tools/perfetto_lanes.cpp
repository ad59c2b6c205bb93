// See perfetto_lanes.hpp.
#include "tools/perfetto_lanes.hpp"

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <memory>
#include <new>
#include <numeric>
#include <queue>
#include <stdexcept>
#include <string_view>
#include <tuple>
#include <utility>

#include "simulator/huge_pages.hpp"
#include "tools/parallel_files.hpp"
#include "tools/perfetto_slices.hpp"

namespace pypto::tools {
namespace {

// Pipe numbers index the report's pipe names; a larger one is a corrupt record.
constexpr int64_t kMaxPipe = 1 << 16;

// Rows ahead of the scan to ask the cache for (the hardware prefetcher stops at page ends).
constexpr size_t kAhead = 24;

// Calls fn(slice, position) for the lane's slices of `pipe`, in its order.
template <class Fn>
void for_slices(const PipeSlices& pipe, const CoreLane& lane, Fn&& fn) {
  if (lane.all) {
    pipe.each(fn);
    return;
  }
  for (const int64_t at : lane.rows) fn(pipe[static_cast<size_t>(at)], static_cast<size_t>(at));
}

// The task's column positions are inside its records, its string map inside the core's.
void check_task(const CoreTask& t, const LaneColumnsAt& at, size_t strings) {
  if (t.rows && std::max({at.kind, at.pipe, at.start, at.end, at.flag_src, at.flag_dst,
                          at.flag_id}) >= t.width)
    throw std::invalid_argument("trace records: a column position is out of range");
  for (size_t i = 0; i < t.strings; ++i) {
    if (static_cast<uint64_t>(t.core_id[i]) >= strings)
      throw std::invalid_argument("a trace task's string maps outside the core's strings");
  }
}

// Per slice (by start, then end) its sub-lane: one freed by a slice that ended by then (the
// earliest-ending, the lower number on a tie), else a new one; all 0 when none overlap.
std::vector<int64_t> sub_lanes(const std::vector<int64_t>& start, const std::vector<int64_t>& end) {
  std::vector<int64_t> sub(start.size(), 0);
  bool nested = true;
  for (size_t i = 1; i < start.size() && nested; ++i) nested = start[i] >= end[i - 1];
  if (nested) return sub;
  using Busy = std::pair<int64_t, int64_t>;  // (end of its last slice, sub-lane)
  std::priority_queue<Busy, std::vector<Busy>, std::greater<>> busy;
  for (size_t i = 0; i < start.size(); ++i) {
    int64_t k = static_cast<int64_t>(busy.size());
    if (!busy.empty() && busy.top().first <= start[i]) {
      k = busy.top().second;
      busy.pop();
    }
    busy.push({end[i], k});
    sub[i] = k;
  }
  return sub;
}

// Whether a lane uses a string: an enum, not a char, so that storing one does not make the
// compiler reload every value it holds (a char store may alias anything).
enum class Used : uint8_t { kNo, kYes };

}  // namespace

void PipeSlices::Free::operator()(LaneSlice* p) const { std::free(p); }

void PipeSlices::grow() {
  void* block = std::aligned_alloc(kBlockBytes, kBlockBytes);
  if (!block) throw std::bad_alloc();
  // A hint (without it, 4 KiB pages) from the second block on: a pipe of a few slices, as
  // most of a many-core run's are, touches a few small pages, not a whole huge one.
  if (!blocks_.empty()) advise_huge_pages(block, kBlockBytes);
  blocks_.emplace_back(static_cast<LaneSlice*>(block));
  last_ = blocks_.back().get();
  fill_ = 0;
}

struct CoreLanes::PipeScan {
  size_t count = 0;
  bool ordered = true;  // by start, then end
  bool nested = true;   // no slice starts before the one before it ended
  int64_t last_start = INT64_MIN, last_end = INT64_MIN;
  std::vector<Used> names, locs;  // the core's strings its rows use
};

CoreLanes::CoreLanes(std::vector<CoreTask> tasks, const LaneColumnsAt& at, size_t strings,
                     uint64_t first_flow)
    : tasks_(std::move(tasks)), at_(at), strings_(strings) {
  for (const CoreTask& t : tasks_) check_task(t, at_, strings_);
  const std::vector<PipeScan> pipes = scan();
  pair_flags(first_flow);
  for (size_t p = 0; p < pipes.size(); ++p) {
    if (pipes[p].count) lay_out_pipe(static_cast<int64_t>(p), pipes[p]);
  }
}

// One pass over the records: checks them (a negative time or pipe, or a string id outside
// its task's table, throws), and per pipe keeps its slices and learns whether they come
// ordered and nested and the strings they use; collects the flag rows. Rows come in runs on
// one pipe (a tiny loop's are all on one): the pipe's state is held in locals for a run.
std::vector<CoreLanes::PipeScan> CoreLanes::scan() {
  std::vector<PipeScan> pipes;
  const LaneColumnsAt at = at_;  // in registers: the loop's stores cannot change them
  for (const CoreTask& task : tasks_) {
    const int64_t* row = task.table;
    const int32_t *name_id = task.name_id, *loc_id = task.loc_id;
    const int64_t* core_id = task.core_id;
    const size_t width = task.width, strings = task.strings, rows = task.rows;
    const int64_t offset = task.offset;
    for (size_t r = 0; r < rows;) {
      const int64_t pipe = row[at.pipe];
      if (pipe < 0 || ((row[at.start] + offset) | (row[at.end] + offset)) < 0)
        throw std::invalid_argument("a trace slice has a negative time or pipe");
      if (pipe > kMaxPipe)
        throw std::invalid_argument("a trace slice has a pipe or string id outside its tables");
      const auto p = static_cast<size_t>(pipe);
      if (p >= pipes.size()) pipes.resize(p + 1), pipes_.resize(p + 1);
      PipeScan& ps = pipes[p];
      PipeSlices& out = pipes_[p];
      if (ps.names.empty())
        ps.names.assign(strings_, Used::kNo), ps.locs.assign(strings_, Used::kNo);
      Used *names = ps.names.data(), *locs = ps.locs.data();
      int64_t last_start = ps.last_start, last_end = ps.last_end;
      bool ordered = ps.ordered, nested = ps.nested;
      const size_t first = ps.count;
      size_t count = first, free = 0, used = 0;
      LaneSlice* to = out.room(free);
      do {                                         // the run of rows on this pipe
        __builtin_prefetch(row + kAhead * width);  // past the end: a hint, never a fault
        const int64_t s = row[at.start] + offset, e = row[at.end] + offset;
        if ((s | e) < 0) throw std::invalid_argument("a trace slice has a negative time or pipe");
        const auto n = static_cast<uint32_t>(name_id[r]), l = static_cast<uint32_t>(loc_id[r]);
        if (n >= strings || l >= strings)
          throw std::invalid_argument("a trace slice has a pipe or string id outside its tables");
        ordered &= s > last_start || (s == last_start && e >= last_end);
        nested &= s >= last_end;
        last_start = s, last_end = e;
        const auto name = static_cast<uint32_t>(core_id[n]);
        const auto loc = static_cast<uint32_t>(core_id[l]);
        names[name] = Used::kYes;
        locs[loc] = Used::kYes;
        const int64_t kind = row[at.kind], flag = row[at.flag_id];
        if ((kind == 1 || kind == 2) && flag >= 0)
          sync_.push_back({row[at.flag_src], row[at.flag_dst], flag, s, kind == 2, p, count});
        ++count;
        if (free == 0) out.added(used), to = out.room(free), used = 0;
        *to++ = {static_cast<uint64_t>(s), static_cast<uint64_t>(e), name, loc};
        --free, ++used;
        ++r, row += width;
      } while (r < rows && row[at.pipe] == pipe);
      out.added(used);
      ps.last_start = last_start, ps.last_end = last_end;
      ps.ordered = ordered, ps.nested = nested;
      ps.count = count;
    }
  }
  return pipes;
}

void CoreLanes::pair_flags(uint64_t first_flow) {
  std::vector<Sync>& sync = sync_;
  if (sync.empty()) return;
  const auto key = [](const Sync& s) { return std::tie(s.src, s.dst, s.id, s.start, s.wait); };
  std::stable_sort(sync.begin(), sync.end(),
                   [&](const Sync& a, const Sync& b) { return key(a) < key(b); });
  flow_out_.resize(pipes_.size());
  flow_in_.resize(pipes_.size());
  for (size_t p = 0; p < pipes_.size(); ++p) {
    flow_out_[p].assign(pipes_[p].size(), 0);
    flow_in_[p].assign(pipes_[p].size(), 0);
  }
  std::vector<const Sync*> sets;  // the current flag's sets, in time order
  size_t claimed = 0;
  for (size_t i = 0; i < sync.size(); ++i) {
    const Sync& s = sync[i];
    if (i == 0 || std::tie(s.src, s.dst, s.id) !=
                      std::tie(sync[i - 1].src, sync[i - 1].dst, sync[i - 1].id)) {
      sets.clear();
      claimed = 0;
    }
    if (!s.wait) {
      sets.push_back(&s);
    } else if (claimed < sets.size()) {
      const uint64_t flow = first_flow + 1 + flows_++;
      const Sync& set = *sets[claimed++];
      flow_out_[set.pipe][set.at] = flow;
      flow_in_[s.pipe][s.at] = flow;
    }
  }
  sync = {};
}

void CoreLanes::lay_out_pipe(int64_t pipe, const PipeScan& scan) {
  const PipeSlices& slices = pipes_[static_cast<size_t>(pipe)];
  CoreLane every;
  every.all = true;  // the pipe's slices in order
  every.pipe = pipe;
  if (scan.ordered && scan.nested) {  // one lane, in row order, its strings known
    for (size_t s = 0; s < strings_; ++s) {
      if (scan.names[s] == Used::kYes) every.names.push_back(static_cast<int64_t>(s));
      if (scan.locs[s] == Used::kYes) every.locs.push_back(static_cast<int64_t>(s));
    }
    lanes_.push_back(std::move(every));
    return;
  }
  const size_t n = slices.size();
  std::vector<int64_t> start(n), end(n);
  slices.each([&](const LaneSlice& v, size_t i) {
    start[i] = static_cast<int64_t>(v.start);
    end[i] = static_cast<int64_t>(v.end);
  });
  if (!scan.ordered) {  // a stable sort by start, then end
    std::vector<size_t> order(n);
    std::iota(order.begin(), order.end(), size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return std::tie(start[a], end[a]) < std::tie(start[b], end[b]);
    });
    std::vector<int64_t> rows(n), s(n), e(n);
    for (size_t i = 0; i < n; ++i) {
      rows[i] = static_cast<int64_t>(order[i]);
      s[i] = start[order[i]];
      e[i] = end[order[i]];
    }
    every.rows = std::move(rows), start = std::move(s), end = std::move(e);
    every.all = false;
  }
  const std::vector<int64_t> sub = sub_lanes(start, end);
  const int64_t deepest = n ? *std::max_element(sub.begin(), sub.end()) : 0;
  std::vector<CoreLane> lanes(static_cast<size_t>(deepest) + 1);
  if (deepest == 0) {
    lanes[0] = std::move(every);
  } else {
    for (size_t i = 0; i < n; ++i) {
      const int64_t row = every.all ? static_cast<int64_t>(i) : every.rows[i];
      lanes[static_cast<size_t>(sub[i])].rows.push_back(row);
    }
  }
  for (size_t k = 0; k < lanes.size(); ++k) {
    CoreLane& lane = lanes[k];
    if (!lane.all && lane.rows.empty()) continue;  // a sub-lane number left unused
    lane.pipe = pipe;
    lane.sub = static_cast<int64_t>(k);
    intern(lane);
    lanes_.push_back(std::move(lane));
  }
}

void CoreLanes::intern(CoreLane& lane) const {
  std::vector<Used> names(strings_, Used::kNo), locs(strings_, Used::kNo);
  for_slices(pipes_[static_cast<size_t>(lane.pipe)], lane, [&](const LaneSlice& v, size_t) {
    names[v.name] = Used::kYes;
    locs[v.loc] = Used::kYes;
  });
  for (size_t s = 0; s < strings_; ++s) {
    if (names[s] == Used::kYes) lane.names.push_back(static_cast<int64_t>(s));
    if (locs[s] == Used::kYes) lane.locs.push_back(static_cast<int64_t>(s));
  }
}

size_t CoreLanes::write_lane(size_t index, uint64_t seq, int fd, const std::string& path) const {
  const CoreLane& lane = lanes_.at(index);
  const auto pipe = static_cast<size_t>(lane.pipe);
  std::vector<uint64_t> name_iid(strings_, 0), loc_iid(strings_, 0);
  for (size_t i = 0; i < lane.names.size(); ++i) name_iid[lane.names[i]] = i + 1;
  for (size_t i = 0; i < lane.locs.size(); ++i) loc_iid[lane.locs[i]] = i + 1;
  // A chunk of kChunk slices is written while the pages it used are still warm.
  constexpr size_t kChunk = 4096;
  const std::unique_ptr<uint8_t[]> buffer(new uint8_t[kChunk * kMaxSliceBytes]);  // not zeroed
  size_t written = 0;
  const auto flush = [&](const uint8_t* end) {
    const auto bytes = static_cast<size_t>(end - buffer.get());
    write_all(fd, std::string_view(reinterpret_cast<const char*>(buffer.get()), bytes), path);
    written += bytes;
  };
  // What the slice loop reads, as locals whose address is never taken: the encoder's byte
  // stores may alias any memory, so values reached through a reference would be reloaded.
  const uint64_t *names = name_iid.data(), *locs = loc_iid.data();
  const uint64_t* flow_out = flow_out_.empty() ? nullptr : flow_out_[pipe].data();
  const uint64_t* flow_in = flow_in_.empty() ? nullptr : flow_in_[pipe].data();
  uint8_t* const first = buffer.get();
  uint8_t* at = first;
  size_t count = 0;
  for_slices(
      pipes_[pipe], lane, [&](const LaneSlice& s, size_t i) __attribute__((always_inline)) {
        const SliceValues v{s.start,
                            s.end,
                            names[s.name],
                            locs[s.loc],
                            flow_out ? flow_out[i] : 0,
                            flow_in ? flow_in[i] : 0};
        at = encode_slice(v, seq, at);
        if (++count == kChunk) flush(at), at = first, count = 0;
      });
  if (count) flush(at);
  return written;
}

}  // namespace pypto::tools
