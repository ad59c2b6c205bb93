#include "tools/clean_output.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <utility>

namespace pypto::tools::clean {
namespace {

// `member` as the last member of the object whose closing brace is at text[close].
void add_member(std::string& out, std::string_view text, size_t close, std::string_view member) {
  if (text[close - 1] != '{') out += ',';  // compact text: the brace follows the last value
  out += member;
}

// A compact slice with pid and tid once and cname at most once (the usual case): its text
// copied with those three values swapped, a missing cname added before the closing brace and
// a source line (`source`, empty for none) before the args' closing brace.
void splice_slice(std::string& out, std::string_view text, const Slice& s, int64_t pid, int64_t tid,
                  std::string_view color, std::string_view source) {
  enum Which { kPid, kTid, kCname, kSource };
  std::array<std::pair<Span, Which>, 4> spans = {{{s.pid, kPid}, {s.tid, kTid}}};
  size_t n = 2;
  if (s.cname.end > 0) spans[n++] = {s.cname, kCname};
  if (!source.empty()) spans[n++] = {Span{s.args_end, s.args_end}, kSource};
  std::sort(spans.begin(), spans.begin() + static_cast<long>(n),
            [](const auto& a, const auto& b) { return a.first.at < b.first.at; });
  size_t done = 0;
  for (size_t i = 0; i < n; ++i) {
    const auto& [span, which] = spans[i];
    out.append(text.data() + done, span.at - done);
    if (which == kSource) {
      add_member(out, text, span.at, source);
    } else if (which == kCname) {
      json::write_string(out, color);
    } else {
      json::write_int(out, which == kPid ? pid : tid);
    }
    done = span.end;
  }
  if (s.cname.end > 0) {
    out.append(text.data() + done, text.size() - done);
    return;
  }
  out.append(text.data() + done, text.size() - 1 - done);  // all but the closing brace
  out += ",\"cname\":";
  json::write_string(out, color);
  out += '}';
}

// Any other slice: member by member, whitespace dropped, every pid, tid and cname replaced,
// the source line (if any) added to every args object.
void rewrite_slice(std::string& out, std::string_view text, size_t base, int64_t pid, int64_t tid,
                   std::string_view color, std::string_view source) {
  json::Reader r(text, base);
  std::string scratch;
  bool seen_pid = false, seen_tid = false, seen_cname = false;
  out += '{';
  r.open('{');
  for (bool first = true; r.more('}', first); first = false) {
    const Value k = r.key();
    const Value v = r.value();
    if (!first) out += ',';
    out += k.text;
    out += ':';
    const std::string_view key = json::text_of(k, scratch);
    if (key == "pid") {
      json::write_int(out, pid), seen_pid = true;
    } else if (key == "tid") {
      json::write_int(out, tid), seen_tid = true;
    } else if (key == "cname") {
      json::write_string(out, color), seen_cname = true;
    } else if (key == "args" && v.kind == Kind::kObject && !source.empty()) {
      json::write_compact(out, v.text);
      out.pop_back();  // the closing brace
      add_member(out, out, out.size(), source);
      out += '}';
    } else {
      json::write_compact(out, v.text);
    }
  }
  const bool empty = out.back() == '{';
  if (!seen_pid) out += empty ? "\"pid\":" : ",\"pid\":", json::write_int(out, pid);
  if (!seen_tid) out += ",\"tid\":", json::write_int(out, tid);
  if (!seen_cname) out += ",\"cname\":", json::write_string(out, color);
  out += '}';
}

}  // namespace

void Output::flush() {
  Chunk* chunk = file_->take();
  chunk->grow(out_.size());
  std::memcpy(chunk->data.get(), out_.data(), out_.size());
  chunk->used = out_.size();
  file_->submit(chunk);
  out_.clear();  // keeps its capacity: the same warm pages fill again
}

std::string Output::take() {
  if (!file_) return std::move(out_);
  if (!out_.empty()) flush();
  file_->finish();
  file_->close_all();
  return {};
}

void write_meta(std::string& out, int64_t pid, int64_t tid, const char* meta,
                std::string_view key) {
  out += "{\"name\":\"";
  out += meta;
  out += "\",\"ph\":\"M\",\"pid\":";
  json::write_int(out, pid);
  if (tid >= 0) {
    out += ",\"tid\":";
    json::write_int(out, tid);
  }
  out += ",\"args\":{\"";
  out += key;
  out += "\":";
}

void write_slice(std::string& out, std::string_view text, size_t base, const Slice& s, int64_t pid,
                 int64_t tid, std::string_view color, std::string_view source) {
  if (s.copy) {
    splice_slice(out, text, s, pid, tid, color, source);
  } else {
    rewrite_slice(out, text, base, pid, tid, color, source);
  }
}

void write_arrow(std::string& out, std::string_view name, int64_t id, int64_t pid, bool start,
                 int64_t tid, double ts) {
  out += "{\"cat\":\"sync\",\"name\":";
  json::write_string(out, name);
  out += ",\"id\":";
  json::write_int(out, id);
  out += ",\"pid\":";
  json::write_int(out, pid);
  out += start ? ",\"ph\":\"s\"" : ",\"ph\":\"f\",\"bp\":\"e\"";
  out += ",\"tid\":";
  json::write_int(out, tid);
  out += ",\"ts\":";
  json::write_double(out, ts);
  out += '}';
}

}  // namespace pypto::tools::clean
