// A tile operand after its checks: where its bytes are and how they are laid out. Kept apart
// from the checks so a core context can hold the views it has checked.
#pragma once
#include <cstdint>

#include "pypto/abi.h"
#include "simulator/hazard.hpp"

namespace pypto::isa {

// A checked tile: where its bytes are and how they are laid out.
struct TileView {
  uint8_t* data;  // first element of the tile in simulated memory
  int64_t esize;  // bytes per element
  int64_t rows, cols, valid_rows, valid_cols;
  int dtype, mem;
  int64_t addr;

  uint8_t* row(int64_t r) const { return data + r * cols * esize; }
  bool full_rows() const { return valid_cols == cols; }
  int64_t valid_elems() const { return valid_rows * valid_cols; }
  int64_t valid_bytes() const { return valid_elems() * esize; }
  Access access(bool write) const {
    return {mem, addr, valid_rows, valid_cols * esize, cols * esize, write};
  }
};

// The operands of a one-input elementwise op (dst = op(a), both Vec tiles) as last checked on a
// core: the descriptors' addresses and bytes, the views, the op's size and its access list. The
// checks depend only on these bytes, the op and the platform, so an op finding its descriptors
// unchanged uses the views and the list as they are (checks.hpp: check_one_input).
struct OneInputOperands {
  int32_t op = -1;  // the op's family and code (one_input_op); -1 while unused
  const pypto_tile* dst = nullptr;
  const pypto_tile* a = nullptr;
  pypto_tile dst_desc{}, a_desc{};
  TileView d{}, x{};
  int64_t bytes = 0;      // d.valid_bytes()
  AccessList accesses{};  // a read, dst written
};

}  // namespace pypto::isa
