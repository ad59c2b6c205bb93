// Loads a built kernel shared object and finds its entry point.
#pragma once
#include <cstdint>
#include <string>

namespace pypto {

using KernelEntry = void (*)(int64_t* args);

// dlopens `path` (kept loaded for the process: entries are content-addressed, so a path
// never changes meaning) and returns its `kernel_entry`. Throws SimError(kLoad).
KernelEntry load_kernel(const std::string& path);

// Loads `path`, checks it exports `kernel_entry` and unloads it: the check a build passes
// before it is published. Returns "" or why the file does not load. Nothing stays mapped,
// so the file can be replaced afterwards.
std::string probe_kernel(const std::string& path);

}  // namespace pypto
