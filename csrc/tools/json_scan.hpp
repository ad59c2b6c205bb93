// A small strict JSON reader and writer for clean_sim_trace.
//
// The reader validates a document against RFC 8259 — UTF-8 text, no NaN/Infinity, no number
// that overflows a double, at most 1024 levels of nesting — without building a tree: callers
// get spans of the input and walk objects and arrays themselves, so a value the cleaner does
// not change is copied out as the bytes it was read from. The writer spells the values the
// cleaner makes (integers, doubles, strings) in compact JSON.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace pypto::tools::json {

// Malformed JSON; the message names the problem and its byte offset in the document.
class SyntaxError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class Kind : uint8_t { kAbsent, kNull, kFalse, kTrue, kNumber, kString, kArray, kObject };

// One scanned value: where it is in the document and what it is.
struct Value {
  Kind kind = Kind::kAbsent;
  std::string_view text;  // the value's bytes (strings with their quotes)
  bool escaped = false;   // strings: holds a backslash escape
  bool exact = false;     // numbers read by compact_object with at most 15 digits: `number`
  double number = 0.0;    // is their value (what number_of returns), read as they were scanned
  bool present() const { return kind != Kind::kAbsent; }
  bool is_string() const { return kind == Kind::kString; }
};

class Reader {
 public:
  // `base` is the offset of `doc` in the block, so error offsets count from the block start.
  explicit Reader(std::string_view doc, size_t base = 0) : doc_(doc), base_(base) {}

  void skip_ws();
  bool at_end();
  int peek();  // the next byte after whitespace, -1 at the end
  size_t pos() const { return base_ + pos_; }
  [[noreturn]] void fail(const std::string& what) const;
  // The failures the scanning functions raise, out of line: a hot function that only calls
  // these builds no message (and no frame to clean one up) on its fast path.
  [[noreturn, gnu::cold, gnu::noinline]] void fail(const char* what) const;
  [[noreturn, gnu::cold, gnu::noinline]] void fail_char(const char* expected) const;
  [[noreturn, gnu::cold, gnu::noinline]] void fail_close(char close) const;
  [[noreturn, gnu::cold, gnu::noinline]] void fail_open(char bracket) const;

  Value value();  // one value, validated, nested ones included

  // Whether no whitespace was skipped since reset_compact(): the text scanned since then is
  // compact JSON and can be copied out as it is.
  void reset_compact() { compact_ = true; }
  bool compact() const { return compact_; }

  // Walking a container: open('{'), then `for (bool first = true; more('}', first);
  // first = false) { key(); value(); }`. Arrays the same with '[' and no key().
  void open(char bracket);
  bool more(char close, bool first);
  Value key();  // an object key and the ':' after it

  // The fast form of that walk for one object at the reader's position written compactly:
  // `on_member(key, value)` for each member, in order, then true with the object consumed.
  // It takes only what it can read in one straight pass — no whitespace between its tokens,
  // plain ASCII keys and strings (no escapes), numbers without an exponent, nested objects
  // (read the same way when their members are such strings and numbers, else by value()) and
  // arrays (by value()) — and at anything else returns false with the position
  // where it was, for the caller to read the object again the ordinary way, which then
  // accepts or reports it. So it never reports a problem of its own, and whatever it accepts
  // the ordinary walk would read the same.
  template <class OnMember>
  bool compact_object(OnMember&& on_member) {
    return compact_members<true>(on_member);
  }

 private:
  template <bool kOuter, class OnMember>
  bool compact_members(OnMember& on_member);
  Value string();
  [[gnu::noinline]] Value string_rest(size_t start);
  size_t plain_end(size_t i) const;
  size_t simple_number(size_t i, Value& v) const;
  Value number();
  Value literal(std::string_view word, Kind kind);
  void skip_container(char open, char close);
  void escape(bool& pending_high);
  void utf8_sequence();

  std::string_view doc_;
  size_t base_;
  size_t pos_ = 0;
  int depth_ = 0;
  bool compact_ = true;
};

constexpr int kMaxDepth = 1024;  // deeper documents are rejected, not recursed into

// kOuter: the object's members may be containers; an inner object's may not (its text is
// read again by value() then), so the fast path never recurses past one level.
inline void ignore_member(const Value&, const Value&) {}

template <bool kOuter, class OnMember>
bool Reader::compact_members(OnMember& on_member) {
  const char* d = doc_.data();
  const size_t n = doc_.size();
  const size_t start = pos_;
  if (start >= n || d[start] != '{' || depth_ + 1 > kMaxDepth) return false;
  ++depth_;
  size_t p = start + 1;
  if (p < n && d[p] == '}') {
    pos_ = p + 1;
    --depth_;
    return true;
  }
  for (;;) {
    if (p >= n || d[p] != '"') break;
    size_t q = plain_end(p + 1);
    if (q >= n || d[q] != '"') break;
    const Value key{Kind::kString, std::string_view(d + p, q + 1 - p)};
    p = q + 1;
    if (p + 1 >= n || d[p] != ':') break;
    ++p;
    Value v;
    const char c = d[p];
    if (c == '"') {
      q = plain_end(p + 1);
      if (q >= n || d[q] != '"') break;
      v = {Kind::kString, std::string_view(d + p, q + 1 - p)};
      p = q + 1;
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      q = simple_number(p, v);
      if (q == p) break;
      p = q;
    } else if (c == '{' || c == '[') {
      if constexpr (!kOuter) break;
      pos_ = p;
      if (c == '{' && compact_members<false>(ignore_member)) {
        v = {Kind::kObject, std::string_view(d + p, pos_ - p)};
      } else {
        v = value();  // a problem in it is the one the ordinary walk would meet there
      }
      p = pos_;
    } else {
      break;
    }
    on_member(key, v);
    if (p >= n) break;
    if (d[p] == ',') {
      ++p;
      continue;
    }
    if (d[p] != '}') break;
    pos_ = p + 1;
    --depth_;
    return true;
  }
  pos_ = start;
  --depth_;
  return false;
}

// The text of a string value (no quotes, escapes decoded). Unescaped strings are returned
// as a view of the document; escaped ones are decoded into `scratch`.
std::string_view text_of(const Value& v, std::string& scratch);

// A number value as a double (validated by the reader, so it is finite; a number too small
// for a double reads as zero).
double number_of(const Value& v);

// A decimal number held in a string ("1.5", "-2e3"): false unless the whole text is one and
// it is finite.
bool parse_number_text(std::string_view text, double& out);

// Compact JSON: strings with only the escapes JSON requires, integers, and doubles as the
// shortest decimal that reads back to the same double.
void write_string(std::string& out, std::string_view utf8);
void write_int(std::string& out, int64_t v);
void write_double(std::string& out, double v);
// A validated value (any kind, nested) copied with the whitespace between its tokens dropped.
void write_compact(std::string& out, std::string_view validated);

}  // namespace pypto::tools::json
