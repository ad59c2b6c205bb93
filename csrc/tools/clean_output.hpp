// clean_sim_trace's output (internal to csrc/tools): the events of trace.clean.json, in
// compact JSON.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "tools/clean_collect.hpp"

namespace pypto::tools::clean {

// The output document, one traceEvents element at a time.
class Output {
 public:
  explicit Output(size_t reserve) { out_.reserve(reserve); }
  std::string& event() {  // starts the next element of traceEvents
    if (events_++ > 0) out_ += ',';
    return out_;
  }
  std::string& raw() { return out_; }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
  size_t events_ = 0;
};

// The head of a process (tid < 0) or thread metadata event, up to its args value:
// `{"name":"<meta>","ph":"M","pid":P[,"tid":T],"args":{"<key>":`.
void write_meta(std::string& out, int64_t pid, int64_t tid, const char* meta, std::string_view key);

// A kept slice (its object text `text`, at byte `base` of the payload): every member as it
// was, with pid, tid and cname replaced, or added at the end in that order when missing.
void write_slice(std::string& out, std::string_view text, size_t base, const Slice& s, int64_t pid,
                 int64_t tid, std::string_view color);

// One end of a flow arrow.
void write_arrow(std::string& out, std::string_view name, int64_t id, int64_t pid, bool start,
                 int64_t tid, double ts);

}  // namespace pypto::tools::clean
