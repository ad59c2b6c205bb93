// Cross-core state of one cluster launch (1 AIC + its AIVs): flags and tile pipes.
//
// Cores are numbered inside the cluster: 0 = the AIC, 1 + v = AIV v. A flag (src, dst, id)
// counts sets; each wait consumes one, at the time that set's instruction ended. A tile pipe
// (src, dst, id) is a ring of `depth` slots (platform.tpipe_slots unless its producer declared
// another depth before its first push): a push waits for a free slot, copies the
// tile in (with a data thread, only if the tile changes before the pop: RingSlot::src) and
// marks the slot ready when its transfer ends; a pop waits for a ready slot and copies it out;
// a free returns the oldest popped slot. On a platform without the Acc -> Vec
// route (a2a3) the ring lives in GM — a buffer of the memory system, so pushes and pops cost
// GM traffic; otherwise in the consumer's buffer.
#pragma once
#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "pypto/abi.h"
#include "simulator/memory_system.hpp"
#include "simulator/platform/platform.hpp"

namespace pypto {

struct RingSlot {
  std::vector<uint8_t> bytes;  // the tile's valid region, row-major
  pypto_tile shape{};          // dtype and valid shape of the pushed tile
  // With a data thread the push's copy into `bytes` is put off (DataQueue::put_off) and the
  // pop copies straight from the pushed tile — its bytes in the pushing core's memory, rows
  // `src_pitch` apart — unless something touched them first, which copies them into `bytes`.
  const uint8_t* src = nullptr;
  int64_t src_pitch = 0;
  uint64_t ready_at = UINT64_MAX;  // absolute end of the push (UINT64_MAX: not scheduled yet)
  uint64_t popped_at = UINT64_MAX;
};

struct Ring {
  std::deque<RingSlot> slots;  // every push, in order (a freed slot keeps its times only)
  uint64_t pushed = 0, popped = 0, freed = 0;
  // The absolute time slot i (in push order) was freed, at i % depth: a push reads only the
  // free of the slot `depth` pushes back, and that slot's next free needs this push first.
  // Sized at the first push, when the depth is fixed (UINT64_MAX: not scheduled yet).
  std::vector<uint64_t> free_at;
  std::unique_ptr<uint8_t[]> gm;            // a2a3: the ring's GM storage
  std::vector<std::vector<uint8_t>> spare;  // buffers of freed slots, reused by later pushes
  int64_t slot_bytes = 0;
  int64_t depth = 0;  // slots; 0 until declared or first pushed (then tpipe_slots)
};

struct Cluster {
  Cluster(const Platform& p, MemorySystem& m)
      : platform(p),
        memory(m),
        ids(p.cross_flag_ids > 0 ? p.cross_flag_ids : 0),
        flags(static_cast<size_t>(2 * p.aivs_per_cluster() * ids)),
        rings(flags.size()) {}

  // Flag sets in order: the absolute time each set's instruction ended. Cores are numbered
  // 0 (the AIC) and 1 + v (AIV v); (src, dst, id) must be checked before: one end the AIC,
  // the other an AIV of the cluster, and the id in range.
  std::deque<uint64_t>& flag(int src, int dst, int id) { return made(flags, at(src, dst, id)); }
  Ring& ring(int src, int dst, int id) { return made(rings, at(src, dst, id)); }

  const Platform& platform;
  MemorySystem& memory;

 private:
  // Every route joins the AIC and one AIV: (AIV, direction, id), two directions per AIV.
  size_t at(int src, int dst, int id) const {
    const int aiv = src == 0 ? dst - 1 : src - 1, from_aiv = src == 0 ? 0 : 1;
    return static_cast<size_t>((aiv * 2 + from_aiv) * ids + id);
  }
  // Flat tables indexed by route, filled on first use (a map lookup per cross-core op missed
  // the cache); entries never move, so references into them stay valid.
  template <class T>
  static T& made(std::vector<std::unique_ptr<T>>& table, size_t i) {
    if (!table[i]) table[i] = std::make_unique<T>();
    return *table[i];
  }
  int ids;
  std::vector<std::unique_ptr<std::deque<uint64_t>>> flags;
  std::vector<std::unique_ptr<Ring>> rings;
};

}  // namespace pypto
