// The slices of the whole-run Perfetto trace, encoded: a begin and an end TracePacket per
// instruction (pypto/report/perfetto.py lays out the tracks, sequences and interned strings;
// perfetto_lanes.hpp which rows make a lane). Encoded at native speed because a
// million-instruction run has two million packets; the bytes are the protobuf wire format,
// field numbers as in Perfetto's protos/perfetto/trace files.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace pypto::tools {

// One slice as the encoder writes it: times in cycles (trace nanoseconds), its name and
// source line by the lane's interned ids, the flag arrow it starts (a set_flag) and the one it
// ends (a wait_flag), 0: none.
struct SliceValues {
  uint64_t start, end, name, loc, flow_out, flow_in;
};

// A slice's two packets take at most this many bytes (every varint at its 10-byte longest: 101).
constexpr size_t kMaxSliceBytes = 128;

namespace slice_wire {

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

// Without a loop or a division: the bits in use (at least one), seven to a byte, as
// (9 bits + 64) / 64, which equals ceil(bits / 7) for 1 to 64 bits.
inline size_t varint_size(uint64_t v) {
  const auto bits = 64 - static_cast<unsigned>(__builtin_clzll(v | 1));
  return (bits * 9 + 64) >> 6;
}

// The common slice is written a word at a time: both times below 2^35 (five varint bytes), its
// name and source-line iids and the sequence id below 128, no flow arrow. Its packets are then
// fixed bytes around two varints. A byte at a time that was ~30 one-byte stores per slice;
// here it is five unaligned stores, on a little-endian machine (the wire order of a word's
// bytes; elsewhere every slice takes the general path).
constexpr uint64_t kCommonTimeLimit = uint64_t{1} << 35;
constexpr bool kLittleEndian = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__;

inline bool common(const SliceValues& v, uint64_t seq) {
  return kLittleEndian && (v.start | v.end) < kCommonTimeLimit && (v.name | v.loc | seq) < 0x80 &&
         (v.flow_out | v.flow_in) == 0;
}

inline void store(uint8_t* p, uint64_t word) { std::memcpy(p, &word, sizeof word); }

// [packet, length, timestamp key, the time's varint] as one word (the varint at most five
// bytes: eight in all), the packet's body being `rest` bytes after its timestamp field; returns
// the head's length.
inline size_t packet_head(uint8_t* p, size_t rest, uint64_t time) {
  const size_t n = varint_size(time);
  const uint64_t groups = (time & 0x7F) | (time << 1 & 0x7F00) | (time << 2 & 0x7F0000) |
                          (time << 3 & 0x7F000000) | (time << 4 & 0x7F00000000);
  const uint64_t more = 0x8080808080ULL & ((uint64_t{1} << (8 * n - 8)) - 1);  // all but the last
  store(p, uint64_t{kPacket} | uint64_t{1 + n + rest} << 8 | uint64_t{kTimestamp} << 16 |
               (groups | more) << 24);
  return 3 + n;
}

// The two packets of a common slice at `p`; returns the end. Up to two bytes past it are
// overwritten (the slice's room is kMaxSliceBytes).
inline uint8_t* encode_common(const SliceValues& v, uint64_t seq, uint8_t* p) {
  // begin: timestamp, [sequence, seq, flags, needs-state, track event, 7, type, begin],
  // [name iid, name, source iid (2 bytes), loc]
  p += packet_head(p, 13, v.start);
  store(p, uint64_t{kSequence} | seq << 8 | uint64_t{kSeqFlags} << 16 |
               uint64_t{kNeedsState} << 24 | uint64_t{kTrackEvent} << 32 | uint64_t{7} << 40 |
               uint64_t{kType} << 48 | uint64_t{kBegin} << 56);
  store(p + 8, uint64_t{kNameIid} | v.name << 8 | uint64_t{kLocationIid[0]} << 16 |
                   uint64_t{kLocationIid[1]} << 24 | v.loc << 32);
  p += 13;
  // end: timestamp, [sequence, seq, track event, 2, type, end]
  p += packet_head(p, 6, v.end);
  store(p, uint64_t{kSequence} | seq << 8 | uint64_t{kTrackEvent} << 16 | uint64_t{2} << 24 |
               uint64_t{kType} << 32 | uint64_t{kEnd} << 40);
  return p + 6;
}

// Any slice, a byte at a time.
uint8_t* encode_general(const SliceValues& v, uint64_t seq, uint8_t* out);

}  // namespace slice_wire

// A slice's begin packet (timestamp, sequence, "needs incremental state", a TrackEvent with type,
// name iid, source-location iid and the flow ids) and end packet (timestamp, sequence, a
// TrackEvent of type end), for the lane with sequence id `seq`, encoded at `out` (room for
// kMaxSliceBytes); returns the end of what was written. Inline, per slice as the lane's slices
// are read: a slice's values go from the lane scan's kept slices to the bytes without a call.
inline uint8_t* encode_slice(const SliceValues& v, uint64_t seq, uint8_t* out) {
  if (__builtin_expect(slice_wire::common(v, seq), 1))
    return slice_wire::encode_common(v, seq, out);
  return slice_wire::encode_general(v, seq, out);
}

}  // namespace pypto::tools
