// pypto kernel API — the only header a kernel translation unit includes.
//
// A kernel exports   extern "C" void kernel_entry(__gm__ int64_t* args)
// where args holds one pointer to a pypto_tensor per tensor parameter (declaration order),
// then one 64-bit slot per scalar parameter (integers as int64, floats as double bits).
//
// Tiles are typed views bound to an address in an on-chip space; every operation forwards
// to the native ISA library, which checks operands, computes on simulated memory and
// records the instruction on the core's pipe model. Style follows AscendC / PTO:
//   using namespace pypto;
//   VecTile<float, 64, 128> x(0);            // 64x128 fp32 at Vec offset 0
//   TLOAD(x, a, row, 0);                      // GM -> Vec on MTE2
//   set_flag(PIPE_MTE2, PIPE_V, EVENT_ID0);   // order the load before the compute
//   wait_flag(PIPE_MTE2, PIPE_V, EVENT_ID0);
//   TEXP(x, x);                               // VECTOR pipe
#pragma once
#include <stdint.h>
#include <string.h>

#include "pypto/abi.h"

#define __gm__
#define __aicore__
#define __global__

// Tags the statements that follow with a source location shown in errors and traces.
#define PYPTO_LOC(loc) ::pypto_set_loc(loc)

namespace pypto {

// ---- enums ----------------------------------------------------------------------------
enum class Mem : int32_t {
  GM = PYPTO_GM,
  Vec = PYPTO_VEC,
  Mat = PYPTO_MAT,
  Left = PYPTO_LEFT,
  Right = PYPTO_RIGHT,
  Acc = PYPTO_ACC,
  Bias = PYPTO_BIAS
};
enum class DType : int32_t {
  FP32 = PYPTO_FP32,
  FP16 = PYPTO_FP16,
  BF16 = PYPTO_BF16,
  INT32 = PYPTO_INT32,
  INT8 = PYPTO_INT8,
  INT16 = PYPTO_INT16,
  INT64 = PYPTO_INT64,
  UINT8 = PYPTO_UINT8,
  BOOL = PYPTO_BOOL,
  UINT32 = PYPTO_UINT32
};
enum class RoundMode : int32_t {
  RINT = PYPTO_ROUND_RINT,
  TRUNC = PYPTO_ROUND_TRUNC,
  FLOOR = PYPTO_ROUND_FLOOR,
  CEIL = PYPTO_ROUND_CEIL,
  AWAY = PYPTO_ROUND_AWAY
};
enum Pipe : int32_t {
  PIPE_MTE2 = PYPTO_MTE2,
  PIPE_MTE1 = PYPTO_MTE1,
  PIPE_M = PYPTO_CUBE,
  PIPE_V = PYPTO_VECTOR,
  PIPE_FIX = PYPTO_FIXPIPE,
  PIPE_MTE3 = PYPTO_MTE3,
  PIPE_S = PYPTO_SCALAR,
  PIPE_ALL = PYPTO_PIPE_ALL
};
enum EventId : int32_t {
  EVENT_ID0 = 0,
  EVENT_ID1,
  EVENT_ID2,
  EVENT_ID3,
  EVENT_ID4,
  EVENT_ID5,
  EVENT_ID6,
  EVENT_ID7
};

// 16-bit float storage types (bit patterns; arithmetic happens in the ISA library).
struct half {
  uint16_t bits;
};
struct bfloat16 {
  uint16_t bits;
};

// dtype_of<T>::value: the DType of the C++ element type T.
template <DType D>
struct dtype_is {
  static constexpr DType value = D;
};
template <typename T>
struct dtype_of;
template <>
struct dtype_of<float> : dtype_is<DType::FP32> {};
template <>
struct dtype_of<half> : dtype_is<DType::FP16> {};
template <>
struct dtype_of<bfloat16> : dtype_is<DType::BF16> {};
template <>
struct dtype_of<int32_t> : dtype_is<DType::INT32> {};
template <>
struct dtype_of<int8_t> : dtype_is<DType::INT8> {};
template <>
struct dtype_of<int16_t> : dtype_is<DType::INT16> {};
template <>
struct dtype_of<int64_t> : dtype_is<DType::INT64> {};
template <>
struct dtype_of<uint8_t> : dtype_is<DType::UINT8> {};
template <>
struct dtype_of<uint32_t> : dtype_is<DType::UINT32> {};

// ---- tiles and tensors ----------------------------------------------------------------
struct Tile : pypto_tile {
  // An unbound tile (a declaration to be assigned later); any op on it is refused.
  Tile() : pypto_tile{PYPTO_GM, PYPTO_FP32, 0, 0, 0, 0, 0} {}
  Tile(Mem m, DType d, int32_t r, int32_t c, int64_t address, int32_t vr = -1, int32_t vc = -1)
      : pypto_tile{static_cast<int32_t>(m), static_cast<int32_t>(d), address, r, c,
                   vr < 0 ? r : vr,         vc < 0 ? c : vc} {}
  // The same storage seen at another address (ping-pong buffers, explicit slots).
  Tile at(int64_t address) const {
    Tile t = *this;
    t.addr = address;
    return t;
  }
  // The same storage with a smaller valid region (tails).
  Tile valid(int32_t vr, int32_t vc) const {
    Tile t = *this;
    t.valid_rows = vr;
    t.valid_cols = vc;
    return t;
  }
};

template <Mem M, typename T, int R, int C>
struct TileT : Tile {
  explicit TileT(int64_t address = 0) : Tile(M, dtype_of<T>::value, R, C, address) {}
  static constexpr int64_t kBytes = int64_t{R} * C * static_cast<int64_t>(sizeof(T));
};
template <typename T, int R, int C>
using VecTile = TileT<Mem::Vec, T, R, C>;
template <typename T, int R, int C>
using MatTile = TileT<Mem::Mat, T, R, C>;

struct Tensor {
  const pypto_tensor* desc;
  int64_t rows() const { return desc->ndim == 2 ? desc->shape[0] : 1; }
  int64_t cols() const { return desc->shape[desc->ndim - 1]; }
};

inline Tensor arg_tensor(__gm__ int64_t* args, int i) {
  return Tensor{reinterpret_cast<const pypto_tensor*>(static_cast<intptr_t>(args[i]))};
}
inline int64_t arg_i64(__gm__ int64_t* args, int i) { return args[i]; }
inline double arg_f64(__gm__ int64_t* args, int i) {
  double v;
  memcpy(&v, &args[i], sizeof v);
  return v;
}

// ---- data movement --------------------------------------------------------------------
inline void TLOAD(const Tile& dst, Tensor src, int64_t row0, int64_t col0) {
  pypto_tload(&dst, src.desc, row0, col0);
}
inline void TSTORE(Tensor dst, int64_t row0, int64_t col0, const Tile& src) {
  pypto_tstore(dst.desc, row0, col0, &src, 0);
}
inline void TSTORE_ATOMIC_ADD(Tensor dst, int64_t row0, int64_t col0, const Tile& src) {
  pypto_tstore(dst.desc, row0, col0, &src, 1);
}
inline void TMOV(const Tile& dst, const Tile& src) { pypto_tmov(&dst, &src); }

// ---- cube -----------------------------------------------------------------------------
inline void TMATMUL(const Tile& acc, const Tile& left, const Tile& right, bool a_trans = false,
                    bool b_trans = false) {
  pypto_tmatmul(&acc, &left, &right, a_trans, b_trans, 0);
}
inline void TMATMUL_ACC(const Tile& acc, const Tile& left, const Tile& right, bool a_trans = false,
                        bool b_trans = false) {
  pypto_tmatmul(&acc, &left, &right, a_trans, b_trans, 1);
}
// TMATMUL_ACC whose accumulator starts afresh when `init` holds (split-K's first step).
inline void TMATMUL_ACC_INIT(const Tile& acc, const Tile& left, const Tile& right, bool a_trans,
                             bool b_trans, bool init) {
  pypto_tmatmul(&acc, &left, &right, a_trans, b_trans, init ? 0 : 1);
}
template <typename T, int R, int C>
using LeftTile = TileT<Mem::Left, T, R, C>;
template <typename T, int R, int C>
using RightTile = TileT<Mem::Right, T, R, C>;
template <typename T, int R, int C>
using AccTile = TileT<Mem::Acc, T, R, C>;

// ---- vector ---------------------------------------------------------------------------
#define PYPTO_BINARY(NAME, OP)                                                                     \
  inline void NAME(const Tile& d, const Tile& a, const Tile& b) { pypto_tbinary(OP, &d, &a, &b); } \
  inline void NAME##S(const Tile& d, const Tile& a, double s) {                                    \
    pypto_tbinary_scalar(OP, &d, &a, s);                                                           \
  }
PYPTO_BINARY(TADD, PYPTO_ADD)
PYPTO_BINARY(TSUB, PYPTO_SUB)
PYPTO_BINARY(TMUL, PYPTO_MUL)
PYPTO_BINARY(TDIV, PYPTO_DIV)
PYPTO_BINARY(TMAX, PYPTO_MAX)
PYPTO_BINARY(TMIN, PYPTO_MIN)
#undef PYPTO_BINARY

#define PYPTO_UNARY(NAME, OP) \
  inline void NAME(const Tile& d, const Tile& a) { pypto_tunary(OP, &d, &a); }
PYPTO_UNARY(TEXP, PYPTO_EXP)
PYPTO_UNARY(TLOG, PYPTO_LOG)
PYPTO_UNARY(TSQRT, PYPTO_SQRT)
PYPTO_UNARY(TRECIP, PYPTO_RECIP)
PYPTO_UNARY(TRELU, PYPTO_RELU)
PYPTO_UNARY(TNEG, PYPTO_NEG)
PYPTO_UNARY(TABS, PYPTO_ABS)
#undef PYPTO_UNARY

inline void TEXPANDS(const Tile& d, double value) { pypto_texpands(&d, value); }
inline void TCVT(const Tile& d, const Tile& s, RoundMode m = RoundMode::RINT) {
  pypto_tcvt(&d, &s, static_cast<int32_t>(m));
}

inline void TROWSUM(const Tile& d, const Tile& s, const Tile& tmp) {
  pypto_trowreduce(PYPTO_RSUM, &d, &s, &tmp);
}
inline void TROWMAX(const Tile& d, const Tile& s, const Tile& tmp) {
  pypto_trowreduce(PYPTO_RMAX, &d, &s, &tmp);
}
inline void TROWMIN(const Tile& d, const Tile& s, const Tile& tmp) {
  pypto_trowreduce(PYPTO_RMIN, &d, &s, &tmp);
}

#define PYPTO_EXPAND(SUFFIX, OP)                                                \
  inline void TROWEXPAND##SUFFIX(const Tile& d, const Tile& a, const Tile& v) { \
    pypto_trowexpand(OP, &d, &a, &v);                                           \
  }                                                                             \
  inline void TCOLEXPAND##SUFFIX(const Tile& d, const Tile& a, const Tile& v) { \
    pypto_tcolexpand(OP, &d, &a, &v);                                           \
  }
PYPTO_EXPAND(ADD, PYPTO_ADD)
PYPTO_EXPAND(SUB, PYPTO_SUB)
PYPTO_EXPAND(MUL, PYPTO_MUL)
PYPTO_EXPAND(DIV, PYPTO_DIV)
PYPTO_EXPAND(MAX, PYPTO_MAX)
PYPTO_EXPAND(MIN, PYPTO_MIN)
#undef PYPTO_EXPAND

// ---- storage regions (PTOAS: addresses chosen when the kernel starts) -----------------
template <int N>
inline void place_regions(const pypto_region (&regions)[N], int64_t (&base)[N]) {
  pypto_place_regions(regions, N, base);
}
inline int64_t slot_address(int64_t base, int64_t index, int32_t slots, int64_t slot_bytes,
                            const char* name) {
  return pypto_slot_address(base, index, slots, slot_bytes, name);
}

// ---- scalar helpers: Python's // and % (floor semantics) for generated index arithmetic --
// A zero divisor raises KernelZeroDivisionError at the current line (as Python would), and
// INT64_MIN // -1 wraps as numpy's int64 does instead of trapping.
inline int64_t floordiv(int64_t a, int64_t b) {
  if (b == 0) pypto_zero_division("//");
  if (b == -1) return static_cast<int64_t>(0ull - static_cast<uint64_t>(a));
  return a / b - ((a % b != 0) && ((a < 0) != (b < 0)));
}
inline int64_t floormod(int64_t a, int64_t b) {
  if (b == 0) pypto_zero_division("%");
  if (b == -1) return 0;
  return a - floordiv(a, b) * b;
}
inline double floordiv(double a, double b) {
  if (b == 0) pypto_zero_division("//");
  return __builtin_floor(a / b);
}
inline double floormod(double a, double b) {
  if (b == 0) pypto_zero_division("%");
  return a - __builtin_floor(a / b) * b;
}

// pl.cast of a scalar to an integer dtype of `bits` bits: a float truncates toward zero (NaN
// and values beyond int64 give INT64_MIN, as x86's conversion does), then the value wraps to
// the dtype's width as numpy's astype does.
inline int64_t cast_int(int64_t v, int bits, bool is_signed) {
  if (bits >= 64) return v;
  const uint64_t mask = (uint64_t{1} << bits) - 1;
  uint64_t u = static_cast<uint64_t>(v) & mask;
  if (is_signed && (u >> (bits - 1)) != 0) u |= ~mask;
  return static_cast<int64_t>(u);
}
inline int64_t cast_int(double v, int bits, bool is_signed) {
  const bool fits = v > -9223372036854775808.0 && v < 9223372036854775808.0;
  return cast_int(fits ? static_cast<int64_t>(v) : INT64_MIN, bits, is_signed);
}
inline int64_t cast_int(bool v, int bits, bool is_signed) {
  return cast_int(static_cast<int64_t>(v), bits, is_signed);
}

// ---- synchronisation and launch -------------------------------------------------------
inline void set_flag(Pipe src, Pipe dst, int32_t event_id) { pypto_set_flag(src, dst, event_id); }
inline void wait_flag(Pipe src, Pipe dst, int32_t event_id) { pypto_wait_flag(src, dst, event_id); }
inline void pipe_barrier(Pipe pipe) { pypto_pipe_barrier(pipe); }
inline int64_t get_block_idx() { return pypto_block_idx(); }
inline int64_t get_block_num() { return pypto_block_num(); }

// ---- cluster kernels: one AIC and its AIVs working together ---------------------------
inline bool is_aic() { return pypto_core_kind() == 1; }
inline int32_t get_subblockid() { return pypto_subblock_idx(); }
inline void cross_set_flag(int32_t peer, Pipe pipe, int32_t id) { pypto_cross_set(peer, pipe, id); }
inline void cross_wait_flag(int32_t peer, Pipe pipe, int32_t id) {
  pypto_cross_wait(peer, pipe, id);
}
// AIC side (peer = the AIV's index; `id` one of the pipes between the two cores; `slots` the
// ring's depth, 0: the platform's) ...
inline void TPUSH_TO_AIV(const Tile& src, int32_t aiv, int32_t id = 0, int32_t slots = 0) {
  if (slots != 0) pypto_tpipe_depth(aiv, id, slots);
  pypto_tpush(aiv, id, &src);
}
inline void TPOP_FROM_AIV(const Tile& dst, int32_t aiv, int32_t id = 0) {
  pypto_tpop(aiv, id, &dst);
}
inline void TFREE_TO_AIV(int32_t aiv, int32_t id = 0) { pypto_tfree(aiv, id); }
// ... and AIV side (the peer is its AIC).
inline void TPUSH_TO_AIC(const Tile& src, int32_t id = 0, int32_t slots = 0) {
  if (slots != 0) pypto_tpipe_depth(0, id, slots);
  pypto_tpush(0, id, &src);
}
inline void TPOP_FROM_AIC(const Tile& dst, int32_t id = 0) { pypto_tpop(0, id, &dst); }
inline void TFREE_TO_AIC(int32_t id = 0) { pypto_tfree(0, id); }
// Half `part` (0 or 1) of a tile shared by the two AIVs: split 1 halves the rows (part 0 the
// top), split 2 the columns (part 0 the left; the row pitch stays the whole tile's, so the
// right half's extent reaches half a row past the tile, which the tile check refuses for a
// tile at the very top of its buffer).
inline Tile split_half(const Tile& t, int32_t split, int32_t part) {
  static const int32_t bytes[] = {4, 2, 2, 4, 1, 2, 8, 1, 1, 4};  // by pypto_dtype
  const int32_t esize = bytes[t.dtype];
  Tile h = t;
  if (split == 1) {
    h.rows = t.rows / 2;
    h.valid_rows = t.valid_rows / 2;
    h.addr = t.addr + static_cast<int64_t>(part) * h.rows * t.cols * esize;
  } else {
    h.valid_cols = t.valid_cols / 2;
    h.addr = t.addr + static_cast<int64_t>(part) * (t.cols / 2) * esize;
  }
  return h;
}

// ---- windowed moves and layout ops -----------------------------------------------------
// TEXTRACT(l0a, a_l1, 0, k0): the L1 -> L0 extract on MTE1 (see abi.h for every route).
inline void TEXTRACT(const Tile& dst, const Tile& src, int64_t row0, int64_t col0) {
  pypto_textract(&dst, &src, row0, col0);
}
inline void TINSERT(const Tile& dst, int64_t row0, int64_t col0, const Tile& src) {
  pypto_tinsert(&dst, row0, col0, &src);
}
inline void TTRANS(const Tile& dst, const Tile& src) { pypto_ttrans(&dst, &src); }
enum class PadValue : int32_t { Zero = PYPTO_PAD_ZERO, Max = PYPTO_PAD_MAX, Min = PYPTO_PAD_MIN };
inline void TFILLPAD(const Tile& dst, const Tile& src, PadValue pad = PadValue::Zero) {
  pypto_tfillpad(&dst, &src, static_cast<int32_t>(pad));
}
inline void TRESHAPE(const Tile& dst, const Tile& src) { pypto_treshape(&dst, &src); }
// A window of src as a tile sharing its storage: Tile w = TWINDOW(acc, 32, 0, 32, 256);
inline Tile TWINDOW(const Tile& src, int64_t row0, int64_t col0, int32_t rows, int32_t cols) {
  Tile out;
  pypto_twindow(&out, &src, row0, col0, rows, cols);
  return out;
}

// ---- convolution (see abi.h) ---------------------------------------------------------------
// A Mat tile holding a feature map in NC1HWC0 order and the convolution that reads it:
//   ConvTile fmap(Tile(Mem::Mat, DType::FP16, c1, h * w * 16, 0), geom);
//   SETFMATRIX(fmap);                         // the fmap size and padding into the register
//   TIMG2COL(l0a, fmap, pos_m, pos_k);        // L1 -> L0A img2col on MTE1
struct ConvTile : Tile {
  pypto_conv_geom geom;
  ConvTile() : Tile(), geom{} {}
  ConvTile(const Tile& t, const pypto_conv_geom& g) : Tile(t), geom(g) {}
};
inline void SETFMATRIX(const ConvTile& src) { pypto_setfmatrix(&src.geom); }
inline void TIMG2COL(const Tile& dst, const ConvTile& src, int64_t pos_m, int64_t pos_k) {
  pypto_timg2col(&dst, &src, &src.geom, pos_m, pos_k);
}

// ---- op families beyond the tutorial set (see abi.h) ----------------------------------
inline void TRSQRT(const Tile& d, const Tile& a) { pypto_tmath(PYPTO_RSQRT, &d, &a); }
inline void TSIN(const Tile& d, const Tile& a) { pypto_tmath(PYPTO_SIN, &d, &a); }
inline void TCOS(const Tile& d, const Tile& a) { pypto_tmath(PYPTO_COS, &d, &a); }
inline void TCMP(const Tile& d, const Tile& a, const Tile& b, int32_t mode) {
  pypto_tcmp(mode, &d, &a, &b);
}
inline void TCMPS(const Tile& d, const Tile& a, double s, int32_t mode) {
  pypto_tcmps(mode, &d, &a, s);
}
inline void TSEL(const Tile& d, const Tile& mask, const Tile& a, const Tile& b) {
  pypto_tsel(&d, &mask, &a, &b);
}
inline void TCOLSUM(const Tile& d, const Tile& s) { pypto_tcolreduce(PYPTO_RSUM, &d, &s); }
inline void TCOLMAX(const Tile& d, const Tile& s) { pypto_tcolreduce(PYPTO_RMAX, &d, &s); }
inline void TCOLMIN(const Tile& d, const Tile& s) { pypto_tcolreduce(PYPTO_RMIN, &d, &s); }
inline void TROWEXPAND(const Tile& d, const Tile& v) { pypto_tbroadcast(1, &d, &v); }
inline void TCOLEXPAND(const Tile& d, const Tile& v) { pypto_tbroadcast(0, &d, &v); }
#define PYPTO_BITWISE(NAME, OP)                                   \
  inline void NAME(const Tile& d, const Tile& a, const Tile& b) { \
    pypto_tbitwise(OP, &d, &a, &b);                               \
  }                                                               \
  inline void NAME##S(const Tile& d, const Tile& a, int64_t s) {  \
    pypto_tbitwise_scalar(OP, &d, &a, s);                         \
  }
PYPTO_BITWISE(TAND, PYPTO_AND)
PYPTO_BITWISE(TOR, PYPTO_OR)
PYPTO_BITWISE(TXOR, PYPTO_XOR)
PYPTO_BITWISE(TSHL, PYPTO_SHL)
PYPTO_BITWISE(TSHR, PYPTO_SHR)
#undef PYPTO_BITWISE
inline void TNOT(const Tile& d, const Tile& a) { pypto_tnot(&d, &a); }
template <int N>
inline double TREAD(Tensor t, const int64_t (&idx)[N]) {
  return pypto_tensor_read(t.desc, idx, N);
}
template <int N>
inline void TWRITE(Tensor t, const int64_t (&idx)[N], double v) {
  pypto_tensor_write(t.desc, idx, N, v);
}
template <int N>
inline double TREAD(const Tile& t, const int64_t (&idx)[N]) {
  return pypto_tile_read(&t, idx, N);
}
template <int N>
inline void TWRITE(const Tile& t, const int64_t (&idx)[N], double v) {
  pypto_tile_write(&t, idx, N, v);
}
inline void TMOV_ROW_VECTOR(const Tile& d, const Tile& s) { pypto_tmov_row_vector(&d, &s); }
inline void TGEMV(const Tile& acc, const Tile& left, const Tile& right) {
  pypto_tgemv(&acc, &left, &right, 0);
}
inline void TGEMV_ACC(const Tile& acc, const Tile& left, const Tile& right) {
  pypto_tgemv(&acc, &left, &right, 1);
}
inline void TMATMUL_BIAS(const Tile& acc, const Tile& left, const Tile& right, const Tile& bias) {
  pypto_tmatmul_bias(&acc, &left, &right, &bias);
}
inline void TGEMV_BIAS(const Tile& acc, const Tile& left, const Tile& right, const Tile& bias) {
  pypto_tgemv_bias(&acc, &left, &right, &bias);
}

// ---- batched (rank-3) tiles: B [R, C] matrices stacked by rows -------------------------
inline void TLOAD_BATCH(const Tile& dst, Tensor src, int64_t b0, int64_t row0, int64_t col0,
                        int32_t batches) {
  pypto_tload_batch(&dst, src.desc, b0, row0, col0, batches);
}
inline void TSTORE_BATCH(Tensor dst, int64_t b0, int64_t row0, int64_t col0, const Tile& src,
                         int32_t batches, bool atomic_add = false) {
  pypto_tstore_batch(dst.desc, b0, row0, col0, &src, batches, atomic_add);
}
// acc[b] (+)= left[b] x right[b] for b < batches: one TMATMUL per batch on row windows of the
// stacks (an operand of one batch is used for every b). Batches sit on the 16-row fractal grid.
inline void TMATMUL_BATCH(const Tile& acc, const Tile& left, const Tile& right, int32_t batches,
                          int32_t left_batches, int32_t right_batches, bool a_trans, bool b_trans,
                          bool accumulate) {
  const int32_t lr = left.rows / left_batches, rr = right.rows / right_batches,
                ar = acc.rows / batches;
  for (int32_t b = 0; b < batches; ++b) {
    const Tile l = left_batches == 1 ? left : TWINDOW(left, b * lr, 0, lr, left.cols);
    const Tile r = right_batches == 1 ? right : TWINDOW(right, b * rr, 0, rr, right.cols);
    const Tile a = TWINDOW(acc, b * ar, 0, ar, acc.cols);
    pypto_tmatmul(&a, &l, &r, a_trans, b_trans, accumulate);
  }
}

}  // namespace pypto

// The op families' spellings (TSORT32, TGATHER, ...), generated from their tables
// (pypto/ops/*.py) by the build.
#include "pypto/families.hpp"
