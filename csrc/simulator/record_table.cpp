// See record_table.hpp.
#include "simulator/record_table.hpp"

#include <sys/mman.h>

#include <new>
#include <system_error>

namespace pypto {
namespace {

constexpr size_t kFirstRows = 4096;
constexpr size_t kHugePage = size_t{2} << 20;

// Large buffers ask for transparent huge pages: a million records fault in 50 times, not
// 25,000 (a no-op where the kernel does not offer them).
void want_huge_pages(void* data, size_t bytes) {
  if (bytes >= 2 * kHugePage) ::madvise(data, bytes, MADV_HUGEPAGE);
}

// Below this a new part is faulted in where it is written: a thread would cost more.
constexpr size_t kFillerMin = size_t{8} << 20;

// Faults in [data, data + bytes) writable without changing its contents, so the owner may
// write there at the same time (a no-op on kernels before 5.14).
void fault_in(void* data, size_t bytes) { ::madvise(data, bytes, MADV_POPULATE_WRITE); }

}  // namespace

GrowBuffer::~GrowBuffer() {
  settle();
  unmap(data_, bytes_);
}

void GrowBuffer::unmap(void* data, size_t bytes) {
  if (data != nullptr) ::munmap(data, bytes);
}

void GrowBuffer::reserve(size_t bytes) {
  if (bytes <= bytes_) return;
  settle();
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

void RecordTable::grow() {
  capacity_ = capacity_ == 0 ? kFirstRows : 2 * capacity_;
  table_.reserve(capacity_ * kRecordWidth * sizeof(int64_t));
  names_.reserve(capacity_ * sizeof(int32_t));
  locs_.reserve(capacity_ * sizeof(int32_t));
}

int32_t RecordTable::intern_slow(const char* s) {
  auto [it, fresh] = ids_.emplace(s, static_cast<int32_t>(strings_.size()));
  if (fresh) strings_.push_back(s);
  return it->second;
}

RecordTable::Columns RecordTable::take_columns() {
  Columns out{std::move(table_), std::move(names_), std::move(locs_), rows_, std::move(strings_)};
  *this = RecordTable();
  return out;
}

}  // namespace pypto
