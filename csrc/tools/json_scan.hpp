// A small strict JSON reader and writer for clean_sim_trace.
//
// The reader validates a document the way orjson (the parser the Python tool used) does —
// RFC 8259 grammar, UTF-8 text, no NaN/Infinity, no number that overflows a double, at
// most 1024 levels of nesting — without building a tree: callers get spans of the input
// and walk objects and arrays themselves. The writer puts values back in orjson's compact
// form (no whitespace, shortest round-trip floats, only the escapes JSON requires), so a
// cleaned trace is byte for byte what the Python tool wrote.
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
  bool integer = false;   // numbers: no fraction or exponent
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

  Value value();  // one value, validated, nested ones included

  // Whether everything scanned since reset_canonical() is already in the writer's form
  // (no whitespace, no escapes, numbers spelled as the writer spells them), so it can be
  // copied out as it is.
  void reset_canonical() { canonical_ = true; }
  bool canonical() const { return canonical_; }

  // Walking a container: open('{'), then `for (bool first = true; more('}', first);
  // first = false) { key(); value(); }`. Arrays the same with '[' and no key().
  void open(char bracket);
  bool more(char close, bool first);
  Value key();  // an object key and the ':' after it

 private:
  Value string();
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
  bool canonical_ = true;
};

// The text of a string value (no quotes, escapes decoded). Unescaped strings are returned
// as a view of the document; escaped ones are decoded into `scratch`.
std::string_view text_of(const Value& v, std::string& scratch);

// A number value as a double (validated by the reader, so it is finite).
double number_of(const Value& v);

// Whether a number's text is an integer orjson keeps as a Python int (-2^63 .. 2^64-1).
bool fits_python_int(std::string_view digits);

// Whether write_value re-writes the number <whole>.<frac> (no sign, no exponent) exactly as
// it is spelled.
bool canonical_fraction(std::string_view whole, std::string_view frac);

// Python's float(text) for a numeric string: false when the text is not a finite number.
bool parse_float_text(std::string_view text, double& out);

// Compact JSON, as orjson writes it.
void write_string(std::string& out, std::string_view utf8);
void write_double(std::string& out, double v);
void write_int(std::string& out, int64_t v);
// Re-writes a validated value (any kind, nested) in the compact form.
void write_value(std::string& out, std::string_view validated);

// Python's repr(float) and str(int) spellings, for labels and sort keys.
std::string python_float_repr(double v);
std::string canonical_int(std::string_view digits);  // "-0" -> "0"

}  // namespace pypto::tools::json
