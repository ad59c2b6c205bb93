// Hardware facts that do not vary by platform: pipe and memory-space names, dtype codes and
// sizes, the flag encoding's event-id capacity. Defined once here; Python reads them through
// the bindings (pypto._native.hardware_facts) instead of restating them.
#pragma once
#include <cstddef>

#include "pypto/abi.h"

namespace pypto::hw {

// Pipes in dataflow order, as the report names them ...
inline constexpr const char* kPipeNames[PYPTO_NUM_PIPES] = {"MTE2",    "MTE1", "CUBE",  "VECTOR",
                                                            "FIXPIPE", "MTE3", "SCALAR"};
// ... and as AscendC's flag arguments spell them (PIPE_M, PIPE_V, ...), used in traces.
inline constexpr const char* kFlagPipeNames[PYPTO_NUM_PIPES] = {"MTE2", "MTE1", "M", "VEC",
                                                                "FIX",  "MTE3", "S"};

inline constexpr const char* kMemNames[PYPTO_NUM_MEM] = {"GM",    "Vec", "Mat", "Left",
                                                         "Right", "Acc", "Bias"};

// The on-chip spaces each core kind has: an AIV has UB (Vec) only; L1 (Mat), L0A/L0B/L0C
// (Left/Right/Acc) and the bias table are the AIC's, beside its cube.
inline constexpr bool kOnAic[PYPTO_NUM_MEM] = {false, false, true, true, true, true, true};
inline constexpr bool on_core(bool aic, int mem) { return mem > PYPTO_GM && kOnAic[mem] == aic; }

struct DType {
  int code;           // pypto_dtype
  const char* name;   // short name (errors, IR)
  const char* numpy;  // numpy's name for it (bfloat16: ml_dtypes)
  size_t size;        // bytes per element
};
inline constexpr DType kDTypes[] = {
    {PYPTO_FP32, "fp32", "float32", 4},  {PYPTO_FP16, "fp16", "float16", 2},
    {PYPTO_BF16, "bf16", "bfloat16", 2}, {PYPTO_INT32, "int32", "int32", 4},
    {PYPTO_INT8, "int8", "int8", 1},     {PYPTO_INT16, "int16", "int16", 2},
    {PYPTO_INT64, "int64", "int64", 8},  {PYPTO_UINT8, "uint8", "uint8", 1},
    {PYPTO_BOOL, "bool", "bool", 1},     {PYPTO_UINT32, "uint32", "uint32", 4},
};

// The on-chip routes a move takes (TMOV), each on one pipe. `windowed`: TEXTRACT/TINSERT take
// it too. `vec_mat`: only platforms with vec_mat_routes have it (a5; upstream PyPTO's
// Backend950 adds Vec->Mat and Acc->Vec). The order is the one errors list legal routes in.
struct Route {
  int src, dst, pipe;
  bool vec_mat;
  bool windowed;
};
inline constexpr Route kRoutes[] = {
    {PYPTO_MAT, PYPTO_LEFT, PYPTO_MTE1, false, true},
    {PYPTO_MAT, PYPTO_RIGHT, PYPTO_MTE1, false, true},
    {PYPTO_MAT, PYPTO_BIAS, PYPTO_MTE1, false, false},
    {PYPTO_ACC, PYPTO_MAT, PYPTO_FIXPIPE, false, true},
    {PYPTO_VEC, PYPTO_VEC, PYPTO_VECTOR, false, true},
    {PYPTO_ACC, PYPTO_VEC, PYPTO_FIXPIPE, true, true},
    {PYPTO_VEC, PYPTO_MAT, PYPTO_MTE3, true, true},
};

// A platform may declare at most this many event ids per pipe pair (and cross-core flag ids):
// the core model keeps a table of flag queues per (src pipe, dst pipe, id).
inline constexpr int kMaxEventIds = 64;
// The L2 model counts a set's filled ways in 8 bits (memory_system.cpp).
inline constexpr int kMaxL2Ways = 255;

}  // namespace pypto::hw
