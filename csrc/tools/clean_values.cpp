#include "tools/clean_values.hpp"

#include <algorithm>
#include <charconv>
#include <cstring>

namespace pypto::tools::clean {
namespace {

// The key two equal values share: "s<text>" for strings, "n<shortest double>" for numbers.
std::string value_key(const Value& v) {
  std::string scratch;
  switch (v.kind) {
    case Kind::kString:
      return "s" + std::string(json::text_of(v, scratch));
    case Kind::kNumber: {
      const double d = json::number_of(v);
      char buf[32];
      auto res = std::to_chars(buf, buf + sizeof buf, d == 0.0 ? 0.0 : d);
      return "n" + std::string(buf, res.ptr);
    }
    case Kind::kTrue:
      return "t";
    case Kind::kFalse:
      return "f";
    default:
      return "z";  // null or absent
  }
}

}  // namespace

bool string_is(const Value& v, std::string_view want) {
  if (!v.is_string()) return false;
  if (!v.escaped) {  // the few bytes compared here, not by a call
    if (v.text.size() != want.size() + 2) return false;
    for (size_t i = 0; i < want.size(); ++i) {
      if (v.text[i + 1] != want[i]) return false;
    }
    return true;
  }
  std::string scratch;
  return json::text_of(v, scratch) == want;
}

Value member(const Value& object, std::string_view key) {
  Value found;
  if (object.kind != Kind::kObject) return found;
  std::string scratch;
  json::Reader r(object.text);
  r.open('{');
  for (bool first = true; r.more('}', first); first = false) {
    const bool match = json::text_of(r.key(), scratch) == key;
    const Value v = r.value();
    if (match) found = v;
  }
  return found;
}

bool time_of(const Value& v, double& out) {
  std::string scratch;
  if (v.kind == Kind::kNumber) {
    out = json::number_of(v);
    return true;
  }
  return v.is_string() && json::parse_number_text(json::text_of(v, scratch), out);
}

std::string name_of(const Value& v) {
  std::string scratch;
  if (v.is_string()) return std::string(json::text_of(v, scratch));
  return v.present() ? std::string(v.text) : std::string("null");
}

namespace {

// The first and the last eight bytes of `s` (its bytes, zero-padded, when it is shorter).
std::pair<uint64_t, uint64_t> ends_of(std::string_view s) {
  uint64_t head = 0, tail = 0;
  if (s.size() >= 8) {
    std::memcpy(&head, s.data(), 8);
    std::memcpy(&tail, s.data() + s.size() - 8, 8);
  } else {
    for (size_t i = 0; i < s.size(); ++i)
      head |= uint64_t{static_cast<unsigned char>(s[i])} << (8 * i);
    tail = head;
  }
  return {head, tail};
}

}  // namespace

uint32_t ValueIds::id(const Value& v) {
  const std::string_view spelling = v.present() ? v.text : std::string_view("null");
  const size_t n = spelling.size();
  const auto [head, tail] = ends_of(spelling);
  for (size_t i = 0; i < kRecent; ++i) {
    const Recent& r = recent_[i];
    if (r.size == n && r.head == head && r.tail == tail &&
        (n <= 16 || std::memcmp(r.text, spelling.data(), n) == 0)) {
      const uint32_t hit = r.id;
      if (i > 0) std::swap(recent_[i], recent_[i - 1]);  // the often met drift to the front
      return hit;
    }
  }
  uint32_t found;
  if (auto it = by_spelling_.find(spelling); it != by_spelling_.end()) {
    found = it->second;
  } else {
    auto [at, added] = by_key_.try_emplace(value_key(v), static_cast<uint32_t>(first_.size()));
    if (added) first_.push_back(v);
    by_spelling_.emplace(spelling, at->second);
    found = at->second;
  }
  // Into a free place, else in place of the least met.
  recent_[recent_used_ < kRecent ? recent_used_++ : kRecent - 1] = {n, head, tail, spelling.data(),
                                                                    found};
  return found;
}

}  // namespace pypto::tools::clean
