// Transparent huge pages for the simulator's large anonymous mappings (record buffers, the L2
// tag store): one TLB entry and one fault per 2 MiB instead of per 4 KiB.
#pragma once
#include <sys/mman.h>

#include <cstddef>

namespace pypto {

inline constexpr size_t kBasePage = size_t{4} << 10;  // x86-64, and arm64 as Linux builds it
inline constexpr size_t kHugePage = size_t{2} << 20;  // on those 4 KiB base pages

// Advice only: where the kernel does not offer huge pages the mapping keeps plain ones.
inline void advise_huge_pages(void* data, size_t bytes) { ::madvise(data, bytes, MADV_HUGEPAGE); }

}  // namespace pypto
