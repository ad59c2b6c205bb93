// The slices of one lane of the whole-run Perfetto trace (pypto/report/perfetto.py
// lays out the tracks, sequences and interned strings; this encodes the bulk: a begin and an
// end TracePacket per instruction). Encoded at native speed because a million-instruction run
// has two million packets; the bytes are the protobuf wire format, field numbers as in
// Perfetto's protos/perfetto/trace files.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace pypto::tools {

// One lane's slices: rows `rows[0..n)` of a core's columns (rows 0..n-1 when `rows` is null),
// so a lane is never copied out of its core. Name and source-line ids go through the lane's
// interning tables (`name_iid[name[r]]`, likewise for loc): a core's ids are its strings'.
struct LaneSlices {
  uint64_t seq = 0;  // the lane's trusted packet sequence id
  size_t n = 0;
  const int64_t* rows = nullptr;
  const int64_t* start = nullptr;  // cycles = trace nanoseconds, never negative
  const int64_t* end = nullptr;
  const int64_t* name = nullptr;  // string ids of the core
  const int64_t* loc = nullptr;
  const int64_t* name_iid = nullptr;  // string id -> the lane's interned id (> 0)
  const int64_t* loc_iid = nullptr;
  size_t strings = 0;                 // entries of each table: every name and loc id is below
  const int64_t* flow_out = nullptr;  // the arrow this slice starts (a set_flag), 0: none
  const int64_t* flow_in = nullptr;   // the arrow this slice ends (a wait_flag), 0: none
  size_t row(size_t i) const { return rows ? static_cast<size_t>(rows[i]) : i; }
};

// The bytes write_lane_slices writes (checks the columns: a negative time or interned id, or
// a row or string id out of range, throws std::invalid_argument before anything is written).
size_t lane_slices_size(const LaneSlices& lane, size_t rows);  // rows: the core's

// Per slice: a begin packet (timestamp, sequence, "needs incremental state", a TrackEvent with
// type, name iid, source-location iid and the flow ids) and an end packet (timestamp,
// sequence, a TrackEvent of type end), written to the file descriptor `fd` a chunk at a time
// (the columns checked first, so bad input writes nothing); returns the bytes written
// (lane_slices_size). A failed write throws TraceWriteError naming `path`.
size_t write_lane_slices(const LaneSlices& lane, size_t rows, int fd, const std::string& path);

}  // namespace pypto::tools
