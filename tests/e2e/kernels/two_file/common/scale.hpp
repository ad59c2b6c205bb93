// A helper in a sibling folder, reached by a relative #include from the entry file.
#pragma once
#include <pypto/kernel.hpp>

#include "offset.hpp"  // found through include_dirs

inline void scale_and_offset(const pypto::Tile& t) {
  pypto::TMULS(t, t, 3.0);
  pypto::TADDS(t, t, kOffset);
}
