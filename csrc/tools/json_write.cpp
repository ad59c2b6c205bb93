// The writer half of json_scan.hpp: the values clean_sim_trace makes, in compact JSON.
#include <charconv>

#include "tools/json_scan.hpp"

namespace pypto::tools::json {

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

void write_int(std::string& out, int64_t v) {
  char buf[24];
  auto res = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, res.ptr);
}

// std::to_chars without a format: the shortest digits that read back to `v`, positional or
// scientific, whichever is shorter ("0.75", "3", "1e-07"). Callers pass finite values.
void write_double(std::string& out, double v) {
  char buf[32];
  auto res = std::to_chars(buf, buf + sizeof buf, v == 0.0 ? 0.0 : v);
  out.append(buf, res.ptr);
}

// Only whitespace outside strings is dropped: a validated value's tokens are valid JSON as
// they are spelled.
void write_compact(std::string& out, std::string_view text) {
  size_t run = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      out.append(text.data() + run, i - run);
      run = i + 1;
    }
  }
  out.append(text.data() + run, text.size() - run);
}

}  // namespace pypto::tools::json
