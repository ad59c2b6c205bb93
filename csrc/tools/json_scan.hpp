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

 private:
  Value string();
  [[gnu::noinline]] Value string_rest(size_t start);
  size_t plain_end(size_t i) const;
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
