// clean_sim_trace's first pass (internal to csrc/tools): one walk over traceEvents keeps the
// instruction slices (where their text is, when they run), the metadata names, the sync
// flags' set and wait times and the tile-pipe flow ends.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tools/clean_lanes.hpp"
#include "tools/clean_values.hpp"

namespace pypto::tools::clean {

// The fields of one raw event the rules read (of a repeated key the last counts, as in most
// JSON readers).
struct Event {
  Value name, ph, pid, tid, ts, dur, args, cname, cat, id;
  int pids = 0, tids = 0, cnames = 0;  // how often each replaced key occurs
  bool compact = false;                // the text holds no whitespace between tokens
  size_t index = 0;                    // position in traceEvents
};

// Reads the object at the reader's position into `e`.
void read_event(json::Reader& r, Event& e);

enum class Problem : uint8_t { kNone, kNoTs, kBadTs, kBadDur };

// Where a member value sits in its slice's text, to be replaced on the way out.
struct Span {
  uint32_t at = 0, end = 0;
};

// One X slice: where its text is and when it runs.
struct Slice {
  uint32_t thread;
  Problem problem;
  double ts, dur;
  size_t begin, end;  // its object's bytes in the payload
  // Set when the text is compact and holds pid and tid once, cname at most once: then the
  // output is the text with those three values replaced.
  bool copy;
  Span pid, tid, cname;
  int32_t source = -1;    // the source line rule 7 adds to its args (SourceTable), or none
  uint32_t args_end = 0;  // then: the offset in its text of its args' closing brace
};

// The source lines rule 7 adds, by pc_addr: each one as its args member's JSON text.
struct SourceTable {
  std::unordered_map<std::string, int32_t> by_pc;
  std::vector<std::string> members;  // `"source_line":"<line>"`
};

// The set times (starts) and wait times (ends) of one (pid, route).
struct FlagTimes {
  uint32_t pid, route;
  std::vector<double> sets, waits;
};

// One end of a tile-pipe arrow (pypto's "tpipe" flow events: a push on one core's lane to
// the pop on another's), re-anchored on the cleaned lanes like the flag arrows.
struct PipeEnd {
  uint32_t pid;
  int lane;
  double ts;
  std::string id;
  bool start;
};

// Everything one pass over traceEvents keeps.
class Collector {
 public:
  explicit Collector(const char* payload, const SourceTable* sources = nullptr)
      : payload_(payload), sources_(sources) {}
  // The event whose object text is payload[begin, end).
  void add(const Event& e, size_t begin, size_t end);

  ValueIds ids;
  std::vector<std::pair<uint32_t, uint32_t>> threads;  // (pid id, tid id)
  std::vector<Slice> slices;                           // event order
  std::vector<FlagTimes> flags;
  std::vector<FlagRoute> routes;
  std::vector<PipeEnd> pipe_ends;
  std::unordered_map<uint32_t, std::string> process_names;
  std::unordered_map<uint64_t, std::string> thread_names;

 private:
  struct OpenFlag {  // a flag's B event, waiting for its E
    Value ts, args;
  };

  uint32_t key_id(const Value& v, const Event& e, const char* what);
  uint32_t thread(uint32_t pid, uint32_t tid);
  void slice(const Event& e, size_t begin, size_t end);
  void metadata(const Event& e);
  void flag(const Event& e, bool is_set);
  void pipe_end(const Event& e);
  double flag_time(const Value& v, const Event& e, const char* what);
  int route_of(const Value& args);
  int32_t source_of(const Value& args);

  const char* payload_;
  const SourceTable* sources_;
  std::unordered_map<std::string_view, int32_t> sources_by_args_;  // args text -> source
  std::unordered_map<uint64_t, uint32_t> thread_ids_;
  std::unordered_map<uint64_t, std::vector<OpenFlag>> open_;
  std::unordered_map<std::string_view, int> routes_by_args_;  // args text -> route or -1
  std::unordered_map<std::string, int> route_ids_;
  std::unordered_map<uint64_t, uint32_t> flag_slots_;
};

}  // namespace pypto::tools::clean
