// A tile operand after its checks: where its bytes are and how they are laid out. Kept apart
// from the checks so a core context can hold the views it has checked.
#pragma once
#include <cstdint>

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

}  // namespace pypto::isa
