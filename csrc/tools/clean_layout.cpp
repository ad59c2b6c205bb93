#include "tools/clean_layout.hpp"

#include <algorithm>
#include <cctype>
#include <limits>

namespace pypto::tools::clean {

void pack(Lane& lane, const std::vector<Slice>& slices, int64_t base) {
  auto by_start = [&](uint32_t a, uint32_t b) { return slices[a].ts < slices[b].ts; };
  // A simulator writes a pipe's slices in start order: checking is one pass, sorting many.
  if (!std::is_sorted(lane.order.begin(), lane.order.end(), by_start))
    std::stable_sort(lane.order.begin(), lane.order.end(), by_start);
  std::vector<double> lane_end{-std::numeric_limits<double>::infinity()};
  const size_t n = lane.order.size();
  reserve_huge(lane.tids, n), lane.tids.resize(n);
  reserve_huge(lane.starts, n), lane.starts.resize(n);
  reserve_huge(lane.mids, n), lane.mids.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const Slice& s = slices[lane.order[i]];
    const double end = s.ts + s.dur;
    size_t k = 0;
    if (lane_end[0] > s.ts + kEps) {  // the main lane is busy: the first free other one
      k = 1;
      while (k < lane_end.size() && lane_end[k] > s.ts + kEps) ++k;
      if (k == lane_end.size()) lane_end.push_back(end);
    }
    lane_end[k] = end;
    lane.tids[i] = base + static_cast<int64_t>(k);
    lane.starts[i] = s.ts;
    lane.mids[i] = s.ts + s.dur / 2;
  }
  lane.sub_lanes = static_cast<int>(lane_end.size());
}

CoreOrder::CoreOrder(std::string label) : name(std::move(label)) {
  const std::string_view s = name;
  auto digits = [&](size_t& p) {
    const size_t start = p;
    while (p < s.size() && std::isdigit(static_cast<unsigned char>(s[p]))) ++p;
    return s.substr(start, p - start);
  };
  for (size_t at = s.find("core"); at != std::string_view::npos; at = s.find("core", at + 1)) {
    size_t p = at + 4;
    const std::string_view c = digits(p);
    if (c.empty() || p >= s.size() || s[p] != '.') continue;
    ++p;
    const bool is_vec = s.substr(p, 3) == "vec";
    if (!is_vec && s.substr(p, 4) != "cube") continue;
    p += is_vec ? 3 : 4;
    if (s.substr(p, 4) != "core") continue;
    p += 4;
    const std::string_view n = digits(p);
    if (n.empty()) continue;
    other = false, cluster = std::string(c), vec = is_vec, index = std::string(n);
    return;
  }
}

bool CoreOrder::operator<(const CoreOrder& o) const {
  if (other != o.other) return !other;
  if (!other) {
    if (int c = compare_digits(cluster, o.cluster)) return c < 0;
    if (vec != o.vec) return !vec;
    if (int c = compare_digits(index, o.index)) return c < 0;
  }
  return name < o.name;
}

}  // namespace pypto::tools::clean
