// What an ISA op tells the timing model about one instruction: its class and the sizes that
// its cost depends on. The cost model (cost_model.hpp) turns a description into cycles from
// the platform table; GM transfers also go through the memory system. No ISA file computes
// a cycle count.
#pragma once
#include <cstdint>

namespace pypto {

enum class OpClass : uint8_t {
  kFixed,      // a given cycle count (core-model unit tests drive the model directly)
  kSync,       // set_flag / wait_flag / pipe_barrier
  kGmRead,     // GM -> Vec/Mat (MTE2)
  kGmWrite,    // Vec -> GM (MTE3)
  kFixpipeGm,  // Acc -> GM (FIXPIPE, may narrow)
  kFixpipe,    // Acc -> Mat/Vec on chip (FIXPIPE)
  kLocalMove,  // on-chip copy at a route's bandwidth (MTE1 into L0A/L0B, Vec -> Mat)
  kVector,     // vector instruction over `bytes` of its widest operand
  kRowReduce,  // vector row reduction: a streaming pass plus a fold per row
  kMatmul,     // one mad: m x k x n
  kScalar,     // a scalar-unit access (cost: one issue slot)
  // Tile transpose on VECTOR. assumption (no public per-op figure): a gather pass and a
  // write-back pass at the unary copy rate, plus one repeat per source row (the row scatter).
  kTranspose,
  kSort,          // sort of rows of `rows` elements in blocks of `k` (0: whole rows)
  kScalarAccess,  // one element read or written by the scalar unit (`link` kGmToUb: in GM)
};

// Which vector cost row of the platform table an op uses.
enum class VecClass : uint8_t {
  kBinary,
  kUnary,
  kExp,
  kDiv,
  kReduce,
  kCvt,
  kCmp,
  kSel,
  kBitwise,
  kTrig,
  kGather,
  kSort,
  kAdd,
  kCopy,
  kGatherMask  // TGATHER's mask form: the copy row (pto-isa profile: SortSteps)
};

// Which bandwidth of the platform table a transfer runs at.
enum class Link : uint8_t {
  kGmToUb,
  kGmToL1,
  kUbToGm,
  kL1ToL0a,
  kL1ToL0b,
  kL0cToGm,
  kUbToUb,
  kL0cToL1
};

// What a row reduction computes (kOther: an index reduction, priced as a plain reduction).
enum class RowReduceKind : uint8_t { kOther, kSum, kMax, kMin };

struct OpDesc {
  OpClass cls = OpClass::kFixed;
  VecClass vec = VecClass::kUnary;
  Link link = Link::kGmToUb;
  RowReduceKind reduce = RowReduceKind::kOther;  // kRowReduce: its kind
  int64_t bytes = 0;                             // bytes moved or processed
  int64_t rows = 0;                              // rows of a transfer / reduction / FIXPIPE drain
  int64_t row_bytes = 0;                         // bytes per row of a GM transfer / reduction
  int64_t acc_row_bytes = 0;                     // FIXPIPE: L0C bytes of one drained row
  int64_t m = 0, k = 0, n = 0, in_esize = 0;     // matmul (in_esize: also a reduction's element
                                                 // and a TIMG2COL's, kLocalMove)
                                                 // k: a kSort's block; a merge's (VecClass::kSort)
                                                 // groups of four runs, 0 for a merge of lists
  uint64_t cycles = 0;                           // kFixed only
  bool atomic = false;  // a GM write that accumulates (atomic adds commute: never a race)

  static OpDesc fixed(uint64_t c) {
    OpDesc d;
    d.cycles = c;
    return d;
  }
  bool operator==(const OpDesc& o) const {
    return cls == o.cls && vec == o.vec && link == o.link && reduce == o.reduce &&
           bytes == o.bytes && rows == o.rows && row_bytes == o.row_bytes &&
           acc_row_bytes == o.acc_row_bytes && m == o.m && k == o.k && n == o.n &&
           in_esize == o.in_esize && cycles == o.cycles && atomic == o.atomic;
  }
  // (Compare every field: the core model reuses the cost of an equal description.)
  bool touches_gm() const {
    return cls == OpClass::kGmRead || cls == OpClass::kGmWrite || cls == OpClass::kFixpipeGm;
  }
};

static_assert(sizeof(OpDesc) == 88, "a new OpDesc field must join operator==");

}  // namespace pypto
