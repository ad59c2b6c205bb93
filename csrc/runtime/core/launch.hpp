// Runs one kernel on simulated cores: binds GM tensors and scalars into the ABI's argument
// array, executes kernel_entry once per block on its own core, and collects each core's
// timing, records and hazards.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "pypto/abi.h"
#include "runtime/core/loader.hpp"
#include "simulator/core_model.hpp"
#include "simulator/platform/platform.hpp"

namespace pypto {

struct LaunchOptions {
  std::string kernel_name = "kernel";
  int64_t block_num = 1;
  bool record = false;        // keep per-instruction records
  bool hazards_fatal = true;  // a race is an error (HazardError) rather than a report line
  std::vector<GmGate> write_gates;  // GM ranges other tasks are still writing
};

struct BlockResult {
  int64_t block = 0;
  CoreStats stats;
  std::vector<InstrRecord> records;
  std::vector<Hazard> hazards;
  uint64_t hazard_count = 0;
};

struct AtomicWrite;

// One kernel execution on a fresh simulated core (atomic adds logged when `atomic_log`).
BlockResult run_on_core(KernelEntry entry, std::vector<int64_t>& args, const Platform& platform,
                        const LaunchOptions& o, int64_t block, std::vector<AtomicWrite>* atomic_log);
// The ABI argument array: one pointer per tensor descriptor, then the scalar slots.
std::vector<int64_t> abi_args(std::vector<pypto_tensor>& descs, const std::vector<int64_t>& scalars);

std::vector<BlockResult> launch(KernelEntry entry, const std::vector<pypto_tensor>& tensors,
                                const std::vector<int64_t>& scalars, const Platform& platform,
                                const LaunchOptions& options);

}  // namespace pypto
