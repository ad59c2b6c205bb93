// TLOAD / TSTORE: data movement between GM and on-chip spaces (TMOV lives in move.cpp).
#include <algorithm>
#include <cstring>

#if defined(__x86_64__) && defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "chip/isa/checks.hpp"
#include "chip/isa/cube.hpp"
#include "chip/isa/dtype.hpp"
#include "chip/isa/vec_math.hpp"

using namespace pypto;
using namespace pypto::isa;

namespace pypto::isa {

namespace {

void move_rows(uint8_t* dst, int64_t dst_pitch, const uint8_t* src, int64_t src_pitch, int64_t rows,
               int64_t row_bytes) {
  if (dst_pitch == row_bytes && src_pitch == row_bytes) {
    std::memmove(dst, src, static_cast<size_t>(rows * row_bytes));
    return;
  }
  for (int64_t r = 0; r < rows; ++r) {
    std::memmove(dst + r * dst_pitch, src + r * src_pitch, static_cast<size_t>(row_bytes));
  }
}

// Below this a copy is not worth sharing between two host threads: the helper reads its half
// from the other host core's cache and the data thread waits for it. Measured on
// FlashAttention's 16-32 KiB pipe and load copies: the data thread waited ~1,400 TSC cycles
// per shared copy, more than the half it gave away.
constexpr int64_t kSharedCopyBytes = 64 << 10;

}  // namespace

void copy_rows(uint8_t* dst, int64_t dst_pitch, const uint8_t* src, int64_t src_pitch, int64_t rows,
               int64_t row_bytes) {
  const int64_t bytes = rows * row_bytes;
  const uint8_t *dst_end = dst + (rows - 1) * dst_pitch + row_bytes,
                *src_end = src + (rows - 1) * src_pitch + row_bytes;
  if (bytes < kSharedCopyBytes || rows < 2 || (dst < src_end && src < dst_end)) {
    return move_rows(dst, dst_pitch, src, src_pitch, rows, row_bytes);  // overlaps copy in order
  }
  DataQueue::split(rows, (rows + 1) / 2, [&](int64_t r0, int64_t r1) {
    move_rows(dst + r0 * dst_pitch, dst_pitch, src + r0 * src_pitch, src_pitch, r1 - r0, row_bytes);
  });
}

}  // namespace pypto::isa

namespace {

// Assumption: a GM tensor past 8 MiB outgrows the host core's private caches, so the lines a
// store writes are evicted before anything reads them. Writing them non-temporally skips
// reading each line from DRAM before overwriting it (exp over 16 MiB: store 2.4 -> 1.7 ms).
constexpr int64_t kStreamingTensorBytes = int64_t{8} << 20;

// memcpy with SSE2 (baseline x86-64) streaming stores for the 16-byte-aligned middle.
void stream_copy(uint8_t* dst, const uint8_t* src, size_t n) {
#if defined(__x86_64__) && defined(__SSE2__)
  size_t head = std::min(n, (16 - reinterpret_cast<uintptr_t>(dst) % 16) % 16);
  std::memcpy(dst, src, head);
  size_t i = head;
  for (; i + 64 <= n; i += 64) {
    for (size_t j = 0; j < 64; j += 16) {
      __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i + j));
      _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i + j), v);
    }
  }
  std::memcpy(dst + i, src + i, n - i);
  _mm_sfence();  // streaming stores are weakly ordered: make them visible before returning
#else
  std::memcpy(dst, src, n);
#endif
}

bool atomic_dtype(int dtype) {
  return dtype == PYPTO_FP32 || dtype == PYPTO_FP16 || dtype == PYPTO_BF16 || dtype == PYPTO_INT32;
}

}  // namespace

extern "C" void pypto_tload(const pypto_tile* dst, const pypto_tensor* src, int64_t row0,
                            int64_t col0) {
  const char* op = "TLOAD";
  const Deferred q;
  if (dst != nullptr && dst->mem > PYPTO_MAT && dst->mem < PYPTO_NUM_MEM) {
    fail(ErrorKind::kMemorySpace, op,
         std::string("GM loads write Vec or Mat, not ") + mem_name(dst->mem) + "; the route into " +
             mem_name(dst->mem) + " is " + legal_routes(dst->mem, current_core().platform) +
             " (TMOV)");
  }
  TileView d = check_tile(dst, op, "dst", mem_bit(PYPTO_VEC) | mem_bit(PYPTO_MAT));
  GmWindow w = check_window(src, row0, col0, d, op);
  q.run(w.rows * w.row_bytes, [d, w] {
    copy_rows(d.data, d.cols * d.esize, w.data, w.stride_bytes, w.rows, w.row_bytes);
  });
  const Link link = d.mem == PYPTO_VEC ? Link::kGmToUb : Link::kGmToL1;
  AccessList acc;
  acc.add(w.access(false));
  acc.add(d.access(true));
  issue_op(PYPTO_MTE2, gm_op(OpClass::kGmRead, link, w.rows, w.row_bytes), op, acc,
           static_cast<uint64_t>(w.rows * w.row_bytes), d.addr);
}

// An L2 warm (pl.prefetch.async_prefetch): a GM read of the whole flat tensor on MTE2 with no
// on-chip destination. The memory system prices it as a TLOAD of one row of those bytes and
// installs its lines, so later transfers of them hit; no value anywhere changes.
extern "C" void pypto_tprefetch(const pypto_tensor* src) {
  const char* op = "TPREFETCH";
  note_instruction(op, current_core().loc);
  if (src == nullptr || src->ndim < 1) fail(ErrorKind::kOutOfBounds, op, "null GM tensor");
  const int64_t cols = src->shape[src->ndim - 1];
  TileView row{};  // the region as one row, for the window checks (no tile is written)
  row.dtype = src->dtype;
  row.esize = static_cast<int64_t>(dtype_size(src->dtype));
  row.rows = row.valid_rows = 1;
  row.cols = row.valid_cols = cols;
  if (src->ndim == 2 && src->shape[0] != 1)
    fail(ErrorKind::kShape, op,
         "the region must be flat ([N] or [1, N]), got " + shape_text(src->shape[0], cols));
  GmWindow w = check_window(src, 0, 0, row, op);
  AccessList acc;
  acc.add(w.access(false));
  issue_op(PYPTO_MTE2, gm_op(OpClass::kGmRead, Link::kGmToL1, 1, w.row_bytes), op, acc,
           static_cast<uint64_t>(w.row_bytes), 0);
}

extern "C" void pypto_tstore(const pypto_tensor* dst, int64_t row0, int64_t col0,
                             const pypto_tile* src, int32_t atomic_add) {
  const char* op = atomic_add ? "TSTORE.atomic_add" : "TSTORE";
  const Deferred q;
  if (src != nullptr && src->mem == PYPTO_ACC) {
    store_from_acc(dst, row0, col0, src, atomic_add != 0);
    return;
  }
  TileView s = check_tile(src, op, "src", mem_bit(PYPTO_VEC));
  GmWindow w = check_window(dst, row0, col0, s, op);
  check_writable(dst, op);
  if (atomic_add && !atomic_dtype(s.dtype)) {
    fail(ErrorKind::kDType, op, std::string("atomic add does not support ") + dtype_name(s.dtype));
  }
  if (atomic_add) {
    q.core().queued_atomics = true;
    q.run(w.rows * w.row_bytes, [core = &q.core(), base = dst->data, s, w] {
      for (int64_t r = 0; r < w.rows; ++r) {
        core->atomic_add(base, w.data + r * w.stride_bytes, s.dtype, s.row(r),
                         static_cast<size_t>(s.valid_cols));
      }
    });
  } else {
    // One block copy when both sides are contiguous: a large copy lets the CPU write whole
    // cache lines of GM without first reading them (twice as fast as row-sized copies).
    const int64_t pitch = s.cols * s.esize;
    const bool contiguous = w.stride_bytes == w.row_bytes && pitch == w.row_bytes;
    const bool stream = contiguous && tensor_bytes(*dst) >= kStreamingTensorBytes;
    q.run(w.rows * w.row_bytes, [s, w, pitch, stream] {
      if (stream) {
        stream_copy(w.data, s.data, static_cast<size_t>(w.rows * w.row_bytes));
      } else {
        copy_rows(w.data, w.stride_bytes, s.data, pitch, w.rows, w.row_bytes);
      }
    });
  }
  AccessList acc;
  acc.add(s.access(false));
  acc.add(w.access(true));
  OpDesc store = gm_op(OpClass::kGmWrite, Link::kUbToGm, w.rows, w.row_bytes);
  store.atomic = atomic_add != 0;
  issue_op(PYPTO_MTE3, store, op, acc, static_cast<uint64_t>(w.rows * w.row_bytes), s.addr);
}
