// See record_table.hpp.
#include "simulator/record_table.hpp"

namespace pypto {
namespace {

constexpr size_t kHeapRows = 64;
constexpr size_t kFirstRows = 4096;

}  // namespace

void RecordTable::grow() {
  if (!memo_) memo_ = std::make_unique<std::array<std::pair<const char*, int32_t>, 64>>();
  // A short task's rows fit on the heap (GrowBuffer::kHeapBytes); the next step is a mapping.
  capacity_ = capacity_ == 0 ? kHeapRows : capacity_ == kHeapRows ? kFirstRows : 2 * capacity_;
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
