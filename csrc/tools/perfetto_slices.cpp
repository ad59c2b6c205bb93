// See perfetto_slices.hpp: the general path, any slice a byte at a time.
#include "tools/perfetto_slices.hpp"

namespace pypto::tools::slice_wire {
namespace {

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

// A packet's opening: its length, then its timestamp and its sequence.
void packet_head(Put& w, uint64_t size, uint64_t time, uint64_t seq) {
  w.byte(kPacket);
  w.varint(size);
  w.byte(kTimestamp);
  w.varint(time);
  w.byte(kSequence);
  w.varint(seq);
}

}  // namespace

uint8_t* encode_general(const SliceValues& v, uint64_t seq, uint8_t* out) {
  const Sizes s = sizes_of(v, 1 + varint_size(seq));
  Put w{out};
  packet_head(w, s.begin, v.start, seq);
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
  if (v.flow_out) w.bytes(kFlowOut, 2), w.fixed64(v.flow_out);
  if (v.flow_in) w.bytes(kFlowIn, 2), w.fixed64(v.flow_in);
  packet_head(w, s.end, v.end, seq);
  w.byte(kTrackEvent);
  w.byte(2);  // the TrackEvent's length: its type field
  w.byte(kType);
  w.byte(kEnd);
  return w.p;
}

}  // namespace pypto::tools::slice_wire
