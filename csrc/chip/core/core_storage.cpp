#include "chip/core/core_storage.hpp"

#include <array>
#include <cstdlib>
#include <mutex>
#include <new>

#include "simulator/huge_pages.hpp"

namespace pypto::core_storage {
namespace {

// Blocks are whole powers of two from 64 KiB (a platform override of a space's size then
// reuses the blocks of the sizes near it), carved from 32 MiB chunks never returned: the free
// lists keep what the largest chip run held, as the cores' pools did before.
constexpr size_t kSmallest = size_t{64} << 10;
constexpr size_t kChunk = size_t{32} << 20;
constexpr int class_of(size_t bytes) {
  int c = 0;
  while ((kSmallest << c) < bytes) ++c;
  return c;
}
constexpr int kClasses = class_of(kLargest) + 1;

struct Arena {
  std::mutex mutex;
  std::array<void*, kClasses> free{};  // each free block holds the next one's address
  uint8_t* next = nullptr;             // the unused rest of the newest chunk
  size_t left = 0;
};

Arena& arena() {
  static Arena* a = new Arena;  // never destroyed: blocks may be given back at exit
  return *a;
}

}  // namespace

void* take(size_t bytes) {
  if (bytes > kLargest) return ::operator new(bytes);
  const int c = class_of(bytes);
  const size_t block = kSmallest << c;
  Arena& a = arena();
  std::lock_guard<std::mutex> lock(a.mutex);
  if (void* p = a.free[c]) {
    a.free[c] = *static_cast<void**>(p);
    return p;
  }
  if (a.left < block) {  // a new chunk; the old one's rest (under a block) stays unused
    void* chunk = std::aligned_alloc(kHugePage, kChunk);
    if (chunk == nullptr) throw std::bad_alloc();
    advise_huge_pages(chunk, kChunk);
    a.next = static_cast<uint8_t*>(chunk);
    a.left = kChunk;
  }
  void* p = a.next;
  a.next += block;
  a.left -= block;
  return p;
}

void give(void* p, size_t bytes) noexcept {
  if (p == nullptr) return;
  if (bytes > kLargest) return ::operator delete(p);
  Arena& a = arena();
  std::lock_guard<std::mutex> lock(a.mutex);
  void*& head = a.free[class_of(bytes)];
  *static_cast<void**>(p) = head;
  head = p;
}

}  // namespace pypto::core_storage
