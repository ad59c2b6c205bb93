// See perfetto_slices.hpp.
#include "tools/perfetto_slices.hpp"

#include <algorithm>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string_view>

#include "tools/parallel_files.hpp"

namespace pypto::tools {
namespace {

// Field keys (field number << 3 | wire type), pre-encoded as varints.
constexpr uint8_t kPacket = 1 << 3 | 2;           // Trace.packet
constexpr uint8_t kTimestamp = 8 << 3 | 0;        // TracePacket.timestamp
constexpr uint8_t kSequence = 10 << 3 | 0;        // TracePacket.trusted_packet_sequence_id
constexpr uint8_t kTrackEvent = 11 << 3 | 2;      // TracePacket.track_event
constexpr uint8_t kSeqFlags = 13 << 3 | 0;        // TracePacket.sequence_flags
constexpr uint8_t kNeedsState = 2;                // SEQ_NEEDS_INCREMENTAL_STATE
constexpr uint8_t kType = 9 << 3 | 0;             // TrackEvent.type
constexpr uint8_t kBegin = 1, kEnd = 2;           // TYPE_SLICE_BEGIN, TYPE_SLICE_END
constexpr uint8_t kNameIid = 10 << 3 | 0;         // TrackEvent.name_iid
constexpr uint8_t kLocationIid[] = {0x90, 0x02};  // TrackEvent.source_location_iid (34, varint)
constexpr uint8_t kFlowOut[] = {0xF9, 0x02};      // TrackEvent.flow_ids (47, fixed64)
constexpr uint8_t kFlowIn[] = {0x81, 0x03};       // TrackEvent.terminating_flow_ids (48, fixed64)

size_t varint_size(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) v >>= 7, ++n;
  return n;
}

// Writes through a raw pointer into room reserved per slice (one size check per slice).
struct Put {
  uint8_t* p;
  void byte(uint8_t b) { *p++ = b; }
  void bytes(const uint8_t* b, size_t n) {
    std::memcpy(p, b, n);
    p += n;
  }
  void varint(uint64_t v) {
    while (v >= 0x80) {
      *p++ = static_cast<uint8_t>(v | 0x80);
      v >>= 7;
    }
    *p++ = static_cast<uint8_t>(v);
  }
  void fixed64(uint64_t v) {
    for (int i = 0; i < 8; ++i) *p++ = static_cast<uint8_t>(v >> (8 * i));
  }
};

// The two packets' sizes: the begin packet's TrackEvent, the begin and the end packet bodies.
struct Sizes {
  size_t event, begin, end;
};

// One slice's values, looked up once (through the lane's rows and interning tables).
struct Row {
  uint64_t start, end, name, loc, flow_out, flow_in;
};

Row row_of(const LaneSlices& lane, size_t i) {
  const size_t r = lane.row(i);
  return {static_cast<uint64_t>(lane.start[r]),
          static_cast<uint64_t>(lane.end[r]),
          static_cast<uint64_t>(lane.name_iid[lane.name[r]]),
          static_cast<uint64_t>(lane.loc_iid[lane.loc[r]]),
          static_cast<uint64_t>(lane.flow_out[r]),
          static_cast<uint64_t>(lane.flow_in[r])};
}

Sizes sizes_of(const Row& v, size_t seq_bytes) {
  const size_t event = 2 + 1 + varint_size(v.name) + 2 + varint_size(v.loc) +
                       (v.flow_out ? 10 : 0) + (v.flow_in ? 10 : 0);
  return {event, 1 + varint_size(v.start) + seq_bytes + 2 + 1 + varint_size(event) + event,
          1 + varint_size(v.end) + seq_bytes + 4};
}

// The ids a row uses are in range: its row number (when picked), its string ids.
void check_ids(const LaneSlices& lane, size_t i, size_t rows) {
  if (lane.rows != nullptr && static_cast<uint64_t>(lane.rows[i]) >= rows)
    throw std::invalid_argument("a trace lane picks a row outside its core");
  const size_t r = lane.row(i);
  if (static_cast<uint64_t>(lane.name[r]) >= lane.strings ||
      static_cast<uint64_t>(lane.loc[r]) >= lane.strings)
    throw std::invalid_argument("a trace slice has a string id outside the lane's tables");
}

// Slices [from, to) of the lane, encoded at `out`; returns the end of what was written.
uint8_t* encode_range(const LaneSlices& lane, size_t from, size_t to, uint8_t* out);

}  // namespace

size_t lane_slices_size(const LaneSlices& lane, size_t rows) {
  const size_t seq_bytes = 1 + varint_size(lane.seq);
  size_t total = 0;
  uint64_t low = 0;
  for (size_t i = 0; i < lane.n; ++i) {
    check_ids(lane, i, rows);
    const Row v = row_of(lane, i);
    low |= v.start | v.end | v.name | v.loc;
    const Sizes s = sizes_of(v, seq_bytes);
    total += 1 + varint_size(s.begin) + s.begin + 1 + varint_size(s.end) + s.end;
  }
  if (static_cast<int64_t>(low) < 0)
    throw std::invalid_argument("a trace slice has a negative time or id");
  return total;
}

size_t write_lane_slices(const LaneSlices& lane, size_t rows, int fd, const std::string& path) {
  const size_t total = lane_slices_size(lane, rows);
  // A slice's two packets take at most 101 bytes (every varint at its 10-byte longest); a
  // chunk of kChunk slices is written while the pages it used are still warm.
  constexpr size_t kChunk = 4096, kMaxSlice = 128;
  const std::unique_ptr<uint8_t[]> buffer(new uint8_t[kChunk * kMaxSlice]);  // not zeroed
  for (size_t i = 0; i < lane.n; i += kChunk) {
    const uint8_t* end = encode_range(lane, i, std::min(lane.n, i + kChunk), buffer.get());
    write_all(fd,
              std::string_view(reinterpret_cast<const char*>(buffer.get()),
                               static_cast<size_t>(end - buffer.get())),
              path);
  }
  return total;
}

namespace {

uint8_t* encode_range(const LaneSlices& lane, size_t from, size_t to, uint8_t* out) {
  const size_t seq_bytes = 1 + varint_size(lane.seq);
  Put w{out};
  for (size_t i = from; i < to; ++i) {
    const Row v = row_of(lane, i);
    const Sizes s = sizes_of(v, seq_bytes);
    const uint64_t flow_out = v.flow_out;
    const uint64_t flow_in = v.flow_in;
    w.byte(kPacket);
    w.varint(s.begin);
    w.byte(kTimestamp);
    w.varint(v.start);
    w.byte(kSequence);
    w.varint(lane.seq);
    w.byte(kSeqFlags);
    w.byte(kNeedsState);
    w.byte(kTrackEvent);
    w.varint(s.event);
    w.byte(kType);
    w.byte(kBegin);
    w.byte(kNameIid);
    w.varint(v.name);
    w.bytes(kLocationIid, 2);
    w.varint(v.loc);
    if (flow_out) w.bytes(kFlowOut, 2), w.fixed64(flow_out);
    if (flow_in) w.bytes(kFlowIn, 2), w.fixed64(flow_in);
    w.byte(kPacket);
    w.varint(s.end);
    w.byte(kTimestamp);
    w.varint(v.end);
    w.byte(kSequence);
    w.varint(lane.seq);
    w.byte(kTrackEvent);
    w.byte(2);  // the TrackEvent's length: its type field
    w.byte(kType);
    w.byte(kEnd);
  }
  return w.p;
}

}  // namespace

}  // namespace pypto::tools
