// See perfetto_slices.hpp.
#include "tools/perfetto_slices.hpp"

#include <cstring>

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

// Without a loop: the bits in use (at least one), seven to a byte.
size_t varint_size(uint64_t v) {
  const auto bits = static_cast<size_t>(64 - __builtin_clzll(v | 1));
  return (bits + 6) / 7;
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

Sizes sizes_of(const SliceValues& v, size_t seq_bytes) {
  const size_t event = 2 + 1 + varint_size(v.name) + 2 + varint_size(v.loc) +
                       (v.flow_out ? 10 : 0) + (v.flow_in ? 10 : 0);
  return {event, 1 + varint_size(v.start) + seq_bytes + 2 + 1 + varint_size(event) + event,
          1 + varint_size(v.end) + seq_bytes + 4};
}

}  // namespace

uint8_t* encode_slices(const SliceValues* values, size_t n, uint64_t seq, uint8_t* out) {
  const size_t seq_bytes = 1 + varint_size(seq);
  Put w{out};
  for (size_t i = 0; i < n; ++i) {
    const SliceValues& v = values[i];
    const Sizes s = sizes_of(v, seq_bytes);
    const uint64_t flow_out = v.flow_out;
    const uint64_t flow_in = v.flow_in;
    w.byte(kPacket);
    w.varint(s.begin);
    w.byte(kTimestamp);
    w.varint(v.start);
    w.byte(kSequence);
    w.varint(seq);
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
    w.varint(seq);
    w.byte(kTrackEvent);
    w.byte(2);  // the TrackEvent's length: its type field
    w.byte(kType);
    w.byte(kEnd);
  }
  return w.p;
}

}  // namespace pypto::tools
