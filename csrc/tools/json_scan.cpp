#include "tools/json_scan.hpp"

#include <array>
#include <charconv>
#include <cmath>
#include <cstring>

namespace pypto::tools::json {
namespace {

constexpr int kMaxDepth = 1024;  // orjson's limit: deeper documents are rejected, not recursed

bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Bytes a string may hold as they are: printable ASCII except the quote and the backslash.
constexpr std::array<bool, 256> plain_table() {
  std::array<bool, 256> t{};
  for (int c = 0x20; c < 0x80; ++c) t[c] = c != '"' && c != '\\';
  return t;
}
constexpr std::array<bool, 256> kPlain = plain_table();

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string describe(char c) {
  if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "0x%02x", static_cast<unsigned char>(c));
    return buf;
  }
  return std::string("'") + c + "'";
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

uint32_t hex4(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v = v * 16 + static_cast<uint32_t>(hex_value(p[i]));
  return v;
}

// The shortest round-trip digits of a finite double and its decimal exponent:
// |v| = d.ddd × 10^exp10.
struct Shortest {
  bool negative = false;
  char digits[24] = {};
  int n = 0;
  int exp10 = 0;
};

Shortest shortest(double v) {
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  Shortest s;
  const char* p = buf;
  if (*p == '-') {
    s.negative = true;
    ++p;
  }
  for (; p < res.ptr && *p != 'e'; ++p) {
    if (*p != '.') s.digits[s.n++] = *p;
  }
  int e = 0;
  std::from_chars(p + 1 + (p[1] == '+'), res.ptr, e);
  s.exp10 = e;
  return s;
}

// Digits in positional notation: "123.45", "0.00012", "1200.0".
void positional(std::string& out, const Shortest& s) {
  if (s.negative) out += '-';
  if (s.exp10 < 0) {
    out += "0.";
    out.append(static_cast<size_t>(-s.exp10 - 1), '0');
    out.append(s.digits, static_cast<size_t>(s.n));
    return;
  }
  int whole = s.exp10 + 1;
  if (s.n <= whole) {
    out.append(s.digits, static_cast<size_t>(s.n));
    out.append(static_cast<size_t>(whole - s.n), '0');
    out += ".0";
  } else {
    out.append(s.digits, static_cast<size_t>(whole));
    out += '.';
    out.append(s.digits + whole, static_cast<size_t>(s.n - whole));
  }
}

// Digits in scientific notation, "1.5e+16" / "1e-7" (min_exp_digits 1, orjson) or
// "1e-07" (2, Python).
void scientific(std::string& out, const Shortest& s, int min_exp_digits) {
  if (s.negative) out += '-';
  out += s.digits[0];
  if (s.n > 1) {
    out += '.';
    out.append(s.digits + 1, static_cast<size_t>(s.n - 1));
  }
  out += 'e';
  out += s.exp10 < 0 ? '-' : '+';
  std::string e = std::to_string(std::abs(s.exp10));
  if (static_cast<int>(e.size()) < min_exp_digits) out.append(min_exp_digits - e.size(), '0');
  out += e;
}

// The digits of a JSON integer without sign, compared with a bound of the same length.
bool digits_at_most(std::string_view digits, std::string_view bound) {
  return digits.size() < bound.size() || (digits.size() == bound.size() && digits <= bound);
}

}  // namespace

// ---- Reader ----

void Reader::fail(const std::string& what) const {
  throw SyntaxError(what + " at byte " + std::to_string(base_ + pos_));
}

void Reader::skip_ws() {
  const size_t start = pos_;
  while (pos_ < doc_.size() && is_ws(doc_[pos_])) ++pos_;
  if (pos_ != start) canonical_ = false;
}

bool Reader::at_end() {
  skip_ws();
  return pos_ >= doc_.size();
}

int Reader::peek() {
  skip_ws();
  return pos_ < doc_.size() ? static_cast<unsigned char>(doc_[pos_]) : -1;
}

Value Reader::value() {
  skip_ws();
  if (pos_ >= doc_.size()) fail("unexpected end of data, expected a value");
  const size_t start = pos_;
  switch (doc_[pos_]) {
    case '"':
      return string();
    case '{':
      skip_container('{', '}');
      return {Kind::kObject, doc_.substr(start, pos_ - start)};
    case '[':
      skip_container('[', ']');
      return {Kind::kArray, doc_.substr(start, pos_ - start)};
    case 't':
      return literal("true", Kind::kTrue);
    case 'f':
      return literal("false", Kind::kFalse);
    case 'n':
      return literal("null", Kind::kNull);
    default:
      if (doc_[pos_] == '-' || is_digit(doc_[pos_])) return number();
      fail("unexpected character " + describe(doc_[pos_]) + ", expected a value");
  }
}

void Reader::open(char bracket) {
  skip_ws();
  if (pos_ >= doc_.size() || doc_[pos_] != bracket) fail(std::string("expected '") + bracket + "'");
  if (++depth_ > kMaxDepth) fail("nesting deeper than 1024 levels");
  ++pos_;
}

bool Reader::more(char close, bool first) {
  skip_ws();
  if (pos_ >= doc_.size()) fail(std::string("unexpected end of data, expected '") + close + "'");
  if (doc_[pos_] == close) {
    ++pos_;
    --depth_;
    return false;
  }
  if (!first) {
    if (doc_[pos_] != ',') {
      fail("unexpected character " + describe(doc_[pos_]) + ", expected ',' or '" + close + "'");
    }
    ++pos_;
    skip_ws();
    if (pos_ < doc_.size() && doc_[pos_] == close) fail("trailing comma");
  }
  return true;
}

Value Reader::key() {
  skip_ws();
  if (pos_ >= doc_.size() || doc_[pos_] != '"') {
    fail(pos_ >= doc_.size() ? "unexpected end of data, expected a key" : "expected a string key");
  }
  Value k = string();
  skip_ws();
  if (pos_ >= doc_.size() || doc_[pos_] != ':') fail("expected ':' after a key");
  ++pos_;
  return k;
}

// Containers nested inside a scanned value: an explicit stack of closing brackets, so a
// deep document costs memory bounded by kMaxDepth, never the C++ stack.
void Reader::skip_container(char open_bracket, char close_bracket) {
  std::string closers;
  closers += close_bracket;
  open(open_bracket);
  bool first = true;
  bool in_object = open_bracket == '{';
  while (!closers.empty()) {
    if (!more(closers.back(), first)) {
      closers.pop_back();
      in_object = !closers.empty() && closers.back() == '}';
      first = false;
      continue;
    }
    first = false;
    if (in_object) key();
    skip_ws();
    char c = pos_ < doc_.size() ? doc_[pos_] : '\0';
    if (c == '{' || c == '[') {
      open(c);
      closers += c == '{' ? '}' : ']';
      in_object = c == '{';
      first = true;
    } else {
      value();
    }
  }
}

Value Reader::literal(std::string_view word, Kind kind) {
  if (doc_.substr(pos_, word.size()) != word) fail("unexpected character " + describe(doc_[pos_]));
  Value v{kind, doc_.substr(pos_, word.size())};
  pos_ += word.size();
  return v;
}

Value Reader::number() {
  const size_t start = pos_;
  if (doc_[pos_] == '-') ++pos_;
  if (pos_ >= doc_.size() || !is_digit(doc_[pos_])) fail("invalid number");
  size_t int_digits = 0;
  if (doc_[pos_] == '0') {
    ++pos_;
    int_digits = 1;
  } else {
    while (pos_ < doc_.size() && is_digit(doc_[pos_])) ++pos_, ++int_digits;
  }
  bool integer = true;
  const size_t whole_end = pos_;
  if (pos_ < doc_.size() && doc_[pos_] == '.') {
    integer = false;
    ++pos_;
    if (pos_ >= doc_.size() || !is_digit(doc_[pos_])) fail("invalid number: no digit after '.'");
    while (pos_ < doc_.size() && is_digit(doc_[pos_])) ++pos_;
  }
  const size_t frac_end = pos_;
  long exponent = 0;
  const bool has_exponent = pos_ < doc_.size() && (doc_[pos_] == 'e' || doc_[pos_] == 'E');
  if (has_exponent) {
    integer = false;
    ++pos_;
    bool negative = false;
    if (pos_ < doc_.size() && (doc_[pos_] == '+' || doc_[pos_] == '-'))
      negative = doc_[pos_++] == '-';
    if (pos_ >= doc_.size() || !is_digit(doc_[pos_]))
      fail("invalid number: no digit in the exponent");
    for (; pos_ < doc_.size() && is_digit(doc_[pos_]); ++pos_) {
      if (exponent < 100000) exponent = exponent * 10 + (doc_[pos_] - '0');
    }
    if (negative) exponent = -exponent;
  }
  Value v{Kind::kNumber, doc_.substr(start, pos_ - start)};
  v.integer = integer;
  if (canonical_) {
    const size_t sign = doc_[start] == '-' ? 1 : 0;
    const std::string_view whole = doc_.substr(start + sign, whole_end - start - sign);
    if (has_exponent) {
      canonical_ = false;
    } else if (integer) {
      canonical_ = fits_python_int(v.text) && v.text != "-0";
    } else {
      canonical_ = canonical_fraction(whole, doc_.substr(whole_end + 1, frac_end - whole_end - 1));
    }
  }
  // Only a number this large can overflow a double: check it the way a parse would.
  if (static_cast<long>(int_digits) + exponent > 300 && !(integer && fits_python_int(v.text))) {
    if (std::isinf(number_of(v))) {
      pos_ = start;
      fail("number is infinity when parsed as a double");
    }
  }
  return v;
}

// The end of the run of plain bytes from `i`: eight at a time where the platform allows
// (a word's bytes flagged when '"', '\\', < 0x20 or >= 0x80; the lowest flag is exact).
size_t Reader::plain_end(size_t i) const {
  const char* d = doc_.data();
  const size_t n = doc_.size();
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  constexpr uint64_t kOnes = 0x0101010101010101ULL, kHigh = 0x8080808080808080ULL;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, d + i, 8);
    const uint64_t quote = w ^ (kOnes * '"'), backslash = w ^ (kOnes * '\\');
    const uint64_t special = (w & kHigh) | ((w - kOnes * 0x20) & ~w & kHigh) |
                             ((quote - kOnes) & ~quote & kHigh) |
                             ((backslash - kOnes) & ~backslash & kHigh);
    if (special != 0) return i + static_cast<size_t>(__builtin_ctzll(special) >> 3);
  }
#endif
  while (i < n && kPlain[static_cast<unsigned char>(d[i])]) ++i;
  return i;
}

Value Reader::string() {
  const size_t start = pos_++;
  bool escaped = false;
  bool pending_high = false;  // a \uD8xx seen: the next thing must be its \uDCxx
  for (;;) {
    if (!pending_high) pos_ = plain_end(pos_);
    if (pos_ >= doc_.size()) fail("unexpected end of data in a string");
    const unsigned char c = static_cast<unsigned char>(doc_[pos_]);
    if (pending_high && c != '\\') fail("no low surrogate after a high one in a string");
    if (c == '"') break;
    if (c == '\\') {
      escaped = true;
      escape(pending_high);
    } else if (c < 0x20) {
      fail("unexpected control character in a string");
    } else if (c >= 0x80) {
      utf8_sequence();
    } else {
      ++pos_;  // plain byte after a completed surrogate pair
    }
  }
  ++pos_;
  Value v{Kind::kString, doc_.substr(start, pos_ - start)};
  v.escaped = escaped;
  if (escaped) canonical_ = false;
  return v;
}

void Reader::escape(bool& pending_high) {
  if (pos_ + 1 >= doc_.size()) fail("unexpected end of data in an escape");
  const char c = doc_[pos_ + 1];
  if (c != 'u') {
    if (pending_high) fail("no low surrogate after a high one in a string");
    if (!std::strchr("\"\\/bfnrt", c) || c == '\0')
      fail("invalid escape: backslash then " + describe(c));
    pos_ += 2;
    return;
  }
  if (pos_ + 6 > doc_.size()) fail("unexpected end of data in a \\u escape");
  for (int i = 2; i < 6; ++i) {
    if (hex_value(doc_[pos_ + i]) < 0) fail("invalid \\u escape");
  }
  const uint32_t cp = hex4(doc_.data() + pos_ + 2);
  const bool high = cp >= 0xD800 && cp < 0xDC00;
  const bool low = cp >= 0xDC00 && cp < 0xE000;
  if (pending_high != low) {
    fail(low ? "a low surrogate without its high one in a string"
             : "no low surrogate after a high one in a string");
  }
  pending_high = high;
  pos_ += 6;
}

void Reader::utf8_sequence() {
  const auto* p = reinterpret_cast<const unsigned char*>(doc_.data() + pos_);
  const size_t left = doc_.size() - pos_;
  size_t len = 0;
  uint32_t cp = 0;
  if (p[0] >= 0xC2 && p[0] <= 0xDF) {
    len = 2, cp = p[0] & 0x1F;
  } else if (p[0] >= 0xE0 && p[0] <= 0xEF) {
    len = 3, cp = p[0] & 0x0F;
  } else if (p[0] >= 0xF0 && p[0] <= 0xF4) {
    len = 4, cp = p[0] & 0x07;
  } else {
    fail("a string is not valid UTF-8");
  }
  if (left < len) fail("a string is not valid UTF-8");
  for (size_t i = 1; i < len; ++i) {
    if ((p[i] & 0xC0) != 0x80) fail("a string is not valid UTF-8");
    cp = (cp << 6) | (p[i] & 0x3F);
  }
  const bool overlong = (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000);
  if (overlong || cp > 0x10FFFF || (cp >= 0xD800 && cp < 0xE000))
    fail("a string is not valid UTF-8");
  pos_ += len;
}

// ---- values ----

std::string_view text_of(const Value& v, std::string& scratch) {
  std::string_view raw = v.text.substr(1, v.text.size() - 2);
  if (!v.escaped) return raw;
  scratch.clear();
  for (size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] != '\\') {
      scratch += raw[i];
      continue;
    }
    const char c = raw[++i];
    switch (c) {
      case 'b':
        scratch += '\b';
        break;
      case 'f':
        scratch += '\f';
        break;
      case 'n':
        scratch += '\n';
        break;
      case 'r':
        scratch += '\r';
        break;
      case 't':
        scratch += '\t';
        break;
      case 'u': {
        uint32_t cp = hex4(raw.data() + i + 1);
        i += 4;
        if (cp >= 0xD800 && cp < 0xDC00) {  // the reader checked the low half follows
          cp = 0x10000 + ((cp - 0xD800) << 10) + (hex4(raw.data() + i + 3) - 0xDC00);
          i += 6;
        }
        append_utf8(scratch, cp);
        break;
      }
      default:
        scratch += c;  // \" \\ \/
    }
  }
  return scratch;
}

double number_of(const Value& v) {
  double out = 0.0;
  const char* first = v.text.data();
  const char* last = first + v.text.size();
  auto res = std::from_chars(first, last, out);
  if (res.ec == std::errc::result_out_of_range) {
    // Too small for a double: orjson gives a signed zero; too large cannot pass the reader.
    const bool tiny =
        v.text.find("e-") != std::string_view::npos || v.text.find("E-") != std::string_view::npos;
    return tiny ? (first[0] == '-' ? -0.0 : 0.0) : HUGE_VAL;
  }
  return out;
}

bool fits_python_int(std::string_view digits) {
  if (!digits.empty() && digits[0] == '-')
    return digits_at_most(digits.substr(1), "9223372036854775808");
  return digits_at_most(digits, "18446744073709551615");
}

// A fraction is canonical when positional suits it (orjson's choice for 1e-5 <= |v| < 1e16),
// with no trailing zero but in "X.0" and at most 15 significant digits —
// any such decimal survives a round trip through a double (DBL_DIG), so it is the shortest
// spelling of its value and exactly what the writer prints.
bool canonical_fraction(std::string_view whole, std::string_view frac) {
  if (frac.back() == '0' && frac.size() > 1) return false;
  if (whole.size() > 16) return false;  // 1e16 and up: scientific
  if (whole == "0") {
    const size_t lead = frac.find_first_not_of('0');
    if (lead == std::string_view::npos) return true;  // 0.0 / -0.0
    return lead <= 4 && frac.size() - lead <= 15;     // below 1e-5: scientific
  }
  if (frac == "0") return whole.find_last_not_of('0') + 1 <= 15;  // X.0: X's trailing zeros
  return whole.size() + frac.size() <= 15;
}

bool parse_float_text(std::string_view text, double& out) {
  while (!text.empty() && (is_ws(text.front()) || text.front() == '\f' || text.front() == '\v')) {
    text.remove_prefix(1);
  }
  while (!text.empty() && (is_ws(text.back()) || text.back() == '\f' || text.back() == '\v')) {
    text.remove_suffix(1);
  }
  if (!text.empty() && text[0] == '+') text.remove_prefix(1);
  if (text.empty() || text[0] == '+') return false;
  auto res = std::from_chars(text.data(), text.data() + text.size(), out);
  return res.ec == std::errc() && res.ptr == text.data() + text.size() && std::isfinite(out);
}

// ---- writer ----

void write_string(std::string& out, std::string_view s) {
  static const char kHex[] = "0123456789abcdef";
  out += '"';
  size_t run = 0;  // bytes copied as they are, in one append
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out.append(s.data() + run, i - run);
    run = i + 1;
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        out += "\\u00";
        out += kHex[c >> 4];
        out += kHex[c & 0xF];
    }
  }
  out.append(s.data() + run, s.size() - run);
  out += '"';
}

// orjson's float spelling: positional for 1e-5 <= |v| < 1e16, else "1.5e+16" / "1e-7".
void write_double(std::string& out, double v) {
  if (v == 0.0) {
    out += std::signbit(v) ? "-0.0" : "0.0";
    return;
  }
  const Shortest s = shortest(v);
  if (s.exp10 < -5 || s.exp10 >= 16) {
    scientific(out, s, 1);
  } else {
    positional(out, s);
  }
}

void write_int(std::string& out, int64_t v) {
  char buf[24];
  auto res = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, res.ptr);
}

std::string python_float_repr(double v) {
  std::string out;
  if (v == 0.0) return std::signbit(v) ? "-0.0" : "0.0";
  const Shortest s = shortest(v);
  if (s.exp10 < -4 || s.exp10 >= 16) {
    scientific(out, s, 2);
  } else {
    positional(out, s);
  }
  return out;
}

std::string canonical_int(std::string_view digits) {
  return digits == "-0" ? std::string("0") : std::string(digits);
}

// A validated value re-written token by token: structure copied, whitespace dropped,
// strings re-escaped only when they held escapes, numbers in orjson's spelling.
void write_value(std::string& out, std::string_view text) {
  std::string scratch;
  size_t i = 0;
  while (i < text.size()) {
    const char c = text[i];
    if (is_ws(c)) {
      ++i;
    } else if (c == '"') {
      size_t j = i + 1;
      bool escaped = false;
      while (text[j] != '"') {
        if (text[j] == '\\') {
          escaped = true;
          ++j;
        }
        ++j;
      }
      std::string_view token = text.substr(i, j + 1 - i);
      if (escaped) {
        Value v{Kind::kString, token};
        v.escaped = true;
        write_string(out, text_of(v, scratch));
      } else {
        out += token;
      }
      i = j + 1;
    } else if (c == '-' || is_digit(c)) {
      size_t j = i + 1;
      bool integer = true;
      while (j < text.size() && (is_digit(text[j]) || std::strchr(".eE+-", text[j]))) {
        if (!is_digit(text[j]) && text[j] != '-') integer = false;
        if (text[j] == '-' && j > i) integer = false;  // an exponent sign
        ++j;
      }
      Value v{Kind::kNumber, text.substr(i, j - i)};
      if (integer && fits_python_int(v.text)) {
        out += v.text == "-0" ? std::string_view("0") : v.text;
      } else {
        write_double(out, number_of(v));
      }
      i = j;
    } else if (c == 't' || c == 'n') {
      out.append(text.data() + i, 4);
      i += 4;
    } else if (c == 'f') {
      out.append(text.data() + i, 5);
      i += 5;
    } else {
      out += c;  // [ ] { } , :
      ++i;
    }
  }
}

}  // namespace pypto::tools::json
