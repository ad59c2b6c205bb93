// See grow_buffer.hpp.
#include "simulator/grow_buffer.hpp"

#include <sys/mman.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <system_error>
#include <vector>

#include "simulator/huge_pages.hpp"

namespace pypto {
namespace {

// Large buffers ask for huge pages: a million records fault in 50 times, not 25,000.
void want_huge_pages(void* data, size_t bytes) {
  if (bytes >= 2 * kHugePage) advise_huge_pages(data, bytes);
}

// Below this a new part is faulted in where it is written: a thread would cost more.
constexpr size_t kFillerMin = size_t{8} << 20;

// Faults in [data, data + bytes) writable without changing its contents, so the owner may
// write there at the same time (a no-op on kernels before 5.14).
void fault_in(void* data, size_t bytes) { ::madvise(data, bytes, MADV_POPULATE_WRITE); }

// Released buffers kept for reuse. Smaller ones are cheap to map afresh; the cap bounds what
// a process keeps after its reports are gone, and the kept pages are marked MADV_FREE, so the
// kernel may still take them back under memory pressure (they then fault in zeroed, as fresh
// pages would). Shared by all threads; never destroyed, as numpy may free arrays at exit.
class Spares {
 public:
  static constexpr size_t kMin = size_t{1} << 20;
  static constexpr size_t kCap = size_t{512} << 20;

  bool keep(const Mapping& m) {
    if (m.kind < 0 || m.bytes < kMin) return false;
    std::lock_guard<std::mutex> lock(mu_);
    if (held_ + m.bytes > kCap) return false;
    ::madvise(m.data, m.bytes, MADV_FREE);
    kept_.push_back(m);
    held_ += m.bytes;
    return true;
  }
  // The largest spare of `kind`, or an empty mapping.
  Mapping take(int kind) {
    std::lock_guard<std::mutex> lock(mu_);
    auto best = kept_.end();
    for (auto it = kept_.begin(); it != kept_.end(); ++it) {
      if (it->kind == kind && (best == kept_.end() || it->bytes > best->bytes)) best = it;
    }
    if (best == kept_.end()) return {};
    const Mapping m = *best;
    kept_.erase(best);
    held_ -= m.bytes;
    return m;
  }

 private:
  std::mutex mu_;
  std::vector<Mapping> kept_;
  size_t held_ = 0;
};

Spares& spares() {
  static Spares* s = new Spares;
  return *s;
}

}  // namespace

GrowBuffer::~GrowBuffer() { recycle(release()); }

void GrowBuffer::recycle(Mapping m) noexcept {
  if (m.data == nullptr) return;
  if (m.heap) return std::free(m.data);
  bool kept = false;
  try {
    kept = spares().keep(m);
  } catch (...) {  // the lock or the list's growth failed: unmap instead
  }
  if (!kept) ::munmap(m.data, m.bytes);
}

void GrowBuffer::reserve(size_t bytes) {
  if (bytes <= bytes_) return;
  settle();
  if ((data_ == nullptr || heap_) && bytes <= kHeapBytes) {
    void* p = std::realloc(data_, bytes);
    if (p == nullptr) throw std::bad_alloc();
    data_ = p;
    bytes_ = bytes;
    heap_ = true;
    return;
  }
  if (heap_) {  // outgrown the heap: a mapping, what was written copied over
    const Mapping small = release();
    try {
      reserve(bytes);
    } catch (...) {  // no mapping to be had: the buffer stays as it was
      data_ = small.data;
      bytes_ = small.bytes;
      heap_ = true;
      throw;
    }
    std::memcpy(data_, small.data, small.bytes);
    std::free(small.data);
    return;
  }
  if (data_ == nullptr && kind_ >= 0) {  // a spare's pages are in already: start from it
    const Mapping m = spares().take(kind_);
    data_ = m.data;
    bytes_ = m.bytes;
    if (bytes <= bytes_) return;
  }
  const size_t had = bytes_;
  void* p = data_ == nullptr
                ? ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
                : ::mremap(data_, bytes_, bytes, MREMAP_MAYMOVE);
  if (p == MAP_FAILED) throw std::bad_alloc();
  data_ = p;
  bytes_ = bytes;
  want_huge_pages(data_, bytes_);
  if (bytes_ - had < kFillerMin) return;
  try {
    filler_ = std::thread(fault_in, static_cast<char*>(data_) + had, bytes_ - had);
  } catch (const std::system_error&) {  // no thread to spare: the pages fault in as written
  }
}

}  // namespace pypto
