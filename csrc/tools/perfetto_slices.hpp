// The slices of the whole-run Perfetto trace, encoded: a begin and an end TracePacket per
// instruction (pypto/report/perfetto.py lays out the tracks, sequences and interned strings;
// perfetto_lanes.hpp which rows make a lane). Encoded at native speed because a
// million-instruction run has two million packets; the bytes are the protobuf wire format,
// field numbers as in Perfetto's protos/perfetto/trace files.
#pragma once

#include <cstddef>
#include <cstdint>

namespace pypto::tools {

// One slice as the encoder writes it: times in cycles (trace nanoseconds), its name and
// source line by the lane's interned ids, the flag arrow it starts (a set_flag) and the one it
// ends (a wait_flag), 0: none.
struct SliceValues {
  uint64_t start, end, name, loc, flow_out, flow_in;
};

// A slice's two packets take at most this many bytes (every varint at its 10-byte longest: 101).
constexpr size_t kMaxSliceBytes = 128;

// Per slice: a begin packet (timestamp, sequence, "needs incremental state", a TrackEvent with
// type, name iid, source-location iid and the flow ids) and an end packet (timestamp,
// sequence, a TrackEvent of type end), for `n` slices of the lane with sequence id `seq`,
// encoded at `out` (room for kMaxSliceBytes each); returns the end of what was written.
uint8_t* encode_slices(const SliceValues* values, size_t n, uint64_t seq, uint8_t* out);

}  // namespace pypto::tools
