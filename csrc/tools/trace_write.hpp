// Writing a recorded launch as the op simulator's raw trace files (trace.json, and the TRACE
// and API_INSTR blocks of visualize_data.bin) at native speed.
//
// Input is the records table the runtime bindings already hand to Python (one int64 row per
// instruction plus interned name/location strings), not the core model's own structs, so the
// writer does not change when the core model does. Column positions come from the caller.
//
// Time unit: one simulated cycle is one nanosecond of trace time. Chrome-trace timestamps are
// microseconds, so a cycle count c is written as the decimal c / 1000, or, where that decimal
// reads back as a double a hair below it, as the next double up: viewers that turn ts * 1000
// into integer nanoseconds, truncating (Perfetto) or rounding, get every cycle boundary
// exactly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace pypto::tools {

// A file could not be written; the message names it and the OS error.
class TraceWriteError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A records table's interned names and source locations, and the same strings as JSON string
// literals: one per distinct table, shared by the entries (launches) that use it.
struct StringTable {
  std::vector<std::string> strings, quoted;
};

// One simulated core's records of one launch, and where they sit in a container of many.
struct CoreRecordsView {
  std::string pid;                 // process name, e.g. "core0.veccore0"
  int64_t offset = 0;              // cycles from the container's time 0 to the records' 0
  size_t slot = 0;                 // its core's column in the API_INSTR totals
  const int64_t* table = nullptr;  // rows x width, row-major
  size_t rows = 0;
  size_t width = 0;
  const int32_t* name_id = nullptr;  // per row: index into `text->strings`
  const int32_t* loc_id = nullptr;
  const StringTable* text = nullptr;  // its strings, never null (the caller owns it)
  size_t text_id = 0;  // which of the write's distinct tables `text` is (its entries share it)
};

// Where each field sits in a records row.
struct RecordColumns {
  int kind, pipe, start, end, bytes, addr, flag_src, flag_dst, flag_id;
};

// One end of a flow arrow from a tile push to the pop that received it: the flow's id, the
// tile pipe's id, the entry of the written cores whose process draws it, its lane (a pipe
// number), its time in cycles from the container's time 0, and 0 at the push ("s"), 1 at the
// pop ("f").
struct FlowEnd {
  int64_t id, pipe_id, entry, lane, cycles, finish;
};

// Everything about the output that is not per record.
struct TraceLayout {
  RecordColumns col{};
  std::vector<std::string> lanes;       // the lane (tid) of each pipe number
  std::vector<std::string> flag_pipes;  // each pipe's spelling inside args.detail
  std::vector<std::string> sync_names;  // event name per record kind (kind 0: an operation)
  int64_t repeat_bytes = 256;           // vector repeat size, for the utilisation figures
  uint64_t pc_base = 0x10000;           // pc_addr of static instruction n: pc_base + 4 n
  std::string head;                     // '{"traceEvents":[' and the metadata events
  std::vector<FlowEnd> flows;           // written after the head, before the records' events
  std::string tail;                     // '],"displayTimeUnit":...}'
  // The API_INSTR block's payload around its entries: '{"Cores":[...],"Instructions":[' and
  // '],"Instructions Dtype":{...}}'; an empty head writes no API_INSTR block.
  std::string api_head, api_tail;
  int vector_pipe = -1;  // the pipe whose instructions have a vector utilisation
};

// Per static instruction (code) of one core: the totals API_INSTR reports.
struct SiteTotals {
  std::vector<int64_t> count, cycles, bytes, capacity, first_addr;  // first_addr -1: never ran
};

struct Site {
  std::string name, loc;
  int pipe = 0;
  std::string name_json, loc_json;  // name and loc as JSON string literals
};

struct TraceSummary {
  std::vector<Site> sites;  // static instructions, numbered in order of first execution
  std::vector<SiteTotals> per_core;
  uint64_t events = 0;
};

// Formats every record as a Chrome-trace event and writes `bin_path` (`bin_prefix`, the
// TRACE block, then the API_INSTR block of the summary unless `layout.api_head` is empty) and,
// unless `json_path` is empty, `json_path` (the TRACE JSON alone). A record whose string ids, pipe
// or kind are out of range is an std::invalid_argument naming it; the files are then as before the
// call (removed if it created them, untouched if they existed). The API_INSTR payload of a launch's
// summary: per static instruction its address, name, source and pipe, then one figure per core —
// executions, cycles, bytes moved, the vector unit's utilisation in percent (numpy's round to two
// places of 100 * bytes / whole repeats' bytes; -1.0 off the vector pipe or without a repeat) and
// the first execution's buffer address ("" when it never ran there). The text Python's json module
// would write.
std::string api_instr_payload(const TraceSummary& sum, const TraceLayout& layout);

TraceSummary write_trace_files(const std::vector<CoreRecordsView>& cores, const TraceLayout& layout,
                               const std::string& bin_prefix, const std::string& json_path,
                               const std::string& bin_path);

}  // namespace pypto::tools
