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
};

// Memory spaces. GM is the user's buffers; the rest are per-core byte arrays.
enum pypto_mem { PYPTO_GM = 0, PYPTO_VEC = 1, PYPTO_MAT = 2, PYPTO_LEFT = 3, PYPTO_RIGHT = 4,
                 PYPTO_ACC = 5, PYPTO_BIAS = 6, PYPTO_NUM_MEM = 7 };

// Pipes, in dataflow order. PYPTO_PIPE_ALL is only valid for pipe_barrier.
enum pypto_pipe { PYPTO_MTE2 = 0, PYPTO_MTE1 = 1, PYPTO_CUBE = 2, PYPTO_VECTOR = 3,
                  PYPTO_FIXPIPE = 4, PYPTO_MTE3 = 5, PYPTO_SCALAR = 6, PYPTO_NUM_PIPES = 7,
                  PYPTO_PIPE_ALL = 8 };

enum pypto_binary_op { PYPTO_ADD = 0, PYPTO_SUB = 1, PYPTO_MUL = 2, PYPTO_DIV = 3,
                       PYPTO_MAX = 4, PYPTO_MIN = 5 };
enum pypto_unary_op { PYPTO_EXP = 0, PYPTO_LOG = 1, PYPTO_SQRT = 2, PYPTO_RECIP = 3,
                      PYPTO_RELU = 4, PYPTO_NEG = 5, PYPTO_ABS = 6, PYPTO_COPY = 7 };
enum pypto_reduce_op { PYPTO_RSUM = 0, PYPTO_RMAX = 1, PYPTO_RMIN = 2 };
enum pypto_round_mode { PYPTO_ROUND_RINT = 0, PYPTO_ROUND_TRUNC = 1, PYPTO_ROUND_FLOOR = 2,
                        PYPTO_ROUND_CEIL = 3 };

// A GM tensor as the runtime passes it: args[i] for a tensor parameter points at one.
typedef struct pypto_tensor {
  void* data;
  int32_t dtype;  // pypto_dtype
  int32_t ndim;
  int64_t shape[PYPTO_MAX_DIMS];
  int64_t strides[PYPTO_MAX_DIMS];  // in elements
  int32_t flags;  // pypto_tensor_flags: how the kernel may use the tensor
  int32_t index;  // position in the launch's tensor list (names it in errors); -1 unknown
} pypto_tensor;

// A tensor with either flag is read-only to the kernel: TSTORE into it is refused.
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
void pypto_trowexpand(int32_t op, const pypto_tile* dst, const pypto_tile* a,
                      const pypto_tile* v);
void pypto_tcolexpand(int32_t op, const pypto_tile* dst, const pypto_tile* a,
                      const pypto_tile* v);

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

#ifdef __cplusplus
}
#endif
