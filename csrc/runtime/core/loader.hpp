// Loads a built kernel shared object and finds its entry point.
#pragma once
#include <cstdint>
#include <string>

namespace pypto {

using KernelEntry = void (*)(int64_t* args);

// dlopens `path` (kept loaded for the process: entries are content-addressed, so a path
// never changes meaning) and returns its `kernel_entry`. Throws SimError(kLoad).
KernelEntry load_kernel(const std::string& path);

}  // namespace pypto
