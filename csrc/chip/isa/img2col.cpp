// The convolution load: SETFMATRIX (the fmap size and padding into the core's fmatrix
// register) and TIMG2COL (L1 -> L0A, the img2col matrix of an NC1HWC0 feature map built on the
// way, so a convolution is a matmul of it with FRACTAL_Z-ordered weights). The matrix is never
// stored whole: each TIMG2COL writes one [M, K] window of it, and a pixel in the padding reads
// 0. Column order (c1, kh, kw, c), c inner, is the hardware's: a run of c0 columns is one
// pixel's c0 channels, contiguous in L1 and in a row of an L0A fractal, so it moves as one.
#include <cstring>
#include <string>

#include "chip/isa/checks.hpp"
#include "chip/isa/cube.hpp"

using namespace pypto;
using namespace pypto::isa;

namespace {

// The output width and height a register + filter describe (the usual conv arithmetic).
int64_t out_extent(int64_t size, int64_t pad_lo, int64_t pad_hi, int64_t filter, int64_t dilation,
                   int64_t stride) {
  return (size + pad_lo + pad_hi - dilation * (filter - 1) - 1) / stride + 1;
}

void check_positive(const char* op, const char* what, int64_t v, int64_t least) {
  if (v < least) {
    fail(ErrorKind::kInvalidArgument, op,
         std::string(what) + " must be at least " + std::to_string(least) + ", got " +
             std::to_string(v));
  }
}

void check_register(const pypto_conv_geom& g, const char* op) {
  check_positive(op, "fmap_h", g.fmap_h, 1);
  check_positive(op, "fmap_w", g.fmap_w, 1);
  check_positive(op, "pad_left", g.pad_left, 0);
  check_positive(op, "pad_right", g.pad_right, 0);
  check_positive(op, "pad_top", g.pad_top, 0);
  check_positive(op, "pad_bottom", g.pad_bottom, 0);
}

void check_filter(const pypto_conv_geom& g, int64_t c0, const char* op) {
  check_positive(op, "filter_h", g.filter_h, 1);
  check_positive(op, "filter_w", g.filter_w, 1);
  check_positive(op, "stride_h", g.stride_h, 1);
  check_positive(op, "stride_w", g.stride_w, 1);
  check_positive(op, "dilation_h", g.dilation_h, 1);
  check_positive(op, "dilation_w", g.dilation_w, 1);
  if (g.channels < 1 || g.channels % c0 != 0) {
    fail(ErrorKind::kShape, op,
         "channels " + std::to_string(g.channels) + " must be a positive multiple of c0 = " +
             std::to_string(c0) + " (an NC1HWC0 fmap holds whole c0 planes)");
  }
}

// Everything one TIMG2COL needs: the register's fmap, the operand's filter, the window.
struct Img2col {
  pypto_conv_geom g;  // fmap_h .. pad_bottom from the register, the rest from the operand
  int64_t c0, wout, rows_out, pos_m, pos_k;
};

// dst[m, k] for the valid window, written run by run (one pixel's c0 channels at a time).
void gather(const TileView& d, const TileView& s, const Img2col& x) {
  const pypto_conv_geom& g = x.g;
  const int64_t run_bytes = x.c0 * s.esize, taps = int64_t{g.filter_h} * g.filter_w;
  for (int64_t m = 0; m < d.valid_rows; ++m) {
    const int64_t p = x.pos_m + m, oh = p / x.wout, ow = p % x.wout;
    for (int64_t k = 0; k < d.valid_cols; k += x.c0) {
      const int64_t col = (x.pos_k + k) / x.c0;  // (c1, kh, kw) of this run
      const int64_t c1 = col / taps, kh = col % taps / g.filter_w, kw = col % g.filter_w;
      const int64_t h = oh * g.stride_h - g.pad_top + kh * g.dilation_h;
      const int64_t w = ow * g.stride_w - g.pad_left + kw * g.dilation_w;
      uint8_t* to = d.data + layout_index(PYPTO_LEFT, m, k, d.cols, d.esize) * d.esize;
      if (h < 0 || h >= g.fmap_h || w < 0 || w >= g.fmap_w) {
        std::memset(to, 0, static_cast<size_t>(run_bytes));
        continue;
      }
      const int64_t at = ((c1 * g.fmap_h + h) * g.fmap_w + w) * x.c0;
      std::memcpy(to, s.data + at * s.esize, static_cast<size_t>(run_bytes));
    }
  }
}

// The checked window: operand spaces and dtypes, the register loaded, the fmap inside src,
// the window inside the img2col matrix and on the c0 grid.
Img2col check_img2col(const TileView& d, const TileView& s, const pypto_conv_geom& geom,
                      int64_t pos_m, int64_t pos_k, const char* op) {
  const CoreContext& core = current_core();
  if (!core.fmatrix_set) {
    fail(ErrorKind::kInvalidArgument, op,
         "the fmatrix register is not loaded: SETFMATRIX(fmap) must come before TIMG2COL");
  }
  check_same_dtype(d, s, op, "dst and src");
  Img2col x{geom, 32 / s.esize, 0, 0, pos_m, pos_k};
  const pypto_conv_geom& r = core.fmatrix;
  x.g.fmap_h = r.fmap_h, x.g.fmap_w = r.fmap_w;
  x.g.pad_left = r.pad_left, x.g.pad_right = r.pad_right;
  x.g.pad_top = r.pad_top, x.g.pad_bottom = r.pad_bottom;
  check_filter(x.g, x.c0, op);
  const pypto_conv_geom& g = x.g;
  x.wout = out_extent(g.fmap_w, g.pad_left, g.pad_right, g.filter_w, g.dilation_w, g.stride_w);
  x.rows_out =
      x.wout * out_extent(g.fmap_h, g.pad_top, g.pad_bottom, g.filter_h, g.dilation_h, g.stride_h);
  const int64_t fmap_elems = int64_t{g.channels} * g.fmap_h * g.fmap_w;
  if (fmap_elems > s.rows * s.cols) {
    fail(ErrorKind::kShape, op,
         "the fmap (" + std::to_string(g.channels) + " channels x " + std::to_string(g.fmap_h) +
             " x " + std::to_string(g.fmap_w) + " = " + std::to_string(fmap_elems) +
             " elements) does not fit src " + shape_text(s.rows, s.cols));
  }
  const int64_t cols = int64_t{g.channels} * g.filter_h * g.filter_w;
  if (pos_m < 0 || pos_k < 0 || pos_m + d.valid_rows > x.rows_out || pos_k + d.valid_cols > cols) {
    fail(ErrorKind::kOutOfBounds, op,
         "window rows [" + std::to_string(pos_m) + ", " + std::to_string(pos_m + d.valid_rows) +
             ") x cols [" + std::to_string(pos_k) + ", " + std::to_string(pos_k + d.valid_cols) +
             ") is outside the img2col matrix " + shape_text(x.rows_out, cols));
  }
  if (pos_k % x.c0 != 0 || d.valid_cols % x.c0 != 0) {
    fail(ErrorKind::kShape, op,
         "pos_k " + std::to_string(pos_k) + " and the window's " + std::to_string(d.valid_cols) +
             " columns must be multiples of c0 = " + std::to_string(x.c0));
  }
  return x;
}

}  // namespace

extern "C" void pypto_setfmatrix(const pypto_conv_geom* g) {
  const char* op = "SETFMATRIX";
  CoreContext& core = current_core();
  note_instruction(op, core.loc);
  if (g == nullptr) fail(ErrorKind::kInvalidArgument, op, "no geometry given");
  check_register(*g, op);
  core.fmatrix = *g;
  core.fmatrix_set = true;
  OpDesc d;
  d.cls = OpClass::kScalar;  // a register write: one scalar issue slot
  issue_op(PYPTO_SCALAR, d, op, {}, 0, -1);
}

extern "C" void pypto_timg2col(const pypto_tile* dst, const pypto_tile* src,
                               const pypto_conv_geom* geom, int64_t pos_m, int64_t pos_k) {
  const char* op = "TIMG2COL";
  const Deferred q;
  const TileView s = check_tile(src, op, "src", mem_bit(PYPTO_MAT));
  const TileView d = check_tile(dst, op, "dst", mem_bit(PYPTO_LEFT));
  if (geom == nullptr) fail(ErrorKind::kInvalidArgument, op, "no geometry given");
  const Img2col x = check_img2col(d, s, *geom, pos_m, pos_k, op);
  const int64_t bytes = d.valid_bytes();
  q.run(bytes, [d, s, x] { gather(d, s, x); });
  AccessList acc;
  const int64_t fmap_bytes = int64_t{x.g.channels} * x.g.fmap_h * x.g.fmap_w * s.esize;
  acc.add({PYPTO_MAT, s.addr, 1, fmap_bytes, fmap_bytes, false});
  acc.add({PYPTO_LEFT, d.addr, 1, d.rows * d.cols * d.esize, 0, true});
  OpDesc cost = l1_to_l0a_op(bytes);
  cost.in_esize = d.esize;  // its elements may be priced at another size (a cost profile's)
  issue_op(PYPTO_MTE1, cost, op, acc, static_cast<uint64_t>(bytes), d.addr);
}
