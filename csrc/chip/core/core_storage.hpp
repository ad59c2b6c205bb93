// The bytes of the simulated cores' on-chip spaces (UB, L1, L0A/B/C, bias), kept on transparent
// huge pages. A chip's spaces are ~30 MB on a2a3 (24 AIC x ~0.8 MB, 48 AIV x 256 KB), and a run
// takes the cores' turns in simulated-time order: on 4 KiB pages that is ~7,500 pages, past the
// host's second-level TLB, so a tile access after another core's turn paid a page walk besides
// its cache miss. On 2 MiB pages the whole chip is ~16 TLB entries.
#pragma once
#include <cstddef>
#include <cstdint>
#include <new>
#include <vector>

namespace pypto {

namespace core_storage {
// A block of at least `bytes` from the huge-page chunks (its size class's free list first), or
// from operator new past kLargest; give() returns it to its free list (or frees it).
void* take(size_t bytes);
void give(void* p, size_t bytes) noexcept;
// Blocks above this come from operator new: a space of a what-if size this large is rare, and
// its gigabytes must not stay resident in the free lists for the rest of the process.
inline constexpr size_t kLargest = size_t{4} << 20;
}  // namespace core_storage

// std::vector's allocator for a space's bytes.
template <class T>
struct SpaceAllocator {
  using value_type = T;
  SpaceAllocator() = default;
  template <class U>
  SpaceAllocator(const SpaceAllocator<U>&) noexcept {}
  T* allocate(size_t n) { return static_cast<T*>(core_storage::take(n * sizeof(T))); }
  void deallocate(T* p, size_t n) noexcept { core_storage::give(p, n * sizeof(T)); }
  template <class U>
  bool operator==(const SpaceAllocator<U>&) const noexcept {
    return true;
  }
};

using SpaceBytes = std::vector<uint8_t, SpaceAllocator<uint8_t>>;

}  // namespace pypto
