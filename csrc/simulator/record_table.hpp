// The instruction records of one core, kept in the form the trace writer and Python read:
// one int64 row per instruction (RecordColumn order) plus interned name and location ids.
// Recording writes the rows in place, so a traced run never converts or copies them: the
// buffers grow by mremap (no copy of what is written; a short task's first 64 rows sit on the
// heap and are copied once should it grow) and are handed to numpy whole.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "simulator/grow_buffer.hpp"

namespace pypto {

enum RecordColumn : int {
  kColIndex,
  kColKind,
  kColPipe,
  kColIssue,
  kColStart,
  kColEnd,
  kColBytes,
  kColAddr,
  kColFlagSrc,
  kColFlagDst,
  kColFlagId,
  kRecordWidth
};

struct RecordFields {
  uint32_t index;  // program order
  int64_t kind, pipe;
  const char* name;  // static storage
  const char* loc;
  uint64_t issue, start, end;
  int64_t flag_src, flag_dst, flag_id;
  uint64_t bytes;
  int64_t addr;
};

class RecordTable {
 public:
  // What the table holds, handed over whole: rows x kRecordWidth int64, then the name and
  // location ids (int32 per row) indexing `strings`.
  struct Columns {
    GrowBuffer table, name_id, loc_id;
    size_t rows;
    std::vector<const char*> strings;
  };
  void add(const RecordFields& f) {
    if (rows_ == capacity_) grow();
    int64_t* r = static_cast<int64_t*>(table_.data()) + rows_ * kRecordWidth;
    r[kColIndex] = f.index;
    r[kColKind] = f.kind;
    r[kColPipe] = f.pipe;
    r[kColIssue] = static_cast<int64_t>(f.issue);
    r[kColStart] = static_cast<int64_t>(f.start);
    r[kColEnd] = static_cast<int64_t>(f.end);
    r[kColBytes] = static_cast<int64_t>(f.bytes);
    r[kColAddr] = f.addr;
    r[kColFlagSrc] = f.flag_src;
    r[kColFlagDst] = f.flag_dst;
    r[kColFlagId] = f.flag_id;
    static_cast<int32_t*>(names_.data())[rows_] = intern(f.name);
    static_cast<int32_t*>(locs_.data())[rows_] = intern(f.loc);
    ++rows_;
  }
  size_t size() const { return rows_; }
  const int64_t* row(size_t i) const {
    return static_cast<const int64_t*>(table_.data()) + i * kRecordWidth;
  }
  const char* name(size_t i) const {
    return strings_[static_cast<const int32_t*>(names_.data())[i]];
  }
  const char* loc(size_t i) const { return strings_[static_cast<const int32_t*>(locs_.data())[i]]; }
  // The interned strings, in order of first use (ids index them).
  const std::vector<const char*>& strings() const { return strings_; }
  // Empties the table into the caller's hands.
  Columns take_columns();

 private:
  void grow();
  int32_t intern(const char* s) {
    auto& slot = (*memo_)[(reinterpret_cast<uintptr_t>(s) >> 3) % memo_->size()];
    if (slot.first == s) return slot.second;
    return slot = {s, intern_slow(s)}, slot.second;
  }
  int32_t intern_slow(const char* s);

  // Kinds for the buffers' spares (grow_buffer.hpp): tables are reused by tables, and so on.
  GrowBuffer table_{0}, names_{1}, locs_{2};
  size_t rows_ = 0, capacity_ = 0;
  std::vector<const char*> strings_;
  std::unordered_map<const char*, int32_t> ids_;
  // Recent pointers -> ids, allocated by the first add(): an empty table (every table of a
  // run that records nothing) is a few words, cheap to make, move and reset.
  std::unique_ptr<std::array<std::pair<const char*, int32_t>, 64>> memo_;
};

}  // namespace pypto
