#include "tools/clean_lanes.hpp"

#include <cctype>
#include <utility>

#include "tools/trace_clean.hpp"

namespace pypto::tools::clean {

int lane_of(std::string_view name) {
  std::string up(name);
  for (char& c : up) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  }
  std::string_view t = up;
  if (t.substr(0, 5) == "PIPE_") t.remove_prefix(5);
  // Spellings other tools use beyond the simulator's own pipe and flag names.
  static constexpr std::pair<std::string_view, int> kAliases[] = {{"V", PYPTO_VECTOR},
                                                                  {"MMAD", PYPTO_CUBE}};
  for (const auto& [alias, lane] : kAliases) {
    if (t == alias) return lane;
  }
  for (int i = 0; i < kLaneCount; ++i) {
    if (t == kLanes[i] || t == hw::kFlagPipeNames[i]) return i;
  }
  return kNoLane;
}

bool parse_detail(std::string_view d, FlagRoute& route) {
  auto word = [&](size_t& p) {
    const size_t start = p;
    while (p < d.size() && (std::isalnum(static_cast<unsigned char>(d[p])) || d[p] == '_')) ++p;
    return d.substr(start, p - start);
  };
  for (size_t at = d.find("PIPE:"); at != std::string_view::npos; at = d.find("PIPE:", at + 1)) {
    size_t p = at + 5;
    const std::string_view src = word(p);
    if (src.empty() || d.substr(p, 13) != ",TRIGGERPIPE:") continue;
    p += 13;
    const std::string_view dst = word(p);
    if (dst.empty() || d.substr(p, 8) != ",FLAGID:") continue;
    p += 8;
    const size_t digits = p;
    while (p < d.size() && std::isdigit(static_cast<unsigned char>(d[p]))) ++p;
    if (p == digits) continue;
    route.src = lane_of(src);
    route.dst = lane_of(dst);
    if (route.src == kNoLane || route.dst == kNoLane) return false;
    std::string_view id = d.substr(digits, p - digits);
    while (id.size() > 1 && id[0] == '0') id.remove_prefix(1);  // 007 is flag 7
    route.flag = std::string(id);
    return true;
  }
  return false;
}

int compare_digits(std::string_view a, std::string_view b) {
  while (a.size() > 1 && a[0] == '0') a.remove_prefix(1);
  while (b.size() > 1 && b[0] == '0') b.remove_prefix(1);
  if (a.size() != b.size()) return a.size() < b.size() ? -1 : 1;
  return a.compare(b);
}

void not_a_trace(const std::string& what) { throw TraceFormatError("not a trace: " + what); }

}  // namespace pypto::tools::clean
