// clean_sim_trace's layout (internal to csrc/tools): the order of processes and how one
// pipe's slices are packed onto disjoint sub-lanes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "simulator/huge_pages.hpp"
#include "tools/clean_collect.hpp"

namespace pypto::tools::clean {

// v.reserve(n), the room on transparent huge pages when it is large: the tens of megabytes a
// trace of millions of events fills take a fault per 2 MiB rather than per 4 KiB (the buffer
// is malloc's own mapping; the advice covers its whole pages).
template <class T>
void reserve_huge(std::vector<T>& v, size_t n) {
  v.reserve(n);
  const auto at = reinterpret_cast<uintptr_t>(v.data());
  const uintptr_t mask = kBasePage - 1;  // the advice covers whole pages
  const uintptr_t first = (at + mask) & ~mask;
  const uintptr_t end = (at + v.capacity() * sizeof(T)) & ~mask;
  if (end > first + 2 * kHugePage)
    advise_huge_pages(reinterpret_cast<void*>(first), static_cast<size_t>(end - first));
}

// One kept pipe of one core after packing, slices by start.
struct Lane {
  int lane = 0;
  int64_t out_pid = 0;
  int sub_lanes = 1;
  std::vector<uint32_t> order;  // slice indices
  std::vector<int64_t> tids;
  std::vector<double> starts, mids;
};

// Sorts a lane's slices by start (stable) and puts each on the first sub-lane free by then:
// tid `base` is the main lane, base + k its k-th sub-lane.
void pack(Lane& lane, const std::vector<Slice>& slices, int64_t base);

// Where a process sorts: `core<c>.(cube|vec)core<n>` in cluster order, the cube core first;
// names without that pattern after, by name.
struct CoreOrder {
  bool other = true;
  std::string cluster, index;
  bool vec = false;
  std::string name;

  explicit CoreOrder(std::string label);
  bool operator<(const CoreOrder& o) const;
};

}  // namespace pypto::tools::clean
