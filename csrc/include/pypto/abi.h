// The C ABI between kernels and the native ISA library (libpypto_sim).
//
// Kernels never touch simulated memory themselves: every operation is a call into this ABI,
// which checks its operands, performs the effect on simulated memory and records the
// instruction on the current core's timing model. Errors are thrown as C++ exceptions
// (pypto::SimError) through these functions and surface in Python as typed PyptoErrors.
#pragma once
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PYPTO_ABI_VERSION 2
#define PYPTO_MAX_DIMS 4

// Element types (values are stable: they cross the Python boundary).
enum pypto_dtype {
  PYPTO_FP32 = 0,
  PYPTO_FP16 = 1,
  PYPTO_BF16 = 2,
  PYPTO_INT32 = 3,
  PYPTO_INT8 = 4,
  PYPTO_INT16 = 5,
  PYPTO_INT64 = 6,
  PYPTO_UINT8 = 7,
  PYPTO_BOOL = 8,
  PYPTO_UINT32 = 9,  // the index half of sort pairs
  PYPTO_NUM_DTYPES = 10
};

// Memory spaces. GM is the user's buffers; the rest are per-core byte arrays.
enum pypto_mem {
  PYPTO_GM = 0,
  PYPTO_VEC = 1,
  PYPTO_MAT = 2,
  PYPTO_LEFT = 3,
  PYPTO_RIGHT = 4,
  PYPTO_ACC = 5,
  PYPTO_BIAS = 6,
  PYPTO_NUM_MEM = 7
};

// Pipes, in dataflow order. PYPTO_PIPE_ALL is only valid for pipe_barrier.
enum pypto_pipe {
  PYPTO_MTE2 = 0,
  PYPTO_MTE1 = 1,
  PYPTO_CUBE = 2,
  PYPTO_VECTOR = 3,
  PYPTO_FIXPIPE = 4,
  PYPTO_MTE3 = 5,
  PYPTO_SCALAR = 6,
  PYPTO_NUM_PIPES = 7,
  PYPTO_PIPE_ALL = 8
};

enum pypto_binary_op {
  PYPTO_ADD = 0,
  PYPTO_SUB = 1,
  PYPTO_MUL = 2,
  PYPTO_DIV = 3,
  PYPTO_MAX = 4,
  PYPTO_MIN = 5
};
enum pypto_unary_op {
  PYPTO_EXP = 0,
  PYPTO_LOG = 1,
  PYPTO_SQRT = 2,
  PYPTO_RECIP = 3,
  PYPTO_RELU = 4,
  PYPTO_NEG = 5,
  PYPTO_ABS = 6,
  PYPTO_COPY = 7
};
enum pypto_reduce_op { PYPTO_RSUM = 0, PYPTO_RMAX = 1, PYPTO_RMIN = 2 };
// AWAY rounds half away from zero (float -> integer; float -> float narrowing stays RINT).
enum pypto_round_mode {
  PYPTO_ROUND_RINT = 0,
  PYPTO_ROUND_TRUNC = 1,
  PYPTO_ROUND_FLOOR = 2,
  PYPTO_ROUND_CEIL = 3,
  PYPTO_ROUND_AWAY = 4
};

// A GM tensor as the runtime passes it: args[i] for a tensor parameter points at one.
typedef struct pypto_tensor {
  void* data;
  int32_t dtype;  // pypto_dtype
  int32_t ndim;
  int64_t shape[PYPTO_MAX_DIMS];
  int64_t strides[PYPTO_MAX_DIMS];  // in elements
  int32_t flags;                    // pypto_tensor_flags: how the kernel may use the tensor
  int32_t index;  // position in the launch's tensor list (names it in errors); -1 unknown
} pypto_tensor;

// A tensor with either flag is read-only to the kernel: every ABI call that writes a tensor
// (its parameter is named dst) refuses it.
enum pypto_tensor_flags {
  PYPTO_TENSOR_INPUT = 1,     // declared an input (not pl.Out/pl.InOut, not in outputs=)
  PYPTO_TENSOR_READONLY = 2,  // the caller's memory itself is read-only (flags, memmap)
};

// A tile: an address + shape + dtype in one on-chip space. Storage is row-major with a row
// pitch of `cols` elements; ops act on the valid region [valid_rows, valid_cols].
typedef struct pypto_tile {
  int32_t mem;    // pypto_mem
  int32_t dtype;  // pypto_dtype
  int64_t addr;   // byte offset inside the space
  int32_t rows, cols;
  int32_t valid_rows, valid_cols;
} pypto_tile;

// Source location of the statements that follow ("file.py:12:5"); the string must outlive
// the run (generated kernels pass string literals).
void pypto_set_loc(const char* loc);

// Transfers. The GM window is [row0, row0 + valid_rows) x [col0, col0 + valid_cols) of the
// tensor's last two dims (leading dims, if any, are indexed by `lead`).
void pypto_tload(const pypto_tile* dst, const pypto_tensor* src, int64_t row0, int64_t col0);
void pypto_tstore(const pypto_tensor* dst, int64_t row0, int64_t col0, const pypto_tile* src,
                  int32_t atomic_add);
void pypto_tmov(const pypto_tile* dst, const pypto_tile* src);

// Vector ops (all operands in Vec).
void pypto_tbinary(int32_t op, const pypto_tile* dst, const pypto_tile* a, const pypto_tile* b);
void pypto_tbinary_scalar(int32_t op, const pypto_tile* dst, const pypto_tile* a, double s);
void pypto_tunary(int32_t op, const pypto_tile* dst, const pypto_tile* a);
void pypto_texpands(const pypto_tile* dst, double value);
void pypto_tcvt(const pypto_tile* dst, const pypto_tile* src, int32_t round_mode);
// dst[M,1] = reduce over each row of src[M,N]; tmp is scratch of src's shape and dtype.
void pypto_trowreduce(int32_t op, const pypto_tile* dst, const pypto_tile* src,
                      const pypto_tile* tmp);
// dst[M,N] = a[M,N] op v[M,1] (row broadcast) / a[M,N] op v[1,N] (column broadcast).
void pypto_trowexpand(int32_t op, const pypto_tile* dst, const pypto_tile* a, const pypto_tile* v);
void pypto_tcolexpand(int32_t op, const pypto_tile* dst, const pypto_tile* a, const pypto_tile* v);

// Cube path. TMOV routes: Vec->Vec (VECTOR), Mat->Left/Right/Bias (MTE1, into the fractal
// layouts of L0A/L0B), Acc->Mat (FIXPIPE, may narrow fp32 to fp16/bf16); a5 adds Vec->Mat
// (MTE3) and Acc->Vec (FIXPIPE). TSTORE also takes an Acc tile (FIXPIPE, may narrow).
// acc[M,N] (+)= op(left) x op(right) on CUBE, fp32 accumulate; op = transpose when *_trans
// (left is then stored [K,M], right [N,K]).
void pypto_tmatmul(const pypto_tile* acc, const pypto_tile* left, const pypto_tile* right,
                   int32_t a_trans, int32_t b_trans, int32_t accumulate);

// Synchronisation between pipes.
void pypto_set_flag(int32_t src_pipe, int32_t dst_pipe, int32_t event_id);
void pypto_wait_flag(int32_t src_pipe, int32_t dst_pipe, int32_t event_id);
void pypto_pipe_barrier(int32_t pipe);

// Storage placed when the kernel starts (the PTOAS planner): region i is `slots` slots of
// `slot_bytes` in space `mem`. Regions are placed first fit per space, in order, at the
// platform's alignment and never overlapping; base_out[i] receives region i's byte offset.
// Going past a space's capacity throws, naming the space and the regions.
typedef struct pypto_region {
  int32_t mem;  // pypto_mem (an on-chip space)
  int32_t slots;
  int64_t slot_bytes;
  const char* name;  // the declaration, for errors
} pypto_region;
void pypto_place_regions(const pypto_region* regions, int32_t n, int64_t* base_out);
// Slot `index` of a slotted buffer at `base`; an index outside [0, slots) throws naming `name`.
int64_t pypto_slot_address(int64_t base, int64_t index, int32_t slots, int64_t slot_bytes,
                           const char* name);

// Integer // and % by zero in kernel scalar code: throws naming `op` and the current line.
void pypto_zero_division(const char* op);

// Multi-core launches: which block this core runs, out of how many.
int64_t pypto_block_idx(void);
int64_t pypto_block_num(void);

// Cluster kernels: launched on one AIC and its AIVs together (run_kernel(core="cluster")).
// Inside a cluster, cores are peers: an AIC addresses AIV `peer` (0, 1 on a2a3), an AIV its
// AIC as peer 0.
int32_t pypto_core_kind(void);     // 1 on the AIC, 0 on an AIV
int32_t pypto_subblock_idx(void);  // the AIV's index in its cluster (0 on the AIC)
// Cross-core flags: `pipe` of this core sets flag `id` toward `peer` when it reaches the set;
// a wait blocks `pipe` until the peer's matching set (each set is consumed by one wait).
void pypto_cross_set(int32_t peer, int32_t pipe, int32_t id);
void pypto_cross_wait(int32_t peer, int32_t pipe, int32_t id);
// Tile pipes: push a tile into the ring toward `peer` (AIC: an Acc tile; AIV: a Vec tile),
// pop the oldest tile from `peer`'s ring into `dst` (AIC: Mat; AIV: Vec), free the oldest
// popped slot so the producer may reuse it. `id` picks one of the pipes between the two
// cores (each its own ring; ids below the platform's cross_flag_ids).
void pypto_tpush(int32_t peer, int32_t id, const pypto_tile* src);
void pypto_tpop(int32_t peer, int32_t id, const pypto_tile* dst);
void pypto_tfree(int32_t peer, int32_t id);
// The depth (slots) of the ring toward `peer` on pipe `id`, declared by its producer before a
// push; 0 keeps the platform's tpipe_slots. A ring keeps the depth of its first push.
void pypto_tpipe_depth(int32_t peer, int32_t id, int32_t slots);

// ---- windowed moves and layout ops ------------------------------------------------------
// TEXTRACT: dst (its whole valid shape) = the window of src starting at (row0, col0).
// TINSERT: the window of dst starting at (row0, col0) = src (its valid shape).
// Routes: Mat -> Left/Right (MTE1, the L1 -> L0 extract into the fractal layouts; window
// offsets on L1's 16 x c0 fractal grid, c0 = 32 B / element size), Acc -> Mat (FIXPIPE, may
// narrow fp32 to fp16/bf16; offsets on L0C's 16 x 16 grid), Vec -> Vec (VECTOR copy); a5
// adds Acc -> Vec (FIXPIPE) and Vec -> Mat (MTE3).
void pypto_textract(const pypto_tile* dst, const pypto_tile* src, int64_t row0, int64_t col0);
void pypto_tinsert(const pypto_tile* dst, int64_t row0, int64_t col0, const pypto_tile* src);
// TTRANS: dst[c, r] = src[r, c] (Vec, VECTOR; not in place).
void pypto_ttrans(const pypto_tile* dst, const pypto_tile* src);
// TFILLPAD: dst = src inside src's valid region and the pad value over the rest of dst's
// valid region (Vec, VECTOR; dst may be src's storage).
enum pypto_pad { PYPTO_PAD_ZERO = 0, PYPTO_PAD_MAX = 1, PYPTO_PAD_MIN = 2 };
void pypto_tfillpad(const pypto_tile* dst, const pypto_tile* src, int32_t pad_mode);
// TRESHAPE: dst is src's storage seen with another shape (Vec/Mat/Acc, row-major, fully
// valid, same element count). No data moves and no instruction issues; it only checks.
void pypto_treshape(const pypto_tile* dst, const pypto_tile* src);
// TWINDOW: *out = the rows x cols window of src at (row0, col0) as a tile sharing src's
// storage (no data moves, no instruction). Row-major spaces: any window starting on the
// platform alignment (out keeps src's row pitch; its valid region is the window). Left/Right:
// whole-width row bands on the 16-row fractal grid.
void pypto_twindow(pypto_tile* out, const pypto_tile* src, int64_t row0, int64_t col0, int32_t rows,
                   int32_t cols);

// ---- convolution: the img2col load --------------------------------------------------------
// A feature map in L1 in NC1HWC0 order (one image): channels / c0 planes of fmap_h x fmap_w
// pixels of c0 channels each (c0 = 32 B / element size), element (c1, h, w, c) at
// ((c1 * fmap_h + h) * fmap_w + w) * c0 + c of a row-major Mat tile, and the convolution that
// reads it. SETFMATRIX loads the fmap size and padding into the core's fmatrix register (a
// scalar instruction); TIMG2COL takes them from there and the filter, stride, dilation and
// channel count from its own operand, as the hardware's manual-fmatrix mode does.
typedef struct pypto_conv_geom {
  int32_t fmap_h, fmap_w;                            // the register: fmap size ...
  int32_t pad_left, pad_right, pad_top, pad_bottom;  // ... and padding (pixels)
  int32_t filter_h, filter_w, stride_h, stride_w, dilation_h, dilation_w;
  int32_t channels;  // channels the fmap holds (c0 multiple)
} pypto_conv_geom;
void pypto_setfmatrix(const pypto_conv_geom* g);
// TIMG2COL: dst (Left, its valid shape [M, K]) = rows pos_m .. of the fmap's img2col matrix,
// columns pos_k ..: row p is output pixel (p / wout, p % wout) of the slab (wout from the
// register's width and padding), column k is (c1, kh, kw, c) in that order (k = ((c1 * kh_n +
// kh) * kw_n + kw) * c0 + c, the order of the FRACTAL_Z weights it multiplies); a pixel in the
// padding reads 0. Runs on MTE1 (the L1 -> L0A path).
void pypto_timg2col(const pypto_tile* dst, const pypto_tile* src, const pypto_conv_geom* g,
                    int64_t pos_m, int64_t pos_k);

// ---- op families beyond the tutorial set ----------------------------------------------
// Element-wise math (all operands in Vec; fp32 / fp16 / bf16, correctly rounded from a double
// evaluation).
enum pypto_math_op { PYPTO_RSQRT = 0, PYPTO_SIN = 1, PYPTO_COS = 2 };
void pypto_tmath(int32_t op, const pypto_tile* dst, const pypto_tile* a);
// Compare: dst (bool, 1 byte per element) = a cmp b / a cmp s. Modes as upstream PyPTO.
enum pypto_cmp_mode {
  PYPTO_CMP_EQ = 0,
  PYPTO_CMP_NE = 1,
  PYPTO_CMP_LT = 2,
  PYPTO_CMP_LE = 3,
  PYPTO_CMP_GT = 4,
  PYPTO_CMP_GE = 5
};
void pypto_tcmp(int32_t mode, const pypto_tile* dst, const pypto_tile* a, const pypto_tile* b);
void pypto_tcmps(int32_t mode, const pypto_tile* dst, const pypto_tile* a, double s);
// Select: dst = mask ? a : b, element by element (mask is a bool tile of the same shape).
void pypto_tsel(const pypto_tile* dst, const pypto_tile* mask, const pypto_tile* a,
                const pypto_tile* b);
// dst[1,N] = reduce over the rows of src[M,N] (pypto_reduce_op), row by row in src's dtype.
void pypto_tcolreduce(int32_t op, const pypto_tile* dst, const pypto_tile* src);
// dst[M,N] = v[M,1] broadcast along each row (by_row) or v[1,N] down each column.
void pypto_tbroadcast(int32_t by_row, const pypto_tile* dst, const pypto_tile* v);
// Bitwise ops on integer tiles. Shifts: shl keeps the low bits, shr is arithmetic on signed
// dtypes and logical on uint8; a count >= the bit width shifts everything out; < 0 throws.
enum pypto_bitwise_op { PYPTO_AND = 0, PYPTO_OR = 1, PYPTO_XOR = 2, PYPTO_SHL = 3, PYPTO_SHR = 4 };
void pypto_tbitwise(int32_t op, const pypto_tile* dst, const pypto_tile* a, const pypto_tile* b);
void pypto_tbitwise_scalar(int32_t op, const pypto_tile* dst, const pypto_tile* a, int64_t s);
void pypto_tnot(const pypto_tile* dst, const pypto_tile* a);
// Scalar access on the SCALAR pipe: element idx[0..n) of a GM tensor or an on-chip tile,
// as double (exact for every dtype but int64 beyond 2^53); writes round like a scalar store.
double pypto_tensor_read(const pypto_tensor* src, const int64_t* idx, int32_t n);
void pypto_tensor_write(const pypto_tensor* dst, const int64_t* idx, int32_t n, double v);
double pypto_tile_read(const pypto_tile* t, const int64_t* idx, int32_t n);
void pypto_tile_write(const pypto_tile* t, const int64_t* idx, int32_t n, double v);
// Cube: acc = left x right + bias[1,N] (bias in the Bias table, fp32), one mad on CUBE.
void pypto_tmatmul_bias(const pypto_tile* acc, const pypto_tile* left, const pypto_tile* right,
                        const pypto_tile* bias);
// Matrix-vector: acc[1,N] (+)= left[1,K] x right[K,N]; a [1,K] Left row vector is placed
// row-major by its own MTE1 move (Mat -> Left).
void pypto_tmov_row_vector(const pypto_tile* dst, const pypto_tile* src);
void pypto_tgemv(const pypto_tile* acc, const pypto_tile* left, const pypto_tile* right,
                 int32_t accumulate);
// acc[1,N] = left[1,K] x right[K,N] + bias[1,N] (bias in the Bias table, fp32), one mad.
void pypto_tgemv_bias(const pypto_tile* acc, const pypto_tile* left, const pypto_tile* right,
                      const pypto_tile* bias);
// Batched (rank-3) transfers: the window [b0, b0+B) x [row0, row0+R) x [col0, col0+C) of a 3-D
// tensor <-> a tile stacking the B [R, C] matrices by rows; one 2-D transfer per batch.
void pypto_tload_batch(const pypto_tile* dst, const pypto_tensor* src, int64_t b0, int64_t row0,
                       int64_t col0, int32_t batches);
void pypto_tstore_batch(const pypto_tensor* dst, int64_t b0, int64_t row0, int64_t col0,
                        const pypto_tile* src, int32_t batches, int32_t atomic_add);

#ifdef __cplusplus
}
#endif

// The op families' entry points, declared from their tables (pypto/ops/*.py) by the build.
#include "pypto/families.h"
