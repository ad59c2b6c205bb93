// What one kernel instance leaves behind (its core's timing, records and hazards), and the
// ABI argument array a kernel_entry receives. The chip scheduler (scheduler.hpp) runs them.
#pragma once
#include <cstdint>
#include <vector>

#include "chip/core/loader.hpp"
#include "pypto/abi.h"
#include "simulator/core_model.hpp"

namespace pypto {

struct BlockResult {
  int64_t block = 0;
  CoreStats stats;
  RecordTable records;
  std::vector<Hazard> hazards;
  uint64_t hazard_count = 0;
};

// The ABI argument array: one pointer per tensor descriptor, then the scalar slots.
std::vector<int64_t> abi_args(std::vector<pypto_tensor>& descs,
                              const std::vector<int64_t>& scalars);
// The same array written into `args` (its storage kept: a reused kernel instance's).
void abi_args(std::vector<pypto_tensor>& descs, const std::vector<int64_t>& scalars,
              std::vector<int64_t>& args);

}  // namespace pypto
