// Operand checks shared by every ISA op. Each failure throws a SimError that names the
// instruction, the operand, the numbers involved and the kernel source line.
#pragma once
#include <atomic>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "chip/core/context.hpp"
#include "chip/core/data_queue.hpp"
#include "chip/isa/tile_view.hpp"
#include "pypto/abi.h"
#include "simulator/errors.hpp"
#include "simulator/hazard.hpp"

namespace pypto::isa {

// A checked GM window of a tensor's last two dims.
struct GmWindow {
  uint8_t* data;  // first element of the window
  int64_t rows, row_bytes, stride_bytes;
  Access access(bool write) const;
};

[[noreturn]] void fail(ErrorKind kind, const char* op, const std::string& message);

// Bit mask of allowed memory spaces, e.g. mem_bit(PYPTO_VEC) | mem_bit(PYPTO_MAT).
constexpr unsigned mem_bit(int mem) { return 1u << mem; }

// The crash breadcrumb: the ISA call being executed and its kernel line, kept in plain
// globals so a fatal-signal handler can report where a native fault happened.
// Hidden: read and written only inside the library, so each op stores to them directly rather
// than through the GOT.
[[gnu::visibility("hidden")]] extern std::atomic<const char*> g_last_op, g_last_loc;
inline void note_instruction(const char* op, const char* loc) {
  g_last_op.store(op, std::memory_order_relaxed);
  g_last_loc.store(loc, std::memory_order_relaxed);
}
const char* last_instruction_op();
const char* last_instruction_loc();

// Before an op touches data in place: the queued work of earlier ops is done (DataQueue). An
// op whose own work is queued (`Deferred`) skips it, its work being queued behind theirs.
inline void data_barrier(CoreContext& core) {
  if (core.data != nullptr && !core.deferring) core.data->drain();
}

// An operand check on a core with reads put off on its memory (a tile pipe's pushes not yet
// popped: DataQueue::put_off): the full check, then the reads put off on the tile's bytes are
// queued ahead of the op's own work (and done, before an op that works in place). Out of line
// and rare, so check_tile's common path stays what it was plus one load and branch.
[[gnu::cold, gnu::noinline]] TileView check_touched_tile(CoreContext& core, const pypto_tile* t,
                                                         const char* op, const char* operand,
                                                         unsigned spaces);

// An op that queues its data work on the run's data thread: while it lives, its operand
// checks do not drain the queue. `run(bytes, fn)` queues the work (or does it at once with no
// data thread, or when the run's ops are too small to be worth it: `bytes` is the op's size,
// DataQueue::push); `fn` captures values only and calls nothing that reads the current core.
class Deferred {
 public:
  Deferred() : core_(current_core()), was_(core_.deferring) { core_.deferring = true; }
  ~Deferred() { core_.deferring = was_; }
  Deferred(const Deferred&) = delete;
  Deferred& operator=(const Deferred&) = delete;
  CoreContext& core() const { return core_; }
  template <class Fn>
  void run(int64_t bytes, const Fn& fn) const {
    if (core_.data != nullptr) {
      core_.data->push(bytes, fn);
    } else {
      fn();
    }
  }
  // run(bytes, [=] { work(args...); }) with the closure built only when the work is queued:
  // done in place (a small op, or no data thread), `work` reads the op's own operands.
  template <class Work, class... Args>
  void run_with(int64_t bytes, const Work& work, const Args&... args) const {
    if (core_.data == nullptr || core_.data->runs_in_place(bytes)) {
      work(args...);
    } else {
      queue_with(work, args...);
    }
  }

 private:
  // The queued form out of line: built inline, its closure (the op's views copied) and the
  // registers saved around it gave every op a kilobyte-sized frame.
  template <class Work, class... Args>
  [[gnu::noinline]] void queue_with(const Work& work, const Args&... args) const {
    core_.data->queue([work, args...] { work(args...); });
  }

  CoreContext& core_;
  bool was_;
};

// Checks a tile operand of `op` against the current core: space in `spaces`, dtype, shape,
// bounds and alignment. A descriptor this core already checked with the same bytes is not
// checked again (the result depends only on the descriptor and the platform), which keeps the
// per-instruction cost of a loop low.
inline size_t checked_slot(const pypto_tile* t) {
  return (reinterpret_cast<uintptr_t>(t) >> 5) % CoreContext::kCheckedSlots;
}
TileView check_tile_fully(const pypto_tile* t, const char* op, const char* operand,
                          unsigned spaces);
// Whether `seen` holds a checked descriptor with the bytes of `t` (not null) in `spaces`.
[[gnu::always_inline]] inline bool checked_as(const CoreContext::CheckedTile& seen,
                                              const pypto_tile* t, unsigned spaces) {
  const pypto_tile& d = seen.desc;
  return seen.view.data != nullptr && d.addr == t->addr && d.mem == t->mem && d.dtype == t->dtype &&
         d.rows == t->rows && d.cols == t->cols && d.valid_rows == t->valid_rows &&
         d.valid_cols == t->valid_cols && (spaces & mem_bit(t->mem));
}
// check_tile past its slot's newest descriptor: the one the slot held before, else every check.
TileView check_tile_again(CoreContext& core, const pypto_tile* t, const char* op,
                          const char* operand, unsigned spaces);
// Always inline: a call per operand cost a loop of tiny instructions more than the check
// itself. `core`: the current core, which an op reads once and passes to each of its checks
// (every read of the thread-local pointer is a call into the dynamic loader's TLS helper).
// check_tile of an op's later operand: the op's first check_tile noted the instruction and
// waited for the queue, and nothing was queued since.
[[gnu::always_inline]] inline TileView check_next_tile(CoreContext& core, const pypto_tile* t,
                                                       const char* op, const char* operand,
                                                       unsigned spaces) {
  if (core.put_offs != 0) [[unlikely]]
    return check_touched_tile(core, t, op, operand, spaces);
  const CoreContext::CheckedTile& seen = core.checked[checked_slot(t)];
  // The view is copied whole from the one kept (built field by field here, its copy into an
  // op's queued closure would read what was just written in other widths: a store-forwarding
  // stall on every instruction).
  if (t != nullptr && checked_as(seen, t, spaces)) return seen.view;
  return check_tile_again(core, t, op, operand, spaces);
}
[[gnu::always_inline]] inline TileView check_tile(CoreContext& core, const pypto_tile* t,
                                                  const char* op, const char* operand,
                                                  unsigned spaces) {
  note_instruction(op, core.loc);
  data_barrier(core);
  return check_next_tile(core, t, op, operand, spaces);
}
[[gnu::always_inline]] inline TileView check_tile(const pypto_tile* t, const char* op,
                                                  const char* operand, unsigned spaces) {
  return check_tile(current_core(), t, op, operand, spaces);
}
// check_tile of an op whose work is queued (`q`): no wait for the queue (data_barrier), which
// the op's work is queued behind.
[[gnu::always_inline]] inline TileView check_tile(const Deferred& q, const pypto_tile* t,
                                                  const char* op, const char* operand,
                                                  unsigned spaces) {
  note_instruction(op, q.core().loc);
  return check_next_tile(q.core(), t, op, operand, spaces);
}
GmWindow check_window(const pypto_tensor* t, int64_t row0, int64_t col0, const TileView& tile,
                      const char* op);
// Refuses a TSTORE / atomic add into a tensor flagged input or read-only (abi.h).
void check_writable(const pypto_tensor* t, const char* op);
[[noreturn]] void refuse_dtypes(const TileView& a, const TileView& b, const char* op,
                                const char* what);
[[noreturn]] void refuse_shapes(const TileView& a, const TileView& b, const char* op,
                                const char* what);
inline void check_same_dtype(const TileView& a, const TileView& b, const char* op,
                             const char* what) {
  if (a.dtype != b.dtype) refuse_dtypes(a, b, op, what);
}
inline void check_same_valid_shape(const TileView& a, const TileView& b, const char* op,
                                   const char* what) {
  if (a.valid_rows != b.valid_rows || a.valid_cols != b.valid_cols) refuse_shapes(a, b, op, what);
}
// An elementwise op's operands agree: b (if any) with a, then dst with a; dtypes first.
void check_elementwise(const TileView& dst, const TileView& a, const TileView* b, const char* op);
// The input `a` of a one-input elementwise op: a Vec tile of dst's dtype and valid shape
// (`dst` was checked first, by check_tile).
inline TileView check_input_a(CoreContext& core, const pypto_tile* a, const TileView& dst,
                              const char* op) {
  TileView x = check_next_tile(core, a, op, "a", mem_bit(PYPTO_VEC));
  check_elementwise(dst, x, nullptr, op);
  return x;
}
inline TileView check_input_a(const pypto_tile* a, const TileView& dst, const char* op) {
  return check_input_a(current_core(), a, dst, op);
}

// The operands of a one-input elementwise op whose work is queued (`q`): dst and a checked as
// check_tile and check_input_a check them, and the op's own (`supported(op code, dtype)`). An
// op repeating its last operands on this core (the same descriptors, bytes unchanged, and no
// reads put off on its memory) reuses their views and access list: a loop's op reads two
// descriptors instead of looking each up, copying its view and building the list.
// `code`: one_input_op(family, op code), which the kept operands answer for alone.
constexpr int32_t one_input_op(int32_t family, int32_t opc) { return family * 16 + opc; }
inline size_t one_input_slot(int32_t code, const pypto_tile* dst) {
  return ((reinterpret_cast<uintptr_t>(dst) >> 5) + static_cast<uintptr_t>(code)) %
         CoreContext::kOneInputSlots;
}
// Whether two descriptors have the same bytes (a pypto_tile has no padding).
[[gnu::always_inline]] inline bool same_tile(const pypto_tile& x, const pypto_tile& y) {
  static_assert(sizeof(pypto_tile) == 32 && std::has_unique_object_representations_v<pypto_tile>,
                "a descriptor compares as its 32 bytes");
#if defined(__SSE2__)
  const auto* p = reinterpret_cast<const __m128i*>(&x);
  const auto* q = reinterpret_cast<const __m128i*>(&y);
  const __m128i diff = _mm_or_si128(_mm_xor_si128(_mm_loadu_si128(p), _mm_loadu_si128(q)),
                                    _mm_xor_si128(_mm_loadu_si128(p + 1), _mm_loadu_si128(q + 1)));
  return _mm_movemask_epi8(_mm_cmpeq_epi8(diff, _mm_setzero_si128())) == 0xffff;
#else
  return std::memcmp(&x, &y, sizeof(pypto_tile)) == 0;
#endif
}
const OneInputOperands& check_one_input_again(CoreContext& core, int32_t code,
                                              const pypto_tile* dst, const pypto_tile* a,
                                              const char* op, bool (*supported)(int, int));
[[gnu::always_inline]] inline const OneInputOperands& check_one_input(
    const Deferred& q, int32_t code, const pypto_tile* dst, const pypto_tile* a, const char* op,
    bool (*supported)(int, int)) {
  CoreContext& core = q.core();
  note_instruction(op, core.loc);
  const OneInputOperands& m = core.one_input[one_input_slot(code, dst)];
  if (m.op == code && m.dst == dst && m.a == a && core.put_offs == 0 &&
      same_tile(m.dst_desc, *dst) && same_tile(m.a_desc, *a)) [[likely]] {
    return m;
  }
  return check_one_input_again(core, code, dst, a, op, supported);
}
// Refuses an op the vector unit does not implement on `dtype` (`ok`: it does).
[[noreturn]] void refuse_dtype(const char* op, int dtype);
inline void check_supported(bool ok, const char* op, int dtype) {
  if (!ok) refuse_dtype(op, dtype);
}
std::string shape_text(int64_t rows, int64_t cols);

// The name of opcode `opc` in its family's table, which is indexed by the opcode; another
// opcode is an internal error reported under the family's name.
template <size_t N>
const char* op_name(const char* const (&names)[N], int32_t opc, const char* family) {
  if (opc < 0 || opc >= static_cast<int32_t>(N)) fail(ErrorKind::kInternal, family, "unknown op");
  return names[opc];
}

// Issues an op instruction on the current core's timing model; `op` says what the cost
// model prices.
// Cross-core ops also pass `not_before` (absolute cycles the op may not start before) and
// `publish_end` (receives its absolute end once scheduled). A tile-pipe op also records its
// route in the flag columns (`route`: from core, to core, pipe id in the cluster's numbering,
// 0 = the AIC, 1 + v = AIV v), so a trace can draw each push to its pop.
struct PipeRoute {
  int from = 0, to = 0, id = 0;
};
void issue_op(int pipe, const OpDesc& op, const char* name, const AccessList& accesses,
              uint64_t bytes, int64_t addr, uint64_t not_before = 0,
              uint64_t* publish_end = nullptr, PipeRoute route = {},
              Instr::Hold hold = Instr::Hold::kNone);

// A vector instruction (vector_op's description) reading `a`, `b` (either may be null) and
// writing `dst` on `core` (the current core): CoreModel::issue_vector. Inline: the access list
// is built in the op's own frame, from the views it already holds.
[[gnu::always_inline]] inline void issue_vector_op(CoreContext& core, const char* name, VecClass c,
                                                   int64_t bytes, const TileView& dst,
                                                   const TileView* a, const TileView* b) {
  AccessList acc;
  if (a != nullptr) acc.add(a->access(false));
  if (b != nullptr) acc.add(b->access(false));
  acc.add(dst.access(true));
  core.model.issue_vector(name, core.loc, c, bytes, dst.addr, acc);
}
// issue_vector_op of a one-input elementwise op's kept operands (check_one_input).
[[gnu::always_inline]] inline void issue_vector_op(CoreContext& core, const char* name, VecClass c,
                                                   const OneInputOperands& k) {
  core.model.issue_vector(name, core.loc, c, k.bytes, k.d.addr, k.accesses);
}
inline void issue_vector_op(const char* name, VecClass c, int64_t bytes, const TileView& dst,
                            const TileView* a, const TileView* b) {
  issue_vector_op(current_core(), name, c, bytes, dst, a, b);
}

// A Vec instruction priced per row of `src` (`cls`: a row reduction or a transpose): it reads
// src, clobbers the scratch tile if any and writes dst. `reduce`: what a row reduction computes.
void issue_row_op(const char* name, OpClass cls, const TileView& src, const TileView* scratch,
                  const TileView& dst, RowReduceKind reduce = RowReduceKind::kOther);

// Descriptions of the common instruction classes.
OpDesc vector_op(VecClass c, int64_t bytes);
OpDesc gm_op(OpClass c, Link link, int64_t rows, int64_t row_bytes);
OpDesc mad_op(int64_t m, int64_t k, int64_t n, int64_t in_esize);
OpDesc l1_to_l0a_op(int64_t bytes);

}  // namespace pypto::isa
