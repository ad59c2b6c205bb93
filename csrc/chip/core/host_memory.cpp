#include "chip/core/host_memory.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>

#include "simulator/errors.hpp"

namespace pypto {
namespace {

constexpr int64_t kUnknown = INT64_MAX;

// A number from the first line of `path` that starts with `key` ("" = the first line), in
// `unit` bytes; kUnknown if there is no such file or line ("max" in a cgroup file).
int64_t read_figure(const char* path, const std::string& key, int64_t unit) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.compare(0, key.size(), key) != 0) continue;
    long long v = 0;
    if (std::sscanf(line.c_str() + key.size(), " %lld", &v) != 1) return kUnknown;
    return v > kUnknown / unit ? kUnknown : static_cast<int64_t>(v) * unit;
  }
  return kUnknown;
}

int64_t available_bytes() {
  int64_t avail = read_figure("/proc/meminfo", "MemAvailable:", 1024);
  const int64_t limit = read_figure("/sys/fs/cgroup/memory.max", "", 1);
  const int64_t used = read_figure("/sys/fs/cgroup/memory.current", "", 1);
  if (limit != kUnknown && used != kUnknown)
    avail = std::min(avail, std::max<int64_t>(limit - used, 0));
  rlimit as{};
  if (getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY) {  // ulimit -v
    const int64_t mapped = read_figure("/proc/self/status", "VmSize:", 1024);
    const int64_t cap = static_cast<int64_t>(std::min<rlim_t>(as.rlim_cur, kUnknown));
    if (mapped != kUnknown) avail = std::min(avail, std::max<int64_t>(cap - mapped, 0));
  }
  return avail;
}

std::string gib(int64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f GiB", static_cast<double>(bytes) / (1 << 30));
  return text;
}

// The largest space of the kind, as "field=value" plus " (a platform override)" when the
// value differs from the named table's.
std::string largest_field(const Platform& p, bool aic) {
  struct Field {
    const char* name;
    int64_t value, base;
  };
  const Platform* base = nullptr;
  try {
    base = &platform_by_name(p.name);
  } catch (const SimError&) {
  }
  auto of = [&](const char* name, int64_t Platform::*f) {
    return Field{name, p.*f, base ? base->*f : p.*f};
  };
  std::vector<Field> fields;
  if (aic) {
    fields = {of("l1_bytes", &Platform::l1_bytes), of("l0a_bytes", &Platform::l0a_bytes),
              of("l0b_bytes", &Platform::l0b_bytes), of("l0c_bytes", &Platform::l0c_bytes),
              of("bias_bytes", &Platform::bias_bytes)};
  } else {
    fields = {of("ub_bytes", &Platform::ub_bytes),
              of("ub_physical_bytes", &Platform::ub_physical_bytes)};
  }
  const Field& big =
      *std::max_element(fields.begin(), fields.end(),
                        [](const Field& a, const Field& b) { return a.value < b.value; });
  return std::string(big.name) + "=" + std::to_string(big.value) +
         (big.value != big.base ? " (a platform override)" : "");
}

}  // namespace

int64_t core_bytes(const Platform& p, bool aic) {
  if (!aic) return std::max(p.ub_physical_bytes, p.ub_bytes);
  return p.l1_bytes + p.l0a_bytes + p.l0b_bytes + p.l0c_bytes + p.bias_bytes;
}

bool check_host_memory(const std::vector<TaskSpec>& tasks, const Platform& p) {
  int64_t aiv = 0, aic = 0;  // instances the tasks start, per kind
  for (const TaskSpec& t : tasks) {
    aiv += t.kind == CoreKind::kAiv ? 1 : t.kind == CoreKind::kCluster ? p.aivs_per_cluster() : 0;
    aic += t.kind == CoreKind::kAiv ? 0 : 1;
  }
  const int64_t aiv_now = std::min<int64_t>(aiv, p.aiv_cores),
                aic_now = std::min<int64_t>(aic, p.aic_cores);
  const double need = static_cast<double>(aiv_now) * static_cast<double>(core_bytes(p, false)) +
                      static_cast<double>(aic_now) * static_cast<double>(core_bytes(p, true));
  // A few cores' worth is never refused: reading /proc costs more than such a run (a warm
  // call of a small kernel), and no host that runs the simulator lacks that much.
  constexpr double kUncheckedBytes = double{16 << 20};
  if (need <= kUncheckedBytes) return true;
  const int64_t avail = available_bytes();
  if (avail == kUnknown || need <= static_cast<double>(avail)) return false;
  const bool aic_heavy = static_cast<double>(aic_now) * static_cast<double>(core_bytes(p, true)) >
                         static_cast<double>(aiv_now) * static_cast<double>(core_bytes(p, false));
  const int64_t cores = aic_heavy ? aic_now : aiv_now;
  throw SimError(ErrorKind::kHostMemory,
                 "the simulated cores need " + gib(static_cast<int64_t>(need)) +
                     " of host memory, more than the " + gib(avail) +
                     " available: " + std::to_string(cores) + (aic_heavy ? " cube" : " vector") +
                     " cores run at once with " + gib(core_bytes(p, aic_heavy)) + " each (" +
                     largest_field(p, aic_heavy) +
                     "); lower that field, or run fewer blocks at once (fewer blocks, or the "
                     "platform override " +
                     (aic_heavy ? "aic_cores" : "aiv_cores") + ")");
}

}  // namespace pypto
