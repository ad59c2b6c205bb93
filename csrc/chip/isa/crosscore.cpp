// Cross-core synchronisation inside a cluster: flags and tile pipes (see core/cluster.hpp).
// Functionally a wait suspends this core until the other core has acted; in time, the waiting
// instruction starts no earlier than the other core's instruction ended.
#include <cstring>

#include "chip/core/cluster.hpp"
#include "chip/isa/checks.hpp"
#include "chip/isa/cube.hpp"
#include "chip/isa/dtype.hpp"

using namespace pypto;
using namespace pypto::isa;

namespace {

// The helpers take the current core from their op, which reads it once: every read of the
// thread-local pointer is a call into the dynamic loader's TLS helper.
Cluster& cluster_of(CoreContext& core, const char* op) {
  if (core.cluster == nullptr || core.waiter == nullptr) {
    fail(ErrorKind::kCrossCore, op,
         "cross-core operations need a cluster launch (the kernel runs on one AIC "
         "and its AIVs together); this kernel runs alone on " +
             core.core_name);
  }
  return *core.cluster;
}

// This core's number in the cluster (0 = AIC, 1 + v = AIV v) and its peer's, checked.
std::pair<int, int> ends(CoreContext& core, int32_t peer, const char* op) {
  const int n = core.platform.aivs_per_cluster();
  if (core.aic) {
    if (peer < 0 || peer >= n) {
      fail(ErrorKind::kCrossCore, op,
           "peer " + std::to_string(peer) + " is not an AIV of this cluster (0.." +
               std::to_string(n - 1) + ")");
    }
    return {0, 1 + peer};
  }
  if (peer != 0)
    fail(ErrorKind::kCrossCore, op,
         "an AIV's only peer is its AIC (peer 0), got " + std::to_string(peer));
  return {1 + core.subblock, 0};
}

std::string core_label(int local) {
  return local == 0 ? "the AIC" : "AIV " + std::to_string(local - 1);
}

OpDesc sync_op() {
  OpDesc d;
  d.cls = OpClass::kSync;
  return d;
}

void check_pipe(int32_t pipe, const char* op) {
  if (pipe < 0 || pipe >= PYPTO_NUM_PIPES)
    fail(ErrorKind::kFlag, op, "unknown pipe " + std::to_string(pipe));
}

void check_id(CoreContext& core, int32_t id, const char* op) {
  const int n = core.platform.cross_flag_ids;
  if (id < 0 || id >= n) {
    fail(ErrorKind::kFlag, op,
         "cross-core flag id " + std::to_string(id) + " out of range [0, " + std::to_string(n) +
             ") on " + core.platform.name);
  }
}

bool gm_ring(const Platform& p) { return p.vec_mat_routes == 0; }

Access ring_access(const Ring& r, uint64_t slot, int64_t bytes, bool write) {
  const int64_t at = static_cast<int64_t>(reinterpret_cast<intptr_t>(r.gm.get())) +
                     static_cast<int64_t>(slot) * r.slot_bytes;
  return {PYPTO_GM, at, 1, bytes, bytes, write};
}

// A push's put-off copy, when something touches the pushed tile before the pop: its valid
// region into the slot's bytes, as a push without a data thread copies it at once.
void flush_push(DataQueue& q, void* slot) {
  RingSlot& rs = *static_cast<RingSlot*>(slot);
  const int64_t rows = rs.shape.valid_rows,
                row_bytes = rs.shape.valid_cols * static_cast<int64_t>(dtype_size(rs.shape.dtype));
  q.push(rows * row_bytes, [to = rs.bytes.data(), from = rs.src, pitch = rs.src_pitch, rows,
                            row_bytes] { copy_rows(to, row_bytes, from, pitch, rows, row_bytes); });
}

// The queue of flag `id` between this core and `peer`, checked; `outgoing`: set by this core.
std::deque<uint64_t>& flag_queue(CoreContext& core, int32_t peer, int32_t pipe, int32_t id,
                                 const char* op, bool outgoing, int* other_out) {
  Cluster& c = cluster_of(core, op);
  check_pipe(pipe, op);
  check_id(core, id, op);
  auto [self, other] = ends(core, peer, op);
  *other_out = other;
  return outgoing ? c.flag(self, other, id) : c.flag(other, self, id);
}

// The ring of tile pipe `id` between this core and `peer`, checked; `outgoing`: this core
// pushes into it.
Ring& pipe_ring(CoreContext& core, Cluster& c, int32_t peer, int32_t id, const char* op,
                bool outgoing, std::pair<int, int>* ends_out) {
  const auto [self, other] = ends(core, peer, op);
  check_id(core, id, op);
  *ends_out = {self, other};
  return outgoing ? c.ring(self, other, id) : c.ring(other, self, id);
}

}  // namespace

extern "C" int32_t pypto_core_kind(void) { return current_core().aic ? 1 : 0; }
extern "C" int32_t pypto_subblock_idx(void) { return current_core().subblock; }

extern "C" void pypto_cross_set(int32_t peer, int32_t pipe, int32_t id) {
  const char* op = "CROSS_SET_FLAG";
  int other = 0;
  CoreContext& core = current_core();
  auto& q = flag_queue(core, peer, pipe, id, op, true, &other);
  q.push_back(UINT64_MAX);
  issue_op(pipe, sync_op(), op, {}, 0, -1, 0, &q.back(), {}, Instr::Hold::kUntilEnd);
  core.waiter->notify();
}

extern "C" void pypto_cross_wait(int32_t peer, int32_t pipe, int32_t id) {
  const char* op = "CROSS_WAIT_FLAG";
  int other = 0;
  CoreContext& core = current_core();
  auto& q = flag_queue(core, peer, pipe, id, op, false, &other);
  auto is_set = [&q] { return !q.empty() && q.front() != UINT64_MAX; };
  if (!is_set()) {  // the message only for a wait that blocks
    core.waiter->wait_until(is_set, [&] {
      return std::string(op) + " (flag " + std::to_string(id) + " from " + core_label(other) +
             ", never set)";
    });
  }
  const uint64_t at = q.front();
  q.pop_front();
  issue_op(pipe, sync_op(), op, {}, 0, -1, at, nullptr, {}, Instr::Hold::kUntilStart);
}

extern "C" void pypto_tpush(int32_t peer, int32_t id, const pypto_tile* src) {
  const char* op = "TPUSH";
  const Deferred q;
  CoreContext& core = current_core();
  Cluster& c = cluster_of(core, op);
  TileView s = check_tile(core, src, op, "src", mem_bit(core.aic ? PYPTO_ACC : PYPTO_VEC));
  std::pair<int, int> e;
  Ring& r = pipe_ring(core, c, peer, id, op, true, &e);
  const auto [self, other] = e;
  const int64_t bytes = s.valid_bytes();
  if (r.depth == 0) r.depth = c.platform.tpipe_slots;
  if (r.free_at.empty()) r.free_at.assign(static_cast<size_t>(r.depth), UINT64_MAX);
  if (r.slot_bytes == 0) {
    r.slot_bytes = (bytes + 511) / 512 * 512;
    if (gm_ring(c.platform)) {  // the ring's GM storage: one slot per level of its depth
      r.gm.reset(new uint8_t[static_cast<size_t>(r.slot_bytes * r.depth)]);
      c.memory.add_buffer(r.gm.get(), r.slot_bytes * r.depth);
    }
  }
  if (bytes > r.slot_bytes) {
    fail(ErrorKind::kCrossCore, op,
         "a tile of " + std::to_string(bytes) + " bytes does not fit this pipe's slots of " +
             std::to_string(r.slot_bytes) + " bytes (sized by its first push)");
  }
  const auto depth = static_cast<uint64_t>(r.depth);
  auto has_slot = [&r, depth] {
    return r.pushed - r.freed < depth &&
           (r.pushed < depth || r.free_at[r.pushed % depth] != UINT64_MAX);
  };
  if (!has_slot()) {
    core.waiter->wait_until(has_slot, [&] {
      return std::string(op) + " to " + core_label(other) +
             " (ring full: " + std::to_string(depth) + " slots pushed and none freed)";
    });
  }
  const uint64_t slot = r.pushed++;
  const uint64_t free_at = slot >= depth ? r.free_at[slot % depth] : 0;
  RingSlot& rs = r.slots.emplace_back();
  rs.shape = *src;
  if (!r.spare.empty()) {  // a freed slot's buffer: no allocation per push
    rs.bytes = std::move(r.spare.back());
    r.spare.pop_back();
    // A pop's queued copy may still read it: reshaping it waits for that copy.
    if (rs.bytes.size() != static_cast<size_t>(bytes) && core.data != nullptr) core.data->drain();
  }
  rs.bytes.resize(static_cast<size_t>(bytes));
  rs.src = s.data;
  rs.src_pitch = s.cols * s.esize;
  if (core.data != nullptr && bytes > 0) {
    // The copy waits for the pop, which then copies straight from the tile (one copy, not two),
    // unless this core touches the tile first (check_tile: check_touched_tile).
    core.data->put_off(
        {s.data, s.data + s.rows * s.cols * s.esize, flush_push, &rs, &core.put_offs});
  } else {
    q.run(bytes, [to = rs.bytes.data(), s] {
      copy_rows(to, s.valid_cols * s.esize, s.data, s.cols * s.esize, s.valid_rows,
                s.valid_cols * s.esize);
    });
  }
  AccessList acc;
  acc.add(s.access(false));
  OpDesc d;
  const bool acc_src = s.mem == PYPTO_ACC;
  if (gm_ring(c.platform)) {
    acc.add(ring_access(r, slot % depth, bytes, true));
    d = gm_op(acc_src ? OpClass::kFixpipeGm : OpClass::kGmWrite,
              acc_src ? Link::kL0cToGm : Link::kUbToGm, s.valid_rows, s.valid_cols * s.esize);
  } else {
    d.cls = acc_src ? OpClass::kFixpipe : OpClass::kLocalMove;
    d.link = acc_src ? Link::kL0cToL1 : Link::kUbToGm;
    d.rows = s.valid_rows;
    d.bytes = bytes;
  }
  d.acc_row_bytes = s.valid_cols * s.esize;
  issue_op(acc_src ? PYPTO_FIXPIPE : PYPTO_MTE3, d, op, acc, static_cast<uint64_t>(bytes), -1,
           free_at, &rs.ready_at, {self, other, id}, Instr::Hold::kUntilEnd);
  core.waiter->notify();
}

extern "C" void pypto_tpipe_depth(int32_t peer, int32_t id, int32_t slots) {
  const char* op = "TPIPE_DEPTH";
  CoreContext& core = current_core();
  Cluster& c = cluster_of(core, op);
  std::pair<int, int> e;
  Ring& r = pipe_ring(core, c, peer, id, op, true, &e);
  if (slots < 1) {
    fail(ErrorKind::kCrossCore, op, "a ring needs at least one slot, got " + std::to_string(slots));
  }
  if (r.depth != 0 && r.depth != slots) {  // its slots are in use: the depth is fixed
    fail(ErrorKind::kCrossCore, op,
         "the pipe to " + core_label(e.second) + " already rings " + std::to_string(r.depth) +
             " slots; it cannot change to " + std::to_string(slots));
  }
  r.depth = slots;
}

extern "C" void pypto_tpop(int32_t peer, int32_t id, const pypto_tile* dst) {
  const char* op = "TPOP";
  const Deferred q;
  CoreContext& core = current_core();
  Cluster& c = cluster_of(core, op);
  TileView d = check_tile(core, dst, op, "dst", mem_bit(core.aic ? PYPTO_MAT : PYPTO_VEC));
  std::pair<int, int> e;
  Ring& r = pipe_ring(core, c, peer, id, op, false, &e);
  const auto [self, other] = e;
  auto has_tile = [&r] { return r.pushed > r.popped && r.slots[r.popped].ready_at != UINT64_MAX; };
  if (!has_tile()) {
    core.waiter->wait_until(has_tile, [&] {
      return std::string(op) + " from " + core_label(other) + " (ring empty: nothing was pushed)";
    });
  }
  RingSlot& rs = r.slots[r.popped];
  const uint64_t slot = r.popped++;
  if (rs.shape.dtype != d.dtype || rs.shape.valid_rows != d.valid_rows ||
      rs.shape.valid_cols != d.valid_cols) {
    fail(ErrorKind::kCrossCore, op,
         core.core_name + " pops a " + std::string(dtype_name(d.dtype)) + " " +
             shape_text(d.valid_rows, d.valid_cols) + " tile, but " + core_label(other) +
             " pushed a " + dtype_name(rs.shape.dtype) + " " +
             shape_text(rs.shape.valid_rows, rs.shape.valid_cols) + " tile");
  }
  const bool from_tile = core.data != nullptr && core.data->take_back(&rs);
  q.run(d.valid_bytes(), [d, from = from_tile ? rs.src : rs.bytes.data(),
                          pitch = from_tile ? rs.src_pitch : d.valid_cols * d.esize] {
    copy_rows(d.data, d.cols * d.esize, from, pitch, d.valid_rows, d.valid_cols * d.esize);
  });
  const int64_t bytes = d.valid_bytes();
  AccessList acc;
  acc.add(d.access(true));
  OpDesc o = sync_op();
  if (gm_ring(c.platform)) {
    acc.add(ring_access(r, slot % static_cast<uint64_t>(r.depth), bytes, false));
    o = gm_op(OpClass::kGmRead, core.aic ? Link::kGmToL1 : Link::kGmToUb, d.valid_rows,
              d.valid_cols * d.esize);
  }
  issue_op(PYPTO_MTE2, o, op, acc, static_cast<uint64_t>(bytes), -1, rs.ready_at, &rs.popped_at,
           {other, self, id}, Instr::Hold::kUntilStart);
}

extern "C" void pypto_tfree(int32_t peer, int32_t id) {
  const char* op = "TFREE";
  CoreContext& core = current_core();
  Cluster& c = cluster_of(core, op);
  std::pair<int, int> e;
  Ring& r = pipe_ring(core, c, peer, id, op, false, &e);
  const int other = e.second;
  if (r.popped == r.freed) {
    fail(ErrorKind::kCrossCore, op,
         core.core_name + " frees a slot of the pipe from " + core_label(other) +
             " but holds none (" + std::to_string(r.popped) +
             " popped, all freed): a free without a pop, or freeing twice");
  }
  RingSlot& rs = r.slots[r.freed];
  uint64_t& freed_at = r.free_at[r.freed % r.free_at.size()];  // a pop implies a push: sized
  freed_at = UINT64_MAX;
  issue_op(PYPTO_MTE2, sync_op(), op, {}, 0, -1, rs.popped_at == UINT64_MAX ? 0 : rs.popped_at,
           &freed_at);
  // the slot's data is gone (its buffer kept for the next push); its record stays
  // (instructions may still point at it)
  r.spare.push_back(std::move(rs.bytes));
  rs.bytes = {};
  r.freed++;
  core.waiter->notify();
}
