// The slices of one lane of the whole-run Perfetto trace (pypto/report/perfetto.py
// lays out the tracks, sequences and interned strings; this encodes the bulk: a begin and an
// end TracePacket per instruction). Encoded at native speed because a million-instruction run
// has two million packets; the bytes are the protobuf wire format, field numbers as in
// Perfetto's protos/perfetto/trace files.
#pragma once

#include <cstddef>
#include <cstdint>

namespace pypto::tools {

// One lane's slices, as columns of `n` rows (ids already interned, flow ids 0 where none).
struct LaneSlices {
  uint64_t seq = 0;  // the lane's trusted packet sequence id
  size_t n = 0;
  const int64_t* start = nullptr;  // cycles = trace nanoseconds, never negative
  const int64_t* end = nullptr;
  const int64_t* name_iid = nullptr;
  const int64_t* loc_iid = nullptr;
  const int64_t* flow_out = nullptr;  // the arrow this slice starts (a set_flag), 0: none
  const int64_t* flow_in = nullptr;   // the arrow this slice ends (a wait_flag), 0: none
};

// The bytes encode_lane_slices writes (checks the columns: a negative value throws
// std::invalid_argument, before anything is written).
size_t lane_slices_size(const LaneSlices& lane);

// Per slice: a begin packet (timestamp, sequence, "needs incremental state", a TrackEvent with
// type, name iid, source-location iid and the flow ids) and an end packet (timestamp,
// sequence, a TrackEvent of type end), written to `out` (lane_slices_size bytes of room).
void encode_lane_slices(const LaneSlices& lane, char* out);

}  // namespace pypto::tools
