// Windowed moves: TEXTRACT (a window of a tile into a whole tile) and TINSERT (a whole tile
// into a window of a tile). Mat -> Left/Right is the L1 -> L0 extract every GEMM feeds its
// cube with: it runs on MTE1 and rearranges the window into the L0 fractal layout. L1 holds
// data on a grid of 16 x c0 fractals (c0 = 32 B / element size), so a window must start on
// that grid; L0C (Acc) holds 16 x 16 fractals. Acc -> Mat drains through FIXPIPE (the
// "matmul result into an L1 tile" path) and may narrow fp32 to fp16/bf16.
#include <cstring>
#include <string>
#include <utility>

#include "chip/isa/cube.hpp"
#include "chip/isa/dtype.hpp"
#include "chip/isa/vec_math.hpp"
#include "simulator/hardware.hpp"

using namespace pypto;
using namespace pypto::isa;

namespace {

using WindowRoute = hw::Route;

// A route a windowed move may take on platform p.
bool window_route(const WindowRoute& r, const Platform& p) {
  return r.windowed && (!r.vec_mat || p.vec_mat_routes);
}

std::string window_routes(const Platform& p) {
  std::string out;
  for (const WindowRoute& r : hw::kRoutes) {
    if (!window_route(r, p)) continue;
    out += (out.empty() ? "" : ", ") + std::string(mem_name(r.src)) + " -> " + mem_name(r.dst);
  }
  return out;
}

const WindowRoute& find_window_route(const TileView& s, const TileView& d, const char* op) {
  const Platform& p = current_core().platform;
  for (const WindowRoute& r : hw::kRoutes) {
    if (r.src == s.mem && r.dst == d.mem && window_route(r, p)) return r;
  }
  fail(ErrorKind::kMemorySpace, op,
       std::string("no windowed route ") + mem_name(s.mem) + " -> " + mem_name(d.mem) + " on " +
           p.name + "; legal: " + window_routes(p));
}

// The fractal grid a window of a tile in `mem` must start on: {row step, col step}.
std::pair<int64_t, int64_t> fractal_grid(int mem, int64_t esize) {
  if (mem == PYPTO_MAT) return {16, 32 / esize};  // L1: 16 x c0 fractals
  if (mem == PYPTO_ACC) return {16, 16};          // L0C: 16 x 16 fractals
  if (is_l0(mem)) return {16, 16};
  return {1, 1};
}

void check_on_grid(const TileView& t, int64_t row0, int64_t col0, const char* op,
                   const char* what) {
  auto [gr, gc] = fractal_grid(t.mem, t.esize);
  if (row0 % gr != 0 || col0 % gc != 0) {
    fail(ErrorKind::kShape, op,
         std::string(what) + " offset [" + std::to_string(row0) + ", " + std::to_string(col0) +
             "] in " + mem_name(t.mem) + " (" + dtype_name(t.dtype) + ") is not on its " +
             std::to_string(gr) + " x " + std::to_string(gc) +
             " fractal grid: row offsets must be multiples of " + std::to_string(gr) +
             " and column offsets multiples of " + std::to_string(gc));
  }
}

void check_l0_shape(const TileView& t, const char* op) {
  if (is_l0(t.mem) && (t.rows % 16 != 0 || t.cols % 16 != 0)) {
    fail(ErrorKind::kShape, op,
         std::string(mem_name(t.mem)) + " tiles are built from 16 x 16 fractals: shape " +
             shape_text(t.rows, t.cols) + " must be a multiple of 16 in both dims");
  }
}

// The window [row0, row0 + rows) x [col0, col0 + cols) must lie inside the tile's storage.
void check_inside(const TileView& t, int64_t row0, int64_t col0, int64_t rows, int64_t cols,
                  const char* op, const char* what) {
  if (row0 < 0 || col0 < 0 || row0 + rows > t.rows || col0 + cols > t.cols) {
    fail(ErrorKind::kOutOfBounds, op,
         std::string(what) + " window rows [" + std::to_string(row0) + ", " +
             std::to_string(row0 + rows) + ") x cols [" + std::to_string(col0) + ", " +
             std::to_string(col0 + cols) + ") is outside the tile of shape " +
             shape_text(t.rows, t.cols));
  }
}

// The bytes a window touches, as the hazard checker sees them (row-major spaces: exact rows;
// fractal spaces: the whole tile, which is what the layouts scatter the window over).
Access window_access(const TileView& t, int64_t row0, int64_t col0, int64_t rows, int64_t cols,
                     bool write) {
  if (is_l0(t.mem)) return {t.mem, t.addr, 1, t.rows * t.cols * t.esize, 0, write};
  const int64_t pitch = t.cols * t.esize;
  return {t.mem, t.addr + row0 * pitch + col0 * t.esize, rows, cols * t.esize, pitch, write};
}

// Same-dtype copy into an L0 fractal layout from a row-major window, walking the destination
// in storage order (E as a constant makes the fractal index math shifts).
template <int64_t E>
void copy_into_l0(const TileView& d, const TileView& s, int64_t row0, int64_t col0, int64_t rows,
                  int64_t cols) {
  const uint8_t* src = s.data;
  uint8_t* dst = d.data;
  const int64_t pitch = s.cols;
  for_each_stored<E>(d.mem, d.rows, d.cols, [&](int64_t i, int64_t r, int64_t c) {
    if (r < rows && c < cols)
      std::memcpy(dst + i * E, src + ((row0 + r) * pitch + col0 + c) * E, E);
  });
}

// dst[dr0 + r, dc0 + c] = src[sr0 + r, sc0 + c] over a rows x cols window, any layouts/dtypes.
void copy_window(const TileView& d, int64_t dr0, int64_t dc0, const TileView& s, int64_t sr0,
                 int64_t sc0, int64_t rows, int64_t cols) {
  const bool to_l0 = is_l0(d.mem) && dr0 == 0 && dc0 == 0;
  const bool whole =
      to_l0 && d.dtype == s.dtype && rows == d.rows && cols == d.cols && !is_l0(s.mem);
  if (whole && l0_whole(d, s.data + (sr0 * s.cols + sc0) * s.esize, s.cols)) return;
  if (to_l0 && d.dtype == s.dtype && s.esize == 2)
    return copy_into_l0<2>(d, s, sr0, sc0, rows, cols);
  if (to_l0 && d.dtype == s.dtype && s.esize == 4)
    return copy_into_l0<4>(d, s, sr0, sc0, rows, cols);
  if (to_l0 && d.dtype == s.dtype && s.esize == 1)
    return copy_into_l0<1>(d, s, sr0, sc0, rows, cols);
  const bool plain = !is_l0(d.mem) && !is_l0(s.mem);
  for (int64_t r = 0; r < rows; ++r) {
    const uint8_t* p = s.data + layout_index(s.mem, sr0 + r, sc0, s.cols, s.esize) * s.esize;
    uint8_t* q = d.data + layout_index(d.mem, dr0 + r, dc0, d.cols, d.esize) * d.esize;
    if (plain) {  // both row-major: one row at a time
      vm::convert(d.dtype, q, s.dtype, p, static_cast<size_t>(cols), PYPTO_ROUND_RINT);
      continue;
    }
    for (int64_t c = 0; c < cols; ++c) {
      p = s.data + layout_index(s.mem, sr0 + r, sc0 + c, s.cols, s.esize) * s.esize;
      q = d.data + layout_index(d.mem, dr0 + r, dc0 + c, d.cols, d.esize) * d.esize;
      vm::convert(d.dtype, q, s.dtype, p, 1, PYPTO_ROUND_RINT);
    }
  }
}

OpDesc window_op(const WindowRoute& r, const TileView& d, int64_t rows, int64_t cols,
                 int64_t src_esize) {
  const int64_t bytes = rows * cols * src_esize;
  if (r.pipe == PYPTO_VECTOR) return vector_op(VecClass::kCopy, bytes);
  OpDesc o;
  o.cls = OpClass::kLocalMove;
  o.bytes = bytes;
  o.link = Link::kUbToGm;  // Vec -> Mat (a5) runs at the UB write-out bandwidth
  if (r.pipe == PYPTO_MTE1) o.link = d.mem == PYPTO_RIGHT ? Link::kL1ToL0b : Link::kL1ToL0a;
  if (r.pipe == PYPTO_FIXPIPE) {
    o.cls = OpClass::kFixpipe;
    o.link = Link::kL0cToL1;
    o.rows = rows;
    o.acc_row_bytes = cols * src_esize;
    o.bytes = rows * cols * d.esize;
  }
  return o;
}

// One windowed move: dst window at (dr0, dc0) <- src window at (sr0, sc0), rows x cols.
void window_move(const char* op, const pypto_tile* dst, int64_t dr0, int64_t dc0,
                 const pypto_tile* src, int64_t sr0, int64_t sc0, bool extract) {
  const Deferred q;
  const unsigned onchip = ~mem_bit(PYPTO_GM);
  TileView s = check_tile(src, op, "src", onchip);
  TileView d = check_tile(dst, op, "dst", onchip);
  const WindowRoute& route = find_window_route(s, d, op);
  if (s.mem != PYPTO_ACC) check_same_dtype(d, s, op, "dst and src");
  check_l0_shape(d, op);
  const int64_t rows = extract ? d.valid_rows : s.valid_rows,
                cols = extract ? d.valid_cols : s.valid_cols;
  check_inside(s, sr0, sc0, rows, cols, op, "src");
  check_inside(d, dr0, dc0, rows, cols, op, "dst");
  check_on_grid(s, sr0, sc0, op, "src");
  check_on_grid(d, dr0, dc0, op, "dst");
  q.run(rows * cols * s.esize, [d, dr0, dc0, s, sr0, sc0, rows, cols] {
    copy_window(d, dr0, dc0, s, sr0, sc0, rows, cols);
  });
  AccessList acc;
  acc.add(window_access(s, sr0, sc0, rows, cols, false));
  acc.add(window_access(d, dr0, dc0, rows, cols, true));
  issue_op(route.pipe, window_op(route, d, rows, cols, s.esize), op, acc,
           static_cast<uint64_t>(rows * cols * s.esize), d.addr);
}

}  // namespace

extern "C" void pypto_textract(const pypto_tile* dst, const pypto_tile* src, int64_t row0,
                               int64_t col0) {
  window_move("TEXTRACT", dst, 0, 0, src, row0, col0, true);
}

extern "C" void pypto_tinsert(const pypto_tile* dst, int64_t row0, int64_t col0,
                              const pypto_tile* src) {
  window_move("TINSERT", dst, row0, col0, src, 0, 0, false);
}

// A window of a tile as a tile of its own, sharing the storage (no data moves, no
// instruction). Row-major spaces (Vec, Mat, Acc): any window whose first element is on the
// alignment; the view keeps the source's row pitch and narrows its valid region. L0A/L0B:
// whole-width row bands on the 16-row fractal grid (the fractals of a band are contiguous).
extern "C" void pypto_twindow(pypto_tile* out, const pypto_tile* src, int64_t row0, int64_t col0,
                              int32_t rows, int32_t cols) {
  const char* op = "TWINDOW";
  // A view touches no data: its checks need not wait for the queued work (as TRESHAPE's).
  const Deferred q;
  TileView s = check_tile(q, src, op, "src", ~mem_bit(PYPTO_GM));
  check_inside(s, row0, col0, rows, cols, op, "src");
  const bool l0 = is_l0(s.mem);
  if (l0 && (col0 != 0 || cols != s.cols || row0 % 16 != 0 || rows % 16 != 0)) {
    fail(ErrorKind::kShape, op,
         std::string("a window of a ") + mem_name(s.mem) + " tile " + shape_text(s.rows, s.cols) +
             " must be whole-width rows on the 16-row fractal grid; got rows [" +
             std::to_string(row0) + ", " + std::to_string(row0 + rows) + ") x cols [" +
             std::to_string(col0) + ", " + std::to_string(col0 + cols) + ")");
  }
  *out = *src;  // same space, dtype and row pitch (cols)
  out->addr = src->addr + (row0 * s.cols + col0) * s.esize;
  out->rows = rows;
  out->valid_rows = rows;
  out->valid_cols = cols;
  check_tile(q, out, op, "window", ~mem_bit(PYPTO_GM));
}
