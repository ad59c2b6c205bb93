#include "tools/clean_output.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstring>
#include <utility>

namespace pypto::tools::clean {
namespace {

// `member` as the last member of the object whose closing brace is at text[close].
void add_member(std::string& out, std::string_view text, size_t close, std::string_view member) {
  if (text[close - 1] != '{') out += ',';  // compact text: the brace follows the last value
  out += member;
}

char* put(char* w, std::string_view s) {
  std::memcpy(w, s.data(), s.size());
  return w + s.size();
}

char* put_int(char* w, int64_t v) { return std::to_chars(w, w + 20, v).ptr; }

constexpr size_t kIntBytes = 20;  // the longest int64_t

// A compact slice with pid and tid once and cname at most once (the usual case): its text
// copied with those three values swapped, a missing cname added before the closing brace and
// a source line (`source`, empty for none) before the args' closing brace. `color` is a lane
// colour: a name JSON quotes as it is.
void splice_slice(Output& out, std::string_view text, const Slice& s, int64_t pid, int64_t tid,
                  std::string_view color, std::string_view source) {
  enum Which { kPid, kTid, kCname, kSource };
  std::array<std::pair<Span, Which>, 4> spans = {{{s.pid, kPid}, {s.tid, kTid}}};
  size_t n = 2;
  if (s.cname.end > 0) spans[n++] = {s.cname, kCname};
  if (!source.empty()) spans[n++] = {Span{s.args_end, s.args_end}, kSource};
  for (size_t i = 1; i < n; ++i) {  // by position: at most four, so an insertion sort
    for (size_t j = i; j > 0 && spans[j].first.at < spans[j - 1].first.at; --j)
      std::swap(spans[j], spans[j - 1]);
  }
  char* w = out.room(text.size() + 2 * kIntBytes + color.size() + source.size() + 16);
  size_t done = 0;
  for (size_t i = 0; i < n; ++i) {
    const auto& [span, which] = spans[i];
    w = put(w, text.substr(done, span.at - done));
    if (which == kSource) {
      if (text[span.at - 1] != '{') *w++ = ',';  // after the args' last member, if any
      w = put(w, source);
    } else if (which == kCname) {
      *w++ = '"', w = put(w, color), *w++ = '"';
    } else {
      w = put_int(w, which == kPid ? pid : tid);
    }
    done = span.end;
  }
  if (s.cname.end > 0) {
    w = put(w, text.substr(done));
  } else {
    w = put(w, text.substr(done, text.size() - 1 - done));  // all but the closing brace
    w = put(w, ",\"cname\":\"");
    w = put(w, color);
    w = put(w, "\"}");
  }
  out.done(w);
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
  const size_t n = direct_ ? used_ : out_.size();
  Chunk* chunk = file_->take();
  chunk->grow(n);
  std::memcpy(chunk->data.get(), out_.data(), n);
  chunk->used = n;
  file_->submit(chunk);
  if (direct_) {
    used_ = 0;  // out_ keeps its size: the same warm pages fill again
  } else {
    out_.clear();  // keeps its capacity
  }
}

std::string Output::take() {
  as_string();
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

void write_slice(Output& out, std::string_view text, size_t base, const Slice& s, int64_t pid,
                 int64_t tid, std::string_view color, std::string_view source) {
  if (s.copy) {
    splice_slice(out, text, s, pid, tid, color, source);
  } else {
    rewrite_slice(out.event(), text, base, pid, tid, color, source);
  }
}

std::string arrow_head(std::string_view name) {
  std::string head = "{\"cat\":\"sync\",\"name\":";
  json::write_string(head, name);
  head += ",\"id\":";
  return head;
}

void write_arrow(Output& out, std::string_view head, int64_t id, int64_t pid, bool start,
                 int64_t tid, double ts) {
  char* w = out.room(head.size() + 3 * kIntBytes + 32 + 48);
  w = put(w, head);
  w = put_int(w, id);
  w = put(w, ",\"pid\":");
  w = put_int(w, pid);
  w = put(w, start ? std::string_view(",\"ph\":\"s\"")
                   : std::string_view(",\"ph\":\"f\",\"bp\":\"e\""));
  w = put(w, ",\"tid\":");
  w = put_int(w, tid);
  w = put(w, ",\"ts\":");
  w = std::to_chars(w, w + 32, ts == 0.0 ? 0.0 : ts).ptr;  // as json::write_double
  *w++ = '}';
  out.done(w);
}

}  // namespace pypto::tools::clean
