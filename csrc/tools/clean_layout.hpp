// clean_sim_trace's layout (internal to csrc/tools): the order of processes and how one
// pipe's slices are packed onto disjoint sub-lanes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tools/clean_collect.hpp"

namespace pypto::tools::clean {

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
