#include "tools/trace_clean.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <deque>
#include <limits>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "tools/json_scan.hpp"

namespace pypto::tools {
namespace {

using json::Kind;
using json::Value;

// ---- the lanes ----

constexpr int kLaneCount = 7;
constexpr int kScalar = 6;
constexpr int kNoLane = -1;
constexpr std::array<std::string_view, kLaneCount> kLanes = {"MTE2",    "MTE1", "CUBE",  "VECTOR",
                                                             "FIXPIPE", "MTE3", "SCALAR"};
constexpr std::array<std::string_view, kLaneCount> kLabels = {
    "load (GM\u2192on-chip)", "L1\u2192L0", "matmul", "compute", "L0C out",
    "store (UB\u2192GM)",     "scalar"};
constexpr std::array<std::string_view, kLaneCount> kColors = {
    "thread_state_iowait", "olive", "rail_animation", "good", "yellow", "rail_load", "grey"};
constexpr double kEps = 1e-6;  // microseconds: far below one cycle, above float noise in ts + dur

// The lane a raw tid, thread name or detail pipe names ("VEC", "pipe_vector"), or kNoLane.
int lane_of(std::string_view name) {
  std::string up(name);
  for (char& c : up) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  }
  std::string_view t = up;
  if (t.substr(0, 5) == "PIPE_") t.remove_prefix(5);
  static constexpr std::pair<std::string_view, int> kAliases[] = {
      {"VEC", 3}, {"V", 3}, {"M", 2}, {"MMAD", 2}, {"FIX", 4}, {"S", kScalar}};
  for (const auto& [alias, lane] : kAliases) {
    if (t == alias) return lane;
  }
  for (int i = 0; i < kLaneCount; ++i) {
    if (t == kLanes[i]) return i;
  }
  return kNoLane;
}

[[noreturn]] void not_a_trace(const std::string& what) {
  throw TraceFormatError("not a trace: " + what);
}

// ---- Python's view of a scalar (the rules were written against orjson's objects) ----

bool is_python_int(const Value& v) { return v.integer && json::fits_python_int(v.text); }

// str(value), as Python prints what orjson parsed.
std::string python_str(const Value& v) {
  std::string scratch;
  switch (v.kind) {
    case Kind::kString:
      return std::string(json::text_of(v, scratch));
    case Kind::kNumber:
      return is_python_int(v) ? json::canonical_int(v.text)
                              : json::python_float_repr(json::number_of(v));
    case Kind::kTrue:
      return "True";
    case Kind::kFalse:
      return "False";
    case Kind::kAbsent:
    case Kind::kNull:
      return "None";
    default:
      return std::string(v.text);  // a container: its JSON stands in for Python's repr
  }
}

// repr(value): strings quoted and escaped like Python (ASCII controls, C1, NBSP, SHY).
std::string python_repr(const Value& v) {
  if (!v.is_string()) return python_str(v);
  const std::string s = python_str(v);
  const char q = s.find('\'') != std::string::npos && s.find('"') == std::string::npos ? '"' : '\'';
  std::string out(1, q);
  char buf[8];
  for (size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    const auto next = i + 1 < s.size() ? static_cast<unsigned char>(s[i + 1]) : 0;
    if (c == '\\' || c == q) {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\t' || c == '\n' || c == '\r') {
      out += c == '\t' ? "\\t" : c == '\n' ? "\\n" : "\\r";
    } else if (c < 0x20 || c == 0x7f) {
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else if (c == 0xC2 && (next <= 0xA0 || next == 0xAD) && next >= 0x80) {
      std::snprintf(buf, sizeof buf, "\\x%02x", next);
      out += buf;
      ++i;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + q;
}

// float(value) in Python: numbers, numeric strings and booleans.
bool to_float(const Value& v, double& out) {
  std::string scratch;
  switch (v.kind) {
    case Kind::kNumber:
      out = json::number_of(v);
      return true;
    case Kind::kTrue:
      out = 1.0;
      return true;
    case Kind::kFalse:
      out = 0.0;
      return true;
    case Kind::kString:
      return json::parse_float_text(json::text_of(v, scratch), out);
    default:
      return false;
  }
}

// Python's truthiness, for `dur or 0.0`.
bool falsy(const Value& v) {
  switch (v.kind) {
    case Kind::kAbsent:
    case Kind::kNull:
    case Kind::kFalse:
      return true;
    case Kind::kNumber:
      return json::number_of(v) == 0.0;
    case Kind::kString:
      return v.text.size() == 2;
    case Kind::kArray:
    case Kind::kObject: {
      json::Reader r(v.text);
      r.open(v.text[0]);
      return r.peek() == (v.kind == Kind::kArray ? ']' : '}');
    }
    default:
      return false;
  }
}

// Ids for pid / tid values, one per value Python compares equal (1 and 1.0 alike), so
// string and numeric ids both work; the first spelling seen names the id.
class ValueIds {
 public:
  uint32_t id(const Value& v) {
    const std::string_view spelling = v.present() ? v.text : std::string_view("null");
    if (auto it = by_spelling_.find(spelling); it != by_spelling_.end()) return it->second;
    auto [it, added] = by_key_.try_emplace(canonical(v), static_cast<uint32_t>(first_.size()));
    if (added) first_.push_back(v);
    by_spelling_.emplace(spelling, it->second);
    return it->second;
  }
  const Value& value(uint32_t id) const { return first_[id]; }

 private:
  static std::string canonical(const Value& v) {
    std::string scratch;
    switch (v.kind) {
      case Kind::kString:
        return "s" + std::string(json::text_of(v, scratch));
      case Kind::kTrue:
        return "n1";
      case Kind::kFalse:
        return "n0";
      case Kind::kNumber: {
        if (is_python_int(v)) return "n" + json::canonical_int(v.text);
        const double d = json::number_of(v);
        if (d == std::trunc(d) && std::fabs(d) < 1e20) {
          char buf[32];
          std::snprintf(buf, sizeof buf, "n%.0f", d == 0.0 ? 0.0 : d);
          return buf;
        }
        return "n" + json::python_float_repr(d);
      }
      default:
        return "z";
    }
  }

  std::unordered_map<std::string_view, uint32_t> by_spelling_;  // views into the payload
  std::unordered_map<std::string, uint32_t> by_key_;
  std::vector<Value> first_;
};

// ---- pass 1: the raw events ----

// The fields of one raw event the rules read (the last of a repeated key, like a dict).
struct Event {
  Value name, ph, pid, tid, ts, dur, args, cname, cat, id;
  int pids = 0, tids = 0, cnames = 0;  // how often each replaced key occurs
  bool canonical = false;              // the text is already in the writer's form
  size_t index = 0;                    // position in traceEvents
};

void read_event(json::Reader& r, Event& e) {
  std::string scratch;
  r.reset_canonical();
  r.open('{');
  for (bool first = true; r.more('}', first); first = false) {
    const Value k = r.key();
    const std::string_view key = json::text_of(k, scratch);
    const Value v = r.value();
    if (key == "ts") {
      e.ts = v;
    } else if (key == "ph") {
      e.ph = v;
    } else if (key == "pid") {
      e.pid = v, ++e.pids;
    } else if (key == "tid") {
      e.tid = v, ++e.tids;
    } else if (key == "cname") {
      e.cname = v, ++e.cnames;
    } else if (key == "dur") {
      e.dur = v;
    } else if (key == "name") {
      e.name = v;
    } else if (key == "args") {
      e.args = v;
    } else if (key == "cat") {
      e.cat = v;
    } else if (key == "id") {
      e.id = v;
    }
  }
  e.canonical = r.canonical();
}

bool string_is(const Value& v, std::string_view want) {
  if (!v.is_string()) return false;
  if (!v.escaped) return v.text.substr(1, v.text.size() - 2) == want;
  std::string scratch;
  return json::text_of(v, scratch) == want;
}

// The last `key` member of an object value (absent for anything else).
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

enum class Problem : uint8_t { kNone, kNoTs, kBadTs, kBadDur };

// One X slice: where its text is and when it runs.
// Where a member value sits in its slice's text, to be replaced on the way out.
struct Span {
  uint32_t at = 0, end = 0;
};

struct Slice {
  uint32_t thread;
  Problem problem;
  double ts, dur;
  size_t begin, end;  // its object's bytes in the payload
  // Set when the text is canonical and holds pid and tid once, cname at most once: then
  // the output is the text with those three values replaced.
  bool copy;
  Span pid, tid, cname;
};

// What a flag's args.detail names: producer lane, consumer lane, flag id (digits).
struct FlagRoute {
  int src, dst;
  std::string flag;
};

// The set times (starts) and wait times (ends) of one (pid, route).
struct FlagTimes {
  uint32_t pid, route;
  std::vector<double> sets, waits;
};

// One end of a tile-pipe arrow (pypto's "tpipe" flow events: a push on one core's lane to
// the pop on another's), re-anchored on the cleaned lanes like the flag arrows.
struct PipeEnd {
  uint32_t pid;
  int lane;
  double ts;
  std::string id;
  bool start;
};

struct OpenFlag {  // a flag's B event, waiting for its E
  Value ts, args;
};

// `PIPE:<a>,TRIGGERPIPE:<b>,FLAGID:<n>` anywhere in the text (the leftmost match).
bool parse_detail(std::string_view d, FlagRoute& route) {
  auto word = [&](size_t& p) {
    const size_t start = p;
    while (p < d.size() && (std::isalnum(static_cast<unsigned char>(d[p])) || d[p] == '_')) ++p;
    return d.substr(start, p - start);
  };
  for (size_t at = d.find("PIPE:"); at != std::string_view::npos; at = d.find("PIPE:", at + 1)) {
    size_t p = at + 5;
    const std::string_view src = word(p);
    if (src.empty() || d.substr(p, 13) != ",TRIGGERPIPE:") continue;
    p += 13;
    const std::string_view dst = word(p);
    if (dst.empty() || d.substr(p, 8) != ",FLAGID:") continue;
    p += 8;
    const size_t digits = p;
    while (p < d.size() && std::isdigit(static_cast<unsigned char>(d[p]))) ++p;
    if (p == digits) continue;
    route.src = lane_of(src);
    route.dst = lane_of(dst);
    if (route.src == kNoLane || route.dst == kNoLane) return false;
    std::string_view id = d.substr(digits, p - digits);
    while (id.size() > 1 && id[0] == '0') id.remove_prefix(1);  // int(): 007 is flag 7
    route.flag = std::string(id);
    return true;
  }
  return false;
}

// Everything one pass over traceEvents keeps.
class Collector {
 public:
  explicit Collector(const char* payload) : payload_(payload) {}
  void add(const Event& e, size_t begin, size_t end);

  ValueIds ids;
  std::vector<std::pair<uint32_t, uint32_t>> threads;  // (pid id, tid id)
  std::vector<Slice> slices;                           // event order
  std::vector<FlagTimes> flags;
  std::vector<FlagRoute> routes;
  std::vector<PipeEnd> pipe_ends;
  std::unordered_map<uint32_t, std::string> process_names;
  std::unordered_map<uint64_t, std::string> thread_names;

 private:
  uint32_t key_id(const Value& v, const Event& e, const char* what);
  uint32_t thread(uint32_t pid, uint32_t tid);
  void slice(const Event& e, size_t begin, size_t end);
  void metadata(const Event& e);
  void flag(const Event& e, bool is_set);
  void pipe_end(const Event& e);
  double flag_time(const Value& v, double fallback, const Event& e, const char* what);
  int route_of(const Value& args);

  const char* payload_;
  std::unordered_map<uint64_t, uint32_t> thread_ids_;
  std::unordered_map<uint64_t, std::vector<OpenFlag>> open_;
  std::unordered_map<std::string_view, int> routes_by_args_;  // args text -> route or -1
  std::unordered_map<std::string, int> route_ids_;
  std::unordered_map<uint64_t, uint32_t> flag_slots_;
};

uint64_t pair_key(uint32_t a, uint32_t b) { return (static_cast<uint64_t>(a) << 32) | b; }

uint32_t Collector::key_id(const Value& v, const Event& e, const char* what) {
  if (v.kind == Kind::kArray || v.kind == Kind::kObject) {
    not_a_trace("event " + std::to_string(e.index) + " has a " + what +
                " that is not a string or a number");
  }
  return ids.id(v);
}

uint32_t Collector::thread(uint32_t pid, uint32_t tid) {
  auto [it, added] =
      thread_ids_.try_emplace(pair_key(pid, tid), static_cast<uint32_t>(threads.size()));
  if (added) threads.emplace_back(pid, tid);
  return it->second;
}

void Collector::add(const Event& e, size_t begin, size_t end) {
  if (e.name.is_string()) {
    std::string scratch;
    const std::string_view name = json::text_of(e.name, scratch);
    if (name == "SET_FLAG" || name == "WAIT_FLAG") return flag(e, name == "SET_FLAG");
    if (name == "BAR" || name == "BARRIER" || name == "PIPE_BARRIER") return;
  }
  if (string_is(e.ph, "X")) {
    slice(e, begin, end);
  } else if (string_is(e.ph, "M")) {
    metadata(e);
  } else if ((string_is(e.ph, "s") || string_is(e.ph, "f")) && string_is(e.cat, "tpipe")) {
    pipe_end(e);
  }
}

void Collector::pipe_end(const Event& e) {
  std::string scratch;
  const std::string_view lane = e.tid.is_string() ? json::text_of(e.tid, scratch) : "";
  const auto at = std::find(kLanes.begin(), kLanes.end(), lane);
  double ts = 0.0;
  if (at == kLanes.end() || !to_float(e.ts, ts)) return;  // not one of pypto's: left out
  std::string id_scratch;
  const std::string id(e.id.is_string() ? json::text_of(e.id, id_scratch) : e.id.text);
  pipe_ends.push_back({key_id(e.pid, e, "pid"), static_cast<int>(at - kLanes.begin()), ts, id,
                       string_is(e.ph, "s")});
}

// Times are read now but judged later: only a slice on a kept lane must have them.
void Collector::slice(const Event& e, size_t begin, size_t end) {
  const uint32_t pid = key_id(e.pid, e, "pid");
  const uint32_t tid = key_id(e.tid, e, "tid");
  Slice s{thread(pid, tid), Problem::kNone, 0.0, 0.0, begin, end, false, {}, {}, {}};
  if (e.canonical && e.pids == 1 && e.tids == 1 && e.cnames <= 1) {
    auto span = [&](const Value& v) {
      const auto at = static_cast<uint32_t>(v.text.data() - (payload_ + begin));
      return Span{at, at + static_cast<uint32_t>(v.text.size())};
    };
    s.copy = true, s.pid = span(e.pid), s.tid = span(e.tid);
    if (e.cnames == 1) s.cname = span(e.cname);
  }
  if (!e.ts.present()) {
    s.problem = Problem::kNoTs;
  } else if (!to_float(e.ts, s.ts)) {
    s.problem = Problem::kBadTs;
  } else if (!falsy(e.dur) && !to_float(e.dur, s.dur)) {
    s.problem = Problem::kBadDur;
  }
  slices.push_back(s);
}

void Collector::metadata(const Event& e) {
  const bool process = string_is(e.name, "process_name");
  if (!process && !string_is(e.name, "thread_name")) return;
  const Value name = member(e.args, "name");
  if (!name.present() || name.kind == Kind::kNull) return;
  const uint32_t pid = key_id(e.pid, e, "pid");
  if (process) {
    process_names[pid] = python_str(name);
  } else {
    thread_names[pair_key(pid, key_id(e.tid, e, "tid"))] = python_str(name);
  }
}

double Collector::flag_time(const Value& v, double fallback, const Event& e, const char* what) {
  if (!v.present()) return fallback;
  double out = 0.0;
  if (!to_float(v, out))
    not_a_trace("event " + std::to_string(e.index) + " (a flag) has a " + what +
                " that is not a number");
  return out;
}

// A flag is an X-like slice or a B/E pair matched per (pid, tid, name), innermost first;
// the B event carries the detail and the start, the E event the end.
void Collector::flag(const Event& e, bool is_set) {
  const uint32_t pid = key_id(e.pid, e, "pid");
  const uint32_t tid = key_id(e.tid, e, "tid");
  const uint64_t open_key = (pair_key(pid, tid) << 1) | (is_set ? 1 : 0);
  double start = 0.0, end = 0.0;
  Value args = e.args;
  if (string_is(e.ph, "B")) {
    open_[open_key].push_back({e.ts, e.args});
    return;
  }
  if (string_is(e.ph, "E")) {
    auto it = open_.find(open_key);
    if (it == open_.end() || it->second.empty()) return;
    end = flag_time(e.ts, 0.0, e, "ts");
    const OpenFlag begin = it->second.back();
    it->second.pop_back();
    start = flag_time(begin.ts, 0.0, e, "ts");
    args = begin.args;
  } else {
    start = flag_time(e.ts, 0.0, e, "ts");
    end = start + (falsy(e.dur) ? 0.0 : flag_time(e.dur, 0.0, e, "dur"));
  }
  const int route = route_of(args);
  if (route < 0) return;
  auto [slot, added] = flag_slots_.try_emplace(pair_key(pid, static_cast<uint32_t>(route)),
                                               static_cast<uint32_t>(flags.size()));
  if (added) flags.push_back({pid, static_cast<uint32_t>(route), {}, {}});
  FlagTimes& times = flags[slot->second];
  (is_set ? times.sets : times.waits).push_back(is_set ? start : end);
}

// The route of a flag's args, cached by the args' text: a trace repeats a few of them.
int Collector::route_of(const Value& args) {
  if (auto it = routes_by_args_.find(args.text); it != routes_by_args_.end()) return it->second;
  const Value detail = member(args, "detail");
  std::string scratch;
  const std::string text = detail.is_string() ? std::string(json::text_of(detail, scratch))
                           : detail.present() ? python_str(detail)
                                              : std::string();
  FlagRoute route;
  int id = -1;
  if (parse_detail(text, route)) {
    const std::string key =
        std::to_string(route.src) + "/" + std::to_string(route.dst) + "/" + route.flag;
    auto [it, added] = route_ids_.try_emplace(key, static_cast<int>(routes.size()));
    if (added) routes.push_back(route);
    id = it->second;
  }
  routes_by_args_.emplace(args.text, id);
  return id;
}

// ---- layout: processes, lanes, sub-lanes ----

// One kept pipe of one core after packing, slices by start.
struct Lane {
  int lane = 0;
  int64_t out_pid = 0;
  int sub_lanes = 1;
  std::vector<uint32_t> order;  // slice indices
  std::vector<int64_t> tids;
  std::vector<double> starts, mids;
};

// Sorts a lane's slices by start (stable) and puts each on the first sub-lane free by then.
void pack(Lane& lane, const std::vector<Slice>& slices, int64_t base) {
  std::stable_sort(lane.order.begin(), lane.order.end(),
                   [&](uint32_t a, uint32_t b) { return slices[a].ts < slices[b].ts; });
  std::vector<double> lane_end{-std::numeric_limits<double>::infinity()};
  const size_t n = lane.order.size();
  lane.tids.resize(n);
  lane.starts.resize(n);
  lane.mids.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const Slice& s = slices[lane.order[i]];
    const double end = s.ts + s.dur;
    size_t k = 0;
    if (lane_end[0] > s.ts + kEps) {  // the main lane is busy: the first free other one
      k = 1;
      while (k < lane_end.size() && lane_end[k] > s.ts + kEps) ++k;
      if (k == lane_end.size()) lane_end.push_back(end);
    }
    lane_end[k] = end;
    lane.tids[i] = base + static_cast<int64_t>(k);
    lane.starts[i] = s.ts;
    lane.mids[i] = s.ts + s.dur / 2;
  }
  lane.sub_lanes = static_cast<int>(lane_end.size());
}

// Numbers compared as decimal digit strings (any length).
int compare_digits(std::string_view a, std::string_view b) {
  while (a.size() > 1 && a[0] == '0') a.remove_prefix(1);
  while (b.size() > 1 && b[0] == '0') b.remove_prefix(1);
  if (a.size() != b.size()) return a.size() < b.size() ? -1 : 1;
  return a.compare(b);
}

// Where a process sorts: `core<c>.(cube|vec)core<n>` in cluster order, the cube core first;
// names without that pattern after, by name.
struct CoreOrder {
  bool other = true;
  std::string cluster, index;
  bool vec = false;
  std::string name;

  explicit CoreOrder(std::string label) : name(std::move(label)) {
    const std::string_view s = name;
    auto digits = [&](size_t& p) {
      const size_t start = p;
      while (p < s.size() && std::isdigit(static_cast<unsigned char>(s[p]))) ++p;
      return s.substr(start, p - start);
    };
    for (size_t at = s.find("core"); at != std::string_view::npos; at = s.find("core", at + 1)) {
      size_t p = at + 4;
      const std::string_view c = digits(p);
      if (c.empty() || p >= s.size() || s[p] != '.') continue;
      ++p;
      const bool is_vec = s.substr(p, 3) == "vec";
      if (!is_vec && s.substr(p, 4) != "cube") continue;
      p += is_vec ? 3 : 4;
      if (s.substr(p, 4) != "core") continue;
      p += 4;
      const std::string_view n = digits(p);
      if (n.empty()) continue;
      other = false, cluster = std::string(c), vec = is_vec, index = std::string(n);
      return;
    }
  }

  bool operator<(const CoreOrder& o) const {
    if (other != o.other) return !other;
    if (!other) {
      if (int c = compare_digits(cluster, o.cluster)) return c < 0;
      if (vec != o.vec) return !vec;
      if (int c = compare_digits(index, o.index)) return c < 0;
    }
    return name < o.name;
  }
};

// ---- output ----

class Output {
 public:
  explicit Output(size_t reserve) { out_.reserve(reserve); }
  std::string& event() {  // starts the next element of traceEvents
    if (events_++ > 0) out_ += ',';
    return out_;
  }
  std::string& raw() { return out_; }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
  size_t events_ = 0;
};

void write_process(std::string& out, int64_t pid, const char* meta, std::string_view key) {
  out += "{\"name\":\"";
  out += meta;
  out += "\",\"ph\":\"M\",\"pid\":";
  json::write_int(out, pid);
  out += ",\"args\":{\"";
  out += key;
  out += "\":";
}

void write_thread(std::string& out, int64_t pid, int64_t tid, const char* meta,
                  std::string_view key) {
  out += "{\"name\":\"";
  out += meta;
  out += "\",\"ph\":\"M\",\"pid\":";
  json::write_int(out, pid);
  out += ",\"tid\":";
  json::write_int(out, tid);
  out += ",\"args\":{\"";
  out += key;
  out += "\":";
}

// A kept slice whose text is already canonical: copied, with the pid, tid and cname values
// swapped (a missing cname goes at the end).
void copy_slice(std::string& out, std::string_view text, const Slice& s, int64_t pid, int64_t tid,
                std::string_view color) {
  std::array<std::pair<Span, int>, 3> spans = {{{s.pid, 0}, {s.tid, 1}, {s.cname, 2}}};
  const size_t n = s.cname.end > 0 ? 3 : 2;
  std::sort(spans.begin(), spans.begin() + static_cast<long>(n),
            [](const auto& a, const auto& b) { return a.first.at < b.first.at; });
  size_t done = 0;
  for (size_t i = 0; i < n; ++i) {
    const auto& [span, which] = spans[i];
    out.append(text.data() + done, span.at - done);
    if (which == 2) {
      json::write_string(out, color);
    } else {
      json::write_int(out, which == 0 ? pid : tid);
    }
    done = span.end;
  }
  if (n == 3) {
    out.append(text.data() + done, text.size() - done);
    return;
  }
  out.append(text.data() + done, text.size() - 1 - done);  // all but the closing brace
  out += ",\"cname\":";
  json::write_string(out, color);
  out += '}';
}

// A kept slice: its own members re-written, with the new pid, tid and colour (added at the
// end when missing, as assigning to a Python dict does).
void write_slice(std::string& out, std::string_view text, size_t base, int64_t pid, int64_t tid,
                 std::string_view color) {
  json::Reader r(text, base);
  std::string scratch;
  bool seen_pid = false, seen_tid = false, seen_cname = false;
  out += '{';
  r.open('{');
  for (bool first = true; r.more('}', first); first = false) {
    const Value k = r.key();
    const Value v = r.value();
    if (!first) out += ',';
    const std::string_view key = json::text_of(k, scratch);
    if (k.escaped) {
      json::write_string(out, key);
    } else {
      out += k.text;
    }
    out += ':';
    if (key == "pid") {
      json::write_int(out, pid), seen_pid = true;
    } else if (key == "tid") {
      json::write_int(out, tid), seen_tid = true;
    } else if (key == "cname") {
      json::write_string(out, color), seen_cname = true;
    } else {
      json::write_value(out, v.text);
    }
  }
  const bool empty = out.back() == '{';
  if (!seen_pid) out += empty ? "\"pid\":" : ",\"pid\":", json::write_int(out, pid);
  if (!seen_tid) out += ",\"tid\":", json::write_int(out, tid);
  if (!seen_cname) out += ",\"cname\":", json::write_string(out, color);
  out += '}';
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

// ---- the whole rebuild ----

class Cleaner {
 public:
  Cleaner(std::string_view payload, bool keep_scalar)
      : payload_(payload), keep_scalar_(keep_scalar), got_(payload.data()) {}
  CleanTrace run(std::string_view source);

 private:
  void read_document();
  void read_events(json::Reader& r);
  void defer(const std::string& what);
  void layout(Output& out);
  std::string flows();
  void pipe_arrows(std::string& out);
  std::string lane_name(uint32_t thread) const;

  std::string_view payload_;
  bool keep_scalar_;
  bool top_is_object_ = false;
  Value other_data_;
  Collector got_;
  std::vector<Lane> lanes_;                       // in output order
  std::unordered_map<uint64_t, size_t> lane_at_;  // (pid id, lane) -> index in lanes_
  CleanStats stats_;
  std::string shape_error_;  // the first problem of shape, thrown once the syntax is known good
};

void Cleaner::read_document() {
  json::Reader r(payload_);
  const int c = r.peek();
  if (c == '[') {
    read_events(r);
  } else if (c == '{') {
    top_is_object_ = true;
    std::string scratch;
    r.open('{');
    for (bool first = true; r.more('}', first); first = false) {
      const std::string_view key = json::text_of(r.key(), scratch);
      if (key == "traceEvents" && r.peek() == '[') {
        got_ = Collector(payload_.data());  // a repeated key: the last one counts, as in a dict
        read_events(r);
      } else if (key == "traceEvents") {
        const Value v = r.value();
        if (!falsy(v)) defer("traceEvents is not an array");
        got_ = Collector(payload_.data());
      } else if (key == "otherData") {
        other_data_ = r.value();
      } else {
        r.value();
      }
    }
  } else {
    r.value();
    defer("the document is neither an object nor an array");
  }
  if (!r.at_end()) r.fail("unexpected data after the document");
  if (!shape_error_.empty()) throw TraceFormatError(shape_error_);
}

// Problems of shape wait until the whole document has been scanned, so a syntax error
// anywhere is reported first, as a parser building the whole document would.
void Cleaner::read_events(json::Reader& r) {
  r.open('[');
  // Events take 100-200 bytes: room for most slices up front saves regrowing a big vector.
  got_.slices.reserve(payload_.size() / 160);
  size_t index = 0;
  for (bool first = true; r.more(']', first); first = false, ++index) {
    if (r.peek() != '{') {
      const size_t at = r.pos();
      r.value();
      defer("event " + std::to_string(index) + " (at byte " + std::to_string(at) +
            ") is not an object");
      continue;
    }
    Event e;
    e.index = index;
    const size_t begin = r.pos();
    read_event(r, e);
    if (!shape_error_.empty()) continue;
    try {
      got_.add(e, begin, r.pos());
    } catch (const TraceFormatError& err) {
      shape_error_ = err.what();
    }
  }
}

void Cleaner::defer(const std::string& what) {
  if (shape_error_.empty()) shape_error_ = "not a trace: " + what;
}

std::string Cleaner::lane_name(uint32_t thread) const {
  const auto [pid, tid] = got_.threads[thread];
  auto it = got_.thread_names.find(pair_key(pid, tid));
  std::string name = it != got_.thread_names.end() ? it->second : python_str(got_.ids.value(tid));
  return name.substr(0, name.find(' '));
}

// Processes in core order, each with its lanes in dataflow order and their sub-lanes;
// writes the metadata events.
void Cleaner::layout(Output& out) {
  // Slices to lanes, in event order (several raw tids may name one lane).
  std::vector<int> lane_of_thread(got_.threads.size());
  for (uint32_t t = 0; t < got_.threads.size(); ++t) {
    const int lane = lane_of(lane_name(t));
    lane_of_thread[t] = lane == kScalar && !keep_scalar_ ? kNoLane : lane;
  }
  std::unordered_map<uint64_t, std::vector<uint32_t>> buckets;
  std::vector<uint32_t> pids;  // with a kept slice, in order of appearance
  for (uint32_t i = 0; i < got_.slices.size(); ++i) {
    const Slice& s = got_.slices[i];
    const int lane = lane_of_thread[s.thread];
    if (lane == kNoLane) continue;
    if (s.problem != Problem::kNone) {
      static const char* kWhat[] = {"", "has no ts", "has a ts that is not a number",
                                    "has a dur that is not a number"};
      not_a_trace("the X slice at byte " + std::to_string(s.begin) + " " +
                  kWhat[static_cast<int>(s.problem)]);
    }
    const uint32_t pid = got_.threads[s.thread].first;
    auto& bucket = buckets[pair_key(pid, static_cast<uint32_t>(lane))];
    if (bucket.empty() && std::find(pids.begin(), pids.end(), pid) == pids.end())
      pids.push_back(pid);
    bucket.push_back(i);
  }
  std::vector<std::pair<CoreOrder, uint32_t>> procs;
  for (uint32_t pid : pids) {
    auto it = got_.process_names.find(pid);
    procs.emplace_back(
        CoreOrder(it != got_.process_names.end() ? it->second : python_str(got_.ids.value(pid))),
        pid);
  }
  std::stable_sort(procs.begin(), procs.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  int64_t n = 0;
  for (const auto& [order, pid] : procs) {
    ++n;
    write_process(out.event(), n, "process_name", "name");
    json::write_string(out.raw(), order.name);
    out.raw() += "}}";
    write_process(out.event(), n, "process_sort_index", "sort_index");
    json::write_int(out.raw(), n);
    out.raw() += "}}";
    for (int lane = 0; lane < kLaneCount; ++lane) {
      auto it = buckets.find(pair_key(pid, static_cast<uint32_t>(lane)));
      if (it == buckets.end()) continue;
      const int64_t base = (lane + 1) * 100;
      Lane packed;
      packed.lane = lane;
      packed.out_pid = n;
      packed.order = std::move(it->second);
      pack(packed, got_.slices, base);
      for (int k = 0; k < packed.sub_lanes; ++k) {
        std::string label(kLanes[lane]);
        if (k > 0) label += "#" + std::to_string(k);
        label += " \u00b7 ";
        label += kLabels[lane];
        write_thread(out.event(), n, base + k, "thread_name", "name");
        json::write_string(out.raw(), label);
        out.raw() += "}}";
        write_thread(out.event(), n, base + k, "thread_sort_index", "sort_index");
        json::write_int(out.raw(), base + k);
        out.raw() += "}}";
      }
      stats_.lanes += packed.sub_lanes;
      stats_.slices += static_cast<int64_t>(packed.order.size());
      lane_at_[pair_key(pid, static_cast<uint32_t>(lane))] = lanes_.size();
      lanes_.push_back(std::move(packed));
    }
  }
}

// The arrows, as JSON events; flag keys in the order of their Python repr, so arrow ids
// are deterministic and the same as the Python tool gave.
std::string Cleaner::flows() {
  std::vector<std::pair<std::string, size_t>> keys;
  for (size_t i = 0; i < got_.flags.size(); ++i) {
    const FlagTimes& f = got_.flags[i];
    const FlagRoute& r = got_.routes[f.route];
    keys.emplace_back("(" + python_repr(got_.ids.value(f.pid)) + ", '" +
                          std::string(kLanes[r.src]) + "', '" + std::string(kLanes[r.dst]) + "', " +
                          r.flag + ")",
                      i);
  }
  std::stable_sort(keys.begin(), keys.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::string out;
  for (const auto& [repr, i] : keys) {
    FlagTimes& f = got_.flags[i];
    const FlagRoute& route = got_.routes[f.route];
    std::sort(f.sets.begin(), f.sets.end());
    std::sort(f.waits.begin(), f.waits.end());
    const size_t pairs = std::min(f.sets.size(), f.waits.size());
    stats_.skipped_flags += static_cast<int64_t>(std::max(f.sets.size(), f.waits.size()) - pairs);
    auto prod = lane_at_.find(pair_key(f.pid, static_cast<uint32_t>(route.src)));
    auto cons = lane_at_.find(pair_key(f.pid, static_cast<uint32_t>(route.dst)));
    if (prod == lane_at_.end() || cons == lane_at_.end()) {
      stats_.skipped_flags += static_cast<int64_t>(pairs);
      continue;
    }
    const Lane& p = lanes_[prod->second];
    const Lane& c = lanes_[cons->second];
    const std::string name = std::string(kLanes[route.src]) + "\u2192" +
                             std::string(kLanes[route.dst]) + " flag" + route.flag;
    for (size_t k = 0; k < pairs; ++k) {
      // The last producer slice starting by the set, the first consumer one from the wait on.
      const auto i_end = std::upper_bound(p.starts.begin(), p.starts.end(), f.sets[k] + kEps);
      const auto j = std::lower_bound(c.starts.begin(), c.starts.end(), f.waits[k] - kEps);
      if (i_end == p.starts.begin() || j == c.starts.end()) {
        ++stats_.skipped_flags;
        continue;
      }
      const size_t pi = static_cast<size_t>(i_end - p.starts.begin()) - 1;
      const size_t ci = static_cast<size_t>(j - c.starts.begin());
      const int64_t id = ++stats_.flows;
      if (!out.empty()) out += ',';
      write_arrow(out, name, id, p.out_pid, true, p.tids[pi], p.mids[pi]);
      out += ',';
      write_arrow(out, name, id, p.out_pid, false, c.tids[ci], c.mids[ci]);
    }
  }
  pipe_arrows(out);
  return out;
}

// Tile-pipe arrows: each push slice to the pop slice that received it, across cores.
void Cleaner::pipe_arrows(std::string& out) {
  std::map<std::string, std::pair<const PipeEnd*, const PipeEnd*>> by_id;
  for (const PipeEnd& e : got_.pipe_ends) (e.start ? by_id[e.id].first : by_id[e.id].second) = &e;
  for (const auto& [key, ends] : by_id) {
    if (ends.first == nullptr || ends.second == nullptr) continue;
    auto prod = lane_at_.find(pair_key(ends.first->pid, static_cast<uint32_t>(ends.first->lane)));
    auto cons = lane_at_.find(pair_key(ends.second->pid, static_cast<uint32_t>(ends.second->lane)));
    if (prod == lane_at_.end() || cons == lane_at_.end()) continue;
    const Lane& p = lanes_[prod->second];
    const Lane& c = lanes_[cons->second];
    const auto i_end = std::upper_bound(p.starts.begin(), p.starts.end(), ends.first->ts + kEps);
    const auto j = std::lower_bound(c.starts.begin(), c.starts.end(), ends.second->ts - kEps);
    if (i_end == p.starts.begin() || j == c.starts.end()) continue;
    const size_t pi = static_cast<size_t>(i_end - p.starts.begin()) - 1;
    const size_t ci = static_cast<size_t>(j - c.starts.begin());
    const int64_t id = ++stats_.flows;
    if (!out.empty()) out += ',';
    write_arrow(out, "tile pipe", id, p.out_pid, true, p.tids[pi], p.mids[pi]);
    out += ',';
    write_arrow(out, "tile pipe", id, c.out_pid, false, c.tids[ci], c.mids[ci]);
  }
}

CleanTrace Cleaner::run(std::string_view source) {
  read_document();
  Output out(payload_.size() + payload_.size() / 4 + 4096);
  out.raw() += "{\"traceEvents\":[";
  layout(out);
  const std::string arrows = flows();
  for (const Lane& lane : lanes_) {
    const std::string_view color = kColors[lane.lane];
    for (size_t i = 0; i < lane.order.size(); ++i) {
      const Slice& s = got_.slices[lane.order[i]];
      const std::string_view text = payload_.substr(s.begin, s.end - s.begin);
      if (s.copy) {
        copy_slice(out.event(), text, s, lane.out_pid, lane.tids[i], color);
      } else {
        write_slice(out.event(), text, s.begin, lane.out_pid, lane.tids[i], color);
      }
    }
  }
  if (!arrows.empty()) out.event() += arrows;
  std::string& o = out.raw();
  o += "],\"displayTimeUnit\":\"ns\",\"otherData\":{\"generator\":\"pypto.tools.clean_sim_trace\","
       "\"skipped_flags\":";
  json::write_int(o, stats_.skipped_flags);
  if (top_is_object_) {
    o += ",\"source_otherData\":";
    if (other_data_.present()) {
      json::write_value(o, other_data_.text);
    } else {
      o += "{}";
    }
  }
  o += ",\"source\":";
  json::write_string(o, source);
  o += "}}";
  return {out.take(), stats_};
}

}  // namespace

CleanTrace clean_trace(std::string_view payload, bool keep_scalar, std::string_view source) {
  try {
    return Cleaner(payload, keep_scalar).run(source);
  } catch (const json::SyntaxError& e) {
    throw TraceFormatError(std::string("not valid JSON: ") + e.what());
  }
}

}  // namespace pypto::tools
