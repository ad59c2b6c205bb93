// Storage placed when the kernel starts (the PTOAS planner) and checked slot selects.
#include <array>
#include <string>

#include "runtime/isa/checks.hpp"

using namespace pypto;
using namespace pypto::isa;

namespace {

int64_t align_up(int64_t n, int64_t a) { return a > 1 ? (n + a - 1) / a * a : n; }

std::string region_text(const pypto_region& r) {
  return std::string(r.name ? r.name : "?") + " (" + std::to_string(r.slots) + " x " +
         std::to_string(r.slot_bytes) + " B)";
}

[[noreturn]] void overflow(const CoreContext& core, const pypto_region* regions, int32_t n,
                           int mem, int64_t need) {
  std::string list;
  for (int32_t i = 0; i < n; ++i) {
    if (regions[i].mem != mem) continue;
    list += (list.empty() ? "" : ", ") + region_text(regions[i]);
  }
  fail(ErrorKind::kMemorySpace, "PLACE_REGIONS",
       "the kernel's " + std::string(mem_name(mem)) + " regions need " + std::to_string(need) +
           " B but " + std::to_string(core.capacity(mem)) + " B are available: " + list);
}

}  // namespace

extern "C" void pypto_place_regions(const pypto_region* regions, int32_t n, int64_t* base_out) {
  CoreContext& core = current_core();
  const int64_t align = core.platform.alignment_bytes;
  std::array<int64_t, PYPTO_NUM_MEM> next{};
  for (int32_t i = 0; i < n; ++i) {
    const pypto_region& r = regions[i];
    if (r.mem <= PYPTO_GM || r.mem >= PYPTO_NUM_MEM || r.slots < 1 || r.slot_bytes < 0) {
      fail(ErrorKind::kMemorySpace, "PLACE_REGIONS", "invalid region " + region_text(r));
    }
    base_out[i] = align_up(next[r.mem], align);
    next[r.mem] = base_out[i] + int64_t{r.slots} * align_up(r.slot_bytes, align);
  }
  for (int mem = PYPTO_GM + 1; mem < PYPTO_NUM_MEM; ++mem) {
    if (next[mem] > core.capacity(mem)) overflow(core, regions, n, mem, next[mem]);
  }
}

extern "C" int64_t pypto_slot_address(int64_t base, int64_t index, int32_t slots,
                                      int64_t slot_bytes, const char* name) {
  if (index < 0 || index >= slots) {
    fail(ErrorKind::kMemorySpace, "SLOT_SELECT",
         "slot index " + std::to_string(index) + " is outside pl.MemRef(\"" +
             std::string(name ? name : "?") + "\", slots=" + std::to_string(slots) + ")");
  }
  return base + index * slot_bytes;
}
