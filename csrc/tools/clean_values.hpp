// clean_sim_trace's reading of raw event fields (internal to csrc/tools): what counts as a
// time, a name and an id. Every rule is stated on JSON values:
// - a time (ts, dur) is a number, or a string holding a decimal number ("1.5");
// - a name (a pid, tid or metadata args.name) is a string's text, or a number's JSON text;
// - pids and tids are the same id when they are equal JSON values: strings by their text,
//   numbers by value (7 and 7.0 alike), true, false and null each their own.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tools/json_scan.hpp"

namespace pypto::tools::clean {

using json::Kind;
using json::Value;

// Whether a value is the string `want`.
bool string_is(const Value& v, std::string_view want);

// The last `key` member of an object value (absent for anything else).
Value member(const Value& object, std::string_view key);

// A time: a number, or a string holding one; false for anything else.
bool time_of(const Value& v, double& out);

// A name: a string's text, or the JSON text of any other value ("null" when absent).
std::string name_of(const Value& v);

// Dense ids for pid / tid values, one per JSON value (see above); the first spelling seen
// names the id.
class ValueIds {
 public:
  uint32_t id(const Value& v);
  const Value& value(uint32_t id) const { return first_[id]; }

 private:
  // A trace names its few pids and tids again and again: the spellings met most are checked
  // first, by length and their first and last eight bytes (a whole compare only past 16).
  struct Recent {
    size_t size = 0;
    uint64_t head = 0, tail = 0;
    const char* text = nullptr;
    uint32_t id = 0;
  };
  static constexpr size_t kRecent = 8;
  std::array<Recent, kRecent> recent_{};
  size_t recent_used_ = 0;

  std::unordered_map<std::string_view, uint32_t> by_spelling_;  // views into the payload
  std::unordered_map<std::string, uint32_t> by_key_;
  std::vector<Value> first_;
};

}  // namespace pypto::tools::clean
