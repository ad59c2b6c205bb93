// TMOV: every on-chip route the platform has, each on its pipe with its cost. Moves into
// L0A/L0B rearrange row-major data into the fractal layouts the cube reads; moves out of
// L0C go through FIXPIPE and may narrow fp32 to fp16/bf16.
#include <cstring>
#include <string>
#include <vector>

#include "chip/isa/cube.hpp"
#include "chip/isa/dtype.hpp"
#include "chip/isa/fractal.hpp"
#include "chip/isa/vec_math.hpp"
#include "simulator/hardware.hpp"

using namespace pypto;
using namespace pypto::isa;

namespace {

using hw::kRoutes;
using hw::Route;

const Route* find_route(int src, int dst, const Platform& p) {
  for (const Route& r : kRoutes) {
    if (r.src == src && r.dst == dst && (!r.vec_mat || p.vec_mat_routes)) return &r;
  }
  return nullptr;
}

}  // namespace

std::string pypto::isa::legal_routes(int dst, const Platform& p) {
  std::string out;
  for (const Route& r : kRoutes) {
    if (r.dst != dst || (r.vec_mat && !p.vec_mat_routes)) continue;
    out += (out.empty() ? "" : ", ") + std::string(mem_name(r.src)) + " -> " + mem_name(r.dst);
  }
  return out.empty() ? "none" : out;
}

namespace {

void check_fractal_shape(const TileView& t, const char* op) {
  if (!is_l0(t.mem)) return;
  if (t.rows % 16 != 0 || t.cols % 16 != 0) {
    fail(ErrorKind::kShape, op,
         std::string(mem_name(t.mem)) + " tiles are built from 16 x 16 fractals: shape " +
             shape_text(t.rows, t.cols) + " must be a multiple of 16 in both dims");
  }
}

// Below this a relayout is not worth sharing with a busy run's thread (as copy_rows: a shared
// 32 KiB L0B relayout of FlashAttention's cost the data thread ~2,300 cycles of waiting), only
// with one that waits for the queue anyway (DataQueue::split_when_waited).
constexpr int64_t kSharedRelayoutBytes = 64 << 10;

// Rows [r0, r1) of a whole L0A (zZ) or L0B (nZ) tile — whole fractal rows — filled from a
// row-major source (`src`, row pitch `pitch` elements), fractal by fractal with constant trip
// counts and no per-element bounds checks. The fractals of rows [r0, r1) are the tile's
// storage from r0 * cols on, in both layouts.
template <typename T>
void l0_rows(T* dst, int mem, int64_t r0, int64_t r1, int64_t cols, const T* src, int64_t pitch) {
  constexpr int64_t c0 = 32 / static_cast<int64_t>(sizeof(T));
  dst += r0 * cols;
  if (mem == PYPTO_LEFT) {
    for (int64_t rb = r0; rb < r1; rb += 16)
      for (int64_t cb = 0; cb < cols; cb += c0)
        for (int64_t r = rb; r < rb + 16; ++r, dst += c0)
          std::memcpy(dst, src + r * pitch + cb, c0 * sizeof(T));
    return;
  }
  for (int64_t rb = r0; rb < r1; rb += c0) {
    for (int64_t cb = 0; cb < cols; cb += 16, dst += 16 * c0) {
      if constexpr (sizeof(T) == 2) {  // a 16 x 16 fractal: one register transpose
        transpose16_u16(dst, 16, src + rb * pitch + cb, pitch);
      } else {
        for (int64_t r = 0; r < c0; ++r)
          for (int64_t c = 0; c < 16; ++c) dst[c * c0 + r] = src[(rb + r) * pitch + cb + c];
      }
    }
  }
}

// The whole tile, its fractal rows in two halves the run's thread may share (DataQueue::split;
// a small tile only while that thread waits for the queue: split_when_waited): each half writes
// its own fractals, so the bytes are the same.
template <typename T>
void l0_from_rows(T* dst, int mem, int64_t rows, int64_t cols, const T* src, int64_t pitch) {
  const int64_t band = mem == PYPTO_LEFT ? 16 : 32 / static_cast<int64_t>(sizeof(T));
  const int64_t bands = rows / band;
  if (bands < 2) return l0_rows(dst, mem, 0, rows, cols, src, pitch);
  const auto half = [&](int64_t b0, int64_t b1) {
    l0_rows(dst, mem, b0 * band, b1 * band, cols, src, pitch);
  };
  if (rows * cols * static_cast<int64_t>(sizeof(T)) < kSharedRelayoutBytes) {
    return DataQueue::split_when_waited(bands, (bands + 1) / 2, half);
  }
  DataQueue::split(bands, (bands + 1) / 2, half);
}

// A whole row-major tile into L0A/L0B (l0_whole), when it is one.
bool relayout_whole(const TileView& d, const TileView& s) {
  const bool row_major_src = !is_l0(s.mem);
  if (!row_major_src || s.valid_rows != d.rows || s.valid_cols != d.cols) return false;
  return l0_whole(d, s.data, s.cols);
}

template <typename T>
void relayout_as(const TileView& d, const TileView& s) {
  if (relayout_whole(d, s)) return;
  constexpr int64_t e = sizeof(T);
  const T* src = reinterpret_cast<const T*>(s.data);
  T* dst = reinterpret_cast<T*>(d.data);
  const int64_t vr = s.valid_rows, vc = s.valid_cols;
  for_each_stored<e>(d.mem, d.rows, d.cols, [&](int64_t i, int64_t r, int64_t c) {
    if (r < vr && c < vc) dst[i] = src[layout_index(s.mem, r, c, s.cols, e)];
  });
}

// Element-wise relayout (and dtype conversion) between two tiles of one logical shape.
void relayout(const TileView& d, const TileView& s) {
  if (!is_l0(d.mem) && !is_l0(s.mem)) {  // both row-major (an Acc product out to Mat or Vec):
    for (int64_t r = 0; r < s.valid_rows; ++r)  // row by row, not an index walk per element
      vm::convert(d.dtype, d.row(r), s.dtype, s.row(r), static_cast<size_t>(s.valid_cols),
                  PYPTO_ROUND_RINT);
    return;
  }
  if (d.dtype == s.dtype && s.esize == 2) return relayout_as<uint16_t>(d, s);
  if (d.dtype == s.dtype && s.esize == 4) return relayout_as<uint32_t>(d, s);
  if (d.dtype == s.dtype && s.esize == 1) return relayout_as<uint8_t>(d, s);
  for (int64_t r = 0; r < s.valid_rows; ++r) {
    for (int64_t c = 0; c < s.valid_cols; ++c) {
      const uint8_t* p = s.data + layout_index(s.mem, r, c, s.cols, s.esize) * s.esize;
      uint8_t* q = d.data + layout_index(d.mem, r, c, d.cols, d.esize) * d.esize;
      if (d.dtype == s.dtype) {
        std::memcpy(q, p, static_cast<size_t>(d.esize));
      } else {
        vm::convert(d.dtype, q, s.dtype, p, 1, PYPTO_ROUND_RINT);
      }
    }
  }
}

OpDesc move_op(const Route& r, const TileView& d, const TileView& s) {
  if (r.pipe == PYPTO_VECTOR) return vector_op(VecClass::kCopy, s.valid_bytes());
  OpDesc o;
  o.cls = OpClass::kLocalMove;
  o.bytes = s.valid_bytes();
  o.link = Link::kUbToGm;  // Vec -> Mat (a5) runs at the UB write-out bandwidth
  if (r.pipe == PYPTO_MTE1) o.link = d.mem == PYPTO_RIGHT ? Link::kL1ToL0b : Link::kL1ToL0a;
  if (r.pipe == PYPTO_FIXPIPE) {
    o.cls = OpClass::kFixpipe;
    o.link = Link::kL0cToL1;
    o.rows = s.valid_rows;
    o.acc_row_bytes = s.valid_cols * s.esize;
    o.bytes = d.valid_bytes();
  }
  return o;
}

}  // namespace

bool pypto::isa::l0_whole(const TileView& d, const uint8_t* src, int64_t pitch) {
  const int64_t c0 = 32 / d.esize;
  if (!is_l0(d.mem) || d.rows % 16 != 0 || d.cols % 16 != 0 || d.rows % c0 != 0 || d.cols % c0 != 0)
    return false;
  if (d.esize == 2) {
    l0_from_rows(reinterpret_cast<uint16_t*>(d.data), d.mem, d.rows, d.cols,
                 reinterpret_cast<const uint16_t*>(src), pitch);
  } else if (d.esize == 4) {
    l0_from_rows(reinterpret_cast<uint32_t*>(d.data), d.mem, d.rows, d.cols,
                 reinterpret_cast<const uint32_t*>(src), pitch);
  } else if (d.esize == 1) {
    l0_from_rows(d.data, d.mem, d.rows, d.cols, src, pitch);
  } else {
    return false;
  }
  return true;
}

extern "C" void pypto_tmov(const pypto_tile* dst, const pypto_tile* src) {
  const char* op = "TMOV";
  const Deferred q;
  const unsigned onchip = ~mem_bit(PYPTO_GM);
  TileView s = check_tile(src, op, "src", onchip);
  TileView d = check_tile(dst, op, "dst", onchip);
  const Platform& p = current_core().platform;
  const Route* route = find_route(s.mem, d.mem, p);
  if (route == nullptr) {
    fail(ErrorKind::kMemorySpace, op,
         std::string("no route ") + mem_name(s.mem) + " -> " + mem_name(d.mem) + " on " + p.name +
             "; legal routes into " + mem_name(d.mem) + ": " + legal_routes(d.mem, p));
  }
  check_same_valid_shape(d, s, op, "dst and src");
  if (s.mem != PYPTO_ACC) check_same_dtype(d, s, op, "dst and src");
  check_fractal_shape(d, op);
  q.run(s.valid_bytes(), [d, s] {
    if (s.mem == d.mem) {
      copy_rows(d.data, d.cols * d.esize, s.data, s.cols * s.esize, s.valid_rows,
                s.valid_cols * s.esize);
    } else {
      relayout(d, s);
    }
  });
  AccessList acc;
  acc.add(s.access(false));
  acc.add(d.access(true));
  issue_op(route->pipe, move_op(*route, d, s), op, acc, static_cast<uint64_t>(s.valid_bytes()),
           d.addr);
}
