// The host memory a run's simulated cores need, checked before any core allocates.
#pragma once
#include <cstdint>
#include <vector>

#include "chip/core/scheduler.hpp"

namespace pypto {

// Bytes backing one core's on-chip spaces: an AIV's Vec buffer, an AIC's Mat, Left, Right,
// Acc and Bias (each allocated when first used, so this is the most a core can take).
int64_t core_bytes(const Platform& p, bool aic);

// Throws SimError(kHostMemory) when the cores that can run at once for `tasks` need more host
// memory than is available (MemAvailable, and the cgroup's limit when there is one), naming
// the platform field behind it, its value and whether it is an override of the named table.
// True when they need so little that no host is ever short of it: then the answer for these
// tasks and this platform never changes (a pooled run's later runs need not ask again).
bool check_host_memory(const std::vector<TaskSpec>& tasks, const Platform& p);

}  // namespace pypto
