// clean_sim_trace's output (internal to csrc/tools): the events of trace.clean.json, in
// compact JSON.
#pragma once

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
class Output {
 public:
  explicit Output(size_t reserve) { out_.reserve(reserve); }
  explicit Output(const std::string& path)
      : file_(std::make_unique<ParallelFiles>(std::vector<std::string>{path})) {
    out_.reserve(2 * ParallelFiles::kChunkBytes);
    file_->start();
  }
  std::string& event() {  // starts the next element of traceEvents
    if (file_ && out_.size() >= ParallelFiles::kChunkBytes) flush();
    if (events_++ > 0) out_ += ',';
    return out_;
  }
  std::string& raw() { return out_; }
  // The document (empty when it went to a file, which is then complete and closed).
  std::string take();

 private:
  void flush();
  std::string out_;
  size_t events_ = 0;
  std::unique_ptr<ParallelFiles> file_;
};

// The head of a process (tid < 0) or thread metadata event, up to its args value:
// `{"name":"<meta>","ph":"M","pid":P[,"tid":T],"args":{"<key>":`.
void write_meta(std::string& out, int64_t pid, int64_t tid, const char* meta, std::string_view key);

// A kept slice (its object text `text`, at byte `base` of the payload): every member as it
// was, with pid, tid and cname replaced, or added at the end in that order when missing;
// `source` (a `"source_line":...` member, or empty) appended to its args.
void write_slice(std::string& out, std::string_view text, size_t base, const Slice& s, int64_t pid,
                 int64_t tid, std::string_view color, std::string_view source);

// The start of every end of an arrow named `name`, up to its id: `{"cat":"sync","name":N,"id":`.
std::string arrow_head(std::string_view name);

// One end of a flow arrow (`head`: arrow_head of its name).
void write_arrow(std::string& out, std::string_view head, int64_t id, int64_t pid, bool start,
                 int64_t tid, double ts);

}  // namespace pypto::tools::clean
