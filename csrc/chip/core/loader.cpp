#include "chip/core/loader.hpp"

#include <dlfcn.h>

#include <map>
#include <mutex>

#include "simulator/errors.hpp"

namespace pypto {

KernelEntry load_kernel(const std::string& path) {
  static std::mutex mu;
  static std::map<std::string, KernelEntry> loaded;
  std::lock_guard<std::mutex> lock(mu);
  auto it = loaded.find(path);
  if (it != loaded.end()) return it->second;
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* err = dlerror();
    throw SimError(ErrorKind::kLoad,
                   "cannot load kernel " + path + ": " + (err ? err : "unknown error"));
  }
  void* sym = dlsym(handle, "kernel_entry");
  if (sym == nullptr) {
    dlclose(handle);
    throw SimError(ErrorKind::kLoad, "kernel " + path +
                                         " does not export `extern \"C\" void kernel_entry(__gm__ "
                                         "int64_t* args)`");
  }
  auto entry = reinterpret_cast<KernelEntry>(sym);
  loaded.emplace(path, entry);
  return entry;
}

std::string probe_kernel(const std::string& path) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* err = dlerror();
    return err ? err : "unknown error";
  }
  const bool has_entry = dlsym(handle, "kernel_entry") != nullptr;
  dlclose(handle);
  return has_entry ? ""
                   : "it does not export `extern \"C\" void kernel_entry(__gm__ int64_t* args)`";
}

}  // namespace pypto
