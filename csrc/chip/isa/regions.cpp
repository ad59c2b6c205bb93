// Storage placed when the kernel starts (the PTOAS planner) and checked slot selects.
#include <array>
#include <string>

#include "chip/isa/checks.hpp"

using namespace pypto;
using namespace pypto::isa;

namespace {

__extension__ typedef __int128 i128;  // GCC/Clang builtin; __extension__ keeps -Wpedantic quiet

std::string region_text(const pypto_region& r) {
  return std::string(r.name ? r.name : "?") + " (" + std::to_string(r.slots) + " x " +
         std::to_string(r.slot_bytes) + " B)";
}

[[noreturn]] void overflow(const CoreContext& core, const pypto_region* regions, int32_t n, int mem,
                           int64_t need) {
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
  note_instruction("PLACE_REGIONS", core.loc);
  if (n < 0 || (n > 0 && (regions == nullptr || base_out == nullptr))) {
    fail(ErrorKind::kInternal, "PLACE_REGIONS",
         "invalid region table (" + std::to_string(n) + " regions)");
  }
  // 128-bit sums: slots (< 2^31) x slot_bytes (< 2^63) over any number of regions cannot
  // wrap, so a huge request is reported as too big, never placed at a wrapped address.
  const i128 align = core.platform.alignment_bytes > 1 ? core.platform.alignment_bytes : 1;
  auto align_up = [&](i128 v) { return (v + align - 1) / align * align; };
  std::array<i128, PYPTO_NUM_MEM> next{};
  for (int32_t i = 0; i < n; ++i) {
    const pypto_region& r = regions[i];
    if (r.mem <= PYPTO_GM || r.mem >= PYPTO_NUM_MEM || r.slots < 1 || r.slot_bytes < 0) {
      fail(ErrorKind::kMemorySpace, "PLACE_REGIONS", "invalid region " + region_text(r));
    }
    const i128 base = align_up(next[r.mem]);
    next[r.mem] = base + i128{r.slots} * align_up(r.slot_bytes);
    base_out[i] = base <= INT64_MAX ? static_cast<int64_t>(base) : INT64_MAX;
  }
  for (int mem = PYPTO_GM + 1; mem < PYPTO_NUM_MEM; ++mem) {
    if (next[mem] > core.capacity(mem)) {
      overflow(core, regions, n, mem,
               next[mem] <= INT64_MAX ? static_cast<int64_t>(next[mem]) : INT64_MAX);
    }
  }
}

extern "C" int64_t pypto_slot_address(int64_t base, int64_t index, int32_t slots,
                                      int64_t slot_bytes, const char* name) {
  if (index < 0 || index >= slots) {
    fail(ErrorKind::kMemorySpace, "SLOT_SELECT",
         "slot index " + std::to_string(index) + " is outside pl.MemRef(\"" +
             std::string(name ? name : "?") + "\", slots=" + std::to_string(slots) + ")");
  }
  int64_t offset = 0, address = 0;
  if (slot_bytes < 0 || __builtin_mul_overflow(index, slot_bytes, &offset) ||
      __builtin_add_overflow(base, offset, &address)) {
    fail(ErrorKind::kMemorySpace, "SLOT_SELECT",
         "slot " + std::to_string(index) + " of " + std::to_string(slot_bytes) + " B past base " +
             std::to_string(base) + " of pl.MemRef(\"" + std::string(name ? name : "?") +
             "\") is not an address");
  }
  return address;
}
