// Anonymous memory that grows without copying (mremap), for the record columns a traced run
// hands to numpy. Fresh pages cost the kernel a zeroing each, which is most of what recording
// costs, so (1) a large new part is faulted in by a short-lived thread on another core while
// the owner goes on writing the part it has, and (2) a released buffer is kept as a spare for
// the next buffer of the same kind (its pages are already in), up to a cap. A buffer that
// never grows past kHeapBytes lives on the heap: a decode's thousands of short tasks each took
// three mappings of their own (a map, a fault and an unmap with its TLB shootdown apiece).
#pragma once
#include <cstddef>
#include <thread>
#include <utility>

namespace pypto {

// A buffer's memory once released: the new owner gives it back with GrowBuffer::recycle.
struct Mapping {
  void* data = nullptr;
  size_t bytes = 0;
  int kind = -1;
  bool heap = false;  // malloc's, not a mapping: freed, never kept
};

class GrowBuffer {
 public:
  static constexpr size_t kHeapBytes = size_t{64} << 10;
  // `kind` says what the buffer holds (its buffers grow to similar sizes), so that a spare of
  // the same kind can be reused; -1: its memory is never kept.
  explicit GrowBuffer(int kind = -1) : kind_(kind) {}
  GrowBuffer(const GrowBuffer&) = delete;
  GrowBuffer& operator=(const GrowBuffer&) = delete;
  GrowBuffer(GrowBuffer&& o) noexcept { swap(o); }
  GrowBuffer& operator=(GrowBuffer&& o) noexcept {
    GrowBuffer(std::move(o)).swap(*this);
    return *this;
  }
  ~GrowBuffer();
  void* data() const { return data_; }
  size_t capacity() const { return bytes_; }
  // Makes room for at least `bytes` (throws std::bad_alloc when the OS refuses). The contents
  // past what the owner wrote are unspecified (a reused spare keeps its old bytes).
  void reserve(size_t bytes);
  // Hands the memory to the caller, who gives it back with `recycle`.
  Mapping release() {
    settle();
    const Mapping out{data_, bytes_, kind_, heap_};
    data_ = nullptr;
    bytes_ = 0;
    heap_ = false;
    return out;
  }
  // Keeps `m` as a spare of its kind, or unmaps it (over the cap, or too small to matter).
  static void recycle(Mapping m) noexcept;

 private:
  void settle() noexcept {  // the mapping may move or go only once the filler is done
    if (filler_.joinable()) filler_.join();
  }
  void swap(GrowBuffer& o) noexcept {
    settle();
    o.settle();
    std::swap(data_, o.data_);
    std::swap(bytes_, o.bytes_);
    std::swap(kind_, o.kind_);
    std::swap(heap_, o.heap_);
  }
  void* data_ = nullptr;
  size_t bytes_ = 0;
  int kind_ = -1;
  bool heap_ = false;
  std::thread filler_;
};

}  // namespace pypto
