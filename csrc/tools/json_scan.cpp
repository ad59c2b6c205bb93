#include "tools/json_scan.hpp"

#include <array>
#include <charconv>
#include <cmath>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace pypto::tools::json {
namespace {

bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

constexpr double kPow10[] = {1e0, 1e1, 1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                             1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15};

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

}  // namespace

// ---- Reader ----

void Reader::fail(const std::string& what) const {
  throw SyntaxError(what + " at byte " + std::to_string(base_ + pos_));
}

void Reader::fail(const char* what) const { fail(std::string(what)); }

// "unexpected character X, expected ...", at the current byte.
void Reader::fail_char(const char* expected) const {
  fail("unexpected character " + describe(doc_[pos_]) + ", expected " + expected);
}

// The next element of a container is neither another one nor its close.
void Reader::fail_close(char close) const {
  if (pos_ >= doc_.size()) fail(std::string("unexpected end of data, expected '") + close + "'");
  fail("unexpected character " + describe(doc_[pos_]) + ", expected ',' or '" + close + "'");
}

void Reader::fail_open(char bracket) const { fail(std::string("expected '") + bracket + "'"); }

void Reader::skip_ws() {
  const size_t start = pos_;
  while (pos_ < doc_.size() && is_ws(doc_[pos_])) ++pos_;
  if (pos_ != start) compact_ = false;
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
      fail_char("a value");
  }
}

void Reader::open(char bracket) {
  skip_ws();
  if (pos_ >= doc_.size() || doc_[pos_] != bracket) fail_open(bracket);
  if (++depth_ > kMaxDepth) fail("nesting deeper than 1024 levels");
  ++pos_;
}

bool Reader::more(char close, bool first) {
  skip_ws();
  if (pos_ >= doc_.size()) fail_close(close);
  if (doc_[pos_] == close) {
    ++pos_;
    --depth_;
    return false;
  }
  if (!first) {
    if (doc_[pos_] != ',') fail_close(close);
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
  if (pos_ < doc_.size() && doc_[pos_] == '.') {
    ++pos_;
    if (pos_ >= doc_.size() || !is_digit(doc_[pos_])) fail("invalid number: no digit after '.'");
    while (pos_ < doc_.size() && is_digit(doc_[pos_])) ++pos_;
  }
  long exponent = 0;
  if (pos_ < doc_.size() && (doc_[pos_] == 'e' || doc_[pos_] == 'E')) {
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
  const Value v{Kind::kNumber, doc_.substr(start, pos_ - start)};
  // Only a number this large can overflow a double: check it the way a parse would.
  if (static_cast<long>(int_digits) + exponent > 300 && std::isinf(number_of(v))) {
    pos_ = start;
    fail("number is infinity when parsed as a double");
  }
  return v;
}

// The end of the run of plain bytes from `i`: sixteen at a time with SSE2 (a signed compare
// below 0x20 flags control bytes and, as negatives, every byte >= 0x80), else eight at a time
// where the platform allows (a word's bytes flagged when '"', '\\', < 0x20 or >= 0x80; the
// lowest flag is exact).
size_t Reader::plain_end(size_t i) const {
  const char* d = doc_.data();
  const size_t n = doc_.size();
#if defined(__SSE2__)
  const __m128i quote = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\');
  const __m128i space = _mm_set1_epi8(0x20);
  for (; i + 16 <= n; i += 16) {
    const __m128i w = _mm_loadu_si128(reinterpret_cast<const __m128i*>(d + i));
    const __m128i special =
        _mm_or_si128(_mm_cmplt_epi8(w, space),
                     _mm_or_si128(_mm_cmpeq_epi8(w, quote), _mm_cmpeq_epi8(w, backslash)));
    const int mask = _mm_movemask_epi8(special);
    if (mask != 0) return i + static_cast<size_t>(__builtin_ctz(static_cast<unsigned>(mask)));
  }
#elif defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
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

// The number at `i` into `v` and its end, when it is [-](0|[1-9]digits)[.digits] followed by
// neither an exponent nor more of a number (and short enough never to overflow a double), else
// `i`. Its value comes with it when it has at most 15 digits: the digits m and decimals k make
// m / 10^k, exact as in plain_decimal.
size_t Reader::simple_number(size_t i, Value& v) const {
  const char* d = doc_.data();
  const size_t n = doc_.size();
  const size_t start = i;
  const bool negative = i < n && d[i] == '-';
  i += negative ? 1 : 0;
  if (i >= n || !is_digit(d[i])) return start;
  uint64_t m = 0;  // wraps past 19 digits, but then the value is not taken
  int digits = 0, decimals = 0;
  if (d[i] == '0') {
    ++i, digits = 1;
  } else {
    for (; i < n && is_digit(d[i]); ++i, ++digits) m = m * 10 + static_cast<uint64_t>(d[i] - '0');
  }
  if (i < n && d[i] == '.') {
    ++i;
    if (i >= n || !is_digit(d[i])) return start;
    for (; i < n && is_digit(d[i]); ++i, ++digits, ++decimals)
      m = m * 10 + static_cast<uint64_t>(d[i] - '0');
  }
  if (i < n && (d[i] == 'e' || d[i] == 'E' || is_digit(d[i]) || d[i] == '.')) return start;
  if (i - start > 300) return start;
  v = {Kind::kNumber, doc_.substr(start, i - start)};
  if (digits <= 15) {
    const double x = static_cast<double>(m) / kPow10[decimals];
    v.exact = true;
    v.number = negative ? -x : x;
  }
  return i;
}

// The common string — plain bytes, then its closing quote — without leaving this function;
// anything else (escapes, UTF-8, errors) goes on in string_rest.
Value Reader::string() {
  const size_t start = pos_++;
  pos_ = plain_end(pos_);
  if (pos_ < doc_.size() && doc_[pos_] == '"') {
    ++pos_;
    return {Kind::kString, std::string_view(doc_.data() + start, pos_ - start)};
  }
  return string_rest(start);
}

Value Reader::string_rest(size_t start) {
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

namespace {

// A plain decimal ([-]digits[.digits], at most 15 digits) read exactly without from_chars: its
// digits m and decimals k make m / 10^k, and with m below 2^53 and 10^k exact in a double, the
// one IEEE division is correctly rounded, the double from_chars would return. False otherwise.
bool plain_decimal(std::string_view t, double& out) {
  const char* p = t.data();
  const char* const end = p + t.size();
  const bool negative = p < end && *p == '-';
  p += negative ? 1 : 0;
  uint64_t m = 0;  // wraps past 19 digits, but then more than 15 digits fail below
  int digits = 0;
  const char* point = nullptr;
  for (; p < end; ++p) {
    const unsigned digit = static_cast<unsigned>(static_cast<unsigned char>(*p) - '0');
    if (digit < 10) {
      m = m * 10 + digit;
      ++digits;
    } else if (*p == '.' && point == nullptr) {
      point = p;
    } else {
      return false;
    }
  }
  if (digits == 0 || digits > 15) return false;
  const double d = static_cast<double>(m) / kPow10[point == nullptr ? 0 : end - point - 1];
  out = negative ? -d : d;
  return true;
}

}  // namespace

double number_of(const Value& v) {
  if (v.exact) return v.number;
  double out = 0.0;
  if (plain_decimal(v.text, out)) return out;
  const char* first = v.text.data();
  const char* last = first + v.text.size();
  auto res = std::from_chars(first, last, out);
  if (res.ec == std::errc::result_out_of_range) {
    // Too small for a double: a signed zero; too large cannot pass the reader.
    const bool tiny =
        v.text.find("e-") != std::string_view::npos || v.text.find("E-") != std::string_view::npos;
    return tiny ? (first[0] == '-' ? -0.0 : 0.0) : HUGE_VAL;
  }
  return out;
}

bool parse_number_text(std::string_view text, double& out) {
  if (text.empty()) return false;
  auto res = std::from_chars(text.data(), text.data() + text.size(), out);
  return res.ec == std::errc() && res.ptr == text.data() + text.size() && std::isfinite(out);
}

}  // namespace pypto::tools::json
