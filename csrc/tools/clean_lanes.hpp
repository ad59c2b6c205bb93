// clean_sim_trace's pipes (internal to csrc/tools): the lanes it keeps, in dataflow order,
// how raw names map onto them, and what a flag's args.detail names.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "simulator/hardware.hpp"

namespace pypto::tools::clean {

// One lane per simulator pipe, named and ordered as the report names them.
constexpr int kLaneCount = PYPTO_NUM_PIPES;
constexpr int kScalar = PYPTO_SCALAR;
constexpr int kNoLane = -1;
template <size_t... I>
constexpr std::array<std::string_view, sizeof...(I)> pipe_lanes(std::index_sequence<I...>) {
  return {hw::kPipeNames[I]...};
}
constexpr auto kLanes = pipe_lanes(std::make_index_sequence<kLaneCount>{});
constexpr std::array<std::string_view, kLaneCount> kLabels = {
    "load (GM\u2192on-chip)", "L1\u2192L0", "matmul", "compute", "L0C out",
    "store (UB\u2192GM)",     "scalar"};
constexpr std::array<std::string_view, kLaneCount> kColors = {
    "thread_state_iowait", "olive", "rail_animation", "good", "yellow", "rail_load", "grey"};
constexpr double kEps = 1e-6;  // microseconds: far below one cycle, above float noise in ts + dur

// The lane a raw tid, thread name or detail pipe names ("VEC", "pipe_vector"), or kNoLane.
int lane_of(std::string_view name);

// What a flag's args.detail names: producer lane, consumer lane, flag id (digits, no
// leading zeros).
struct FlagRoute {
  int src, dst;
  std::string flag;
};

// `PIPE:<a>,TRIGGERPIPE:<b>,FLAGID:<n>` anywhere in the text (the leftmost match); false
// when there is none or a pipe is not a lane.
bool parse_detail(std::string_view detail, FlagRoute& route);

// Numbers compared as decimal digit strings (any length): <0, 0 or >0.
int compare_digits(std::string_view a, std::string_view b);

// Two 32-bit ids as one hash key.
inline uint64_t pair_key(uint32_t a, uint32_t b) { return (static_cast<uint64_t>(a) << 32) | b; }

// Throws TraceFormatError("not a trace: <what>").
[[noreturn]] void not_a_trace(const std::string& what);

}  // namespace pypto::tools::clean
