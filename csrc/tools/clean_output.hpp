// clean_sim_trace's output (internal to csrc/tools): the events of trace.clean.json, in
// compact JSON.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tools/clean_collect.hpp"
#include "tools/parallel_files.hpp"

namespace pypto::tools::clean {

// The output document, one traceEvents element at a time: held whole, or (with a file) handed
// to the file's writer thread a chunk at a time, so a large document never sits in memory.
// An element is written either through a string (event(), raw(): metadata, the rare slice
// that is rewritten) or, for the millions of slices and arrows, straight into the buffer
// (room() then done()): between those the buffer's string is sized ahead, a megabyte at a
// time, and the bytes in use counted apart, so a slice costs no resize.
class Output {
 public:
  explicit Output(size_t reserve) { out_.reserve(reserve); }
  explicit Output(const std::string& path)
      : file_(std::make_unique<ParallelFiles>(std::vector<std::string>{path})) {
    out_.reserve(2 * ParallelFiles::kChunkBytes);
    file_->start();
  }
  std::string& event() {  // starts the next element of traceEvents
    as_string();
    if (file_ && out_.size() >= ParallelFiles::kChunkBytes) flush();
    if (events_++ > 0) out_ += ',';
    return out_;
  }
  std::string& raw() {
    as_string();
    return out_;
  }
  // Starts the next element with room for `n` bytes: where to write them, then done(end).
  char* room(size_t n) {
    if (!direct_) {
      used_ = out_.size();
      direct_ = true;
    }
    if (file_ && used_ >= ParallelFiles::kChunkBytes) flush();
    if (used_ + n + 1 > out_.size()) grow(n + 1);
    char* w = out_.data() + used_;
    if (events_++ > 0) *w++ = ',';
    return w;
  }
  void done(const char* end) { used_ = static_cast<size_t>(end - out_.data()); }
  // The document (empty when it went to a file, which is then complete and closed).
  std::string take();

 private:
  void as_string() {
    if (direct_) out_.resize(used_), direct_ = false;
  }
  // Room for `n` more bytes past used_: the string's size is what has been cleared for
  // writing, so it grows within the reserved capacity a megabyte at a time.
  void grow(size_t n) {
    const size_t need = used_ + n;
    size_t size = std::max(need, out_.size() + (size_t{1} << 20));
    if (size > out_.capacity() && need <= out_.capacity()) size = out_.capacity();
    out_.resize(size);
  }
  void flush();
  std::string out_;
  bool direct_ = false;  // written through room(): out_ is sized ahead, used_ bytes in use
  size_t used_ = 0;
  size_t events_ = 0;
  std::unique_ptr<ParallelFiles> file_;
};

// The head of a process (tid < 0) or thread metadata event, up to its args value:
// `{"name":"<meta>","ph":"M","pid":P[,"tid":T],"args":{"<key>":`.
void write_meta(std::string& out, int64_t pid, int64_t tid, const char* meta, std::string_view key);

// A kept slice (its object text `text`, at byte `base` of the payload), the next element of
// `out`: every member as it was, with pid, tid and cname replaced, or added at the end in that
// order when missing; `source` (a `"source_line":...` member, or empty) appended to its args.
// `color` is a lane colour, a name JSON quotes as it is.
void write_slice(Output& out, std::string_view text, size_t base, const Slice& s, int64_t pid,
                 int64_t tid, std::string_view color, std::string_view source);

// The start of every end of an arrow named `name`, up to its id: `{"cat":"sync","name":N,"id":`.
std::string arrow_head(std::string_view name);

// One end of a flow arrow (`head`: arrow_head of its name), the next element of `out`.
void write_arrow(Output& out, std::string_view head, int64_t id, int64_t pid, bool start,
                 int64_t tid, double ts);

}  // namespace pypto::tools::clean
