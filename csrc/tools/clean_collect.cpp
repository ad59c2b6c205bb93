#include "tools/clean_collect.hpp"

#include <algorithm>

namespace pypto::tools::clean {

namespace {

// The members an event is read for, told apart by length and then by their bytes as one
// word (no compare call per candidate name).
enum class Member { kOther, kTs, kPh, kPid, kTid, kCname, kDur, kName, kArgs, kCat, kId };

constexpr uint64_t word_of(std::string_view s) {
  uint64_t w = 0;
  for (size_t i = 0; i < s.size(); ++i) w |= uint64_t{static_cast<unsigned char>(s[i])} << (8 * i);
  return w;
}

Member member_of(std::string_view key) {
  const size_t n = key.size();
  if (n < 2 || n > 5) return Member::kOther;
  uint64_t w = 0;
  for (size_t i = 0; i < n; ++i) w |= uint64_t{static_cast<unsigned char>(key[i])} << (8 * i);
  switch (n) {
    case 2:
      return w == word_of("ts")   ? Member::kTs
             : w == word_of("ph") ? Member::kPh
             : w == word_of("id") ? Member::kId
                                  : Member::kOther;
    case 3:
      return w == word_of("pid")   ? Member::kPid
             : w == word_of("tid") ? Member::kTid
             : w == word_of("dur") ? Member::kDur
             : w == word_of("cat") ? Member::kCat
                                   : Member::kOther;
    case 4:
      return w == word_of("name")   ? Member::kName
             : w == word_of("args") ? Member::kArgs
                                    : Member::kOther;
    default:
      return w == word_of("cname") ? Member::kCname : Member::kOther;
  }
}

void take_member(Event& e, Member m, const Value& v) {
  switch (m) {
    case Member::kTs:
      e.ts = v;
      break;
    case Member::kPh:
      e.ph = v;
      break;
    case Member::kPid:
      e.pid = v, ++e.pids;
      break;
    case Member::kTid:
      e.tid = v, ++e.tids;
      break;
    case Member::kCname:
      e.cname = v, ++e.cnames;
      break;
    case Member::kDur:
      e.dur = v;
      break;
    case Member::kName:
      e.name = v;
      break;
    case Member::kArgs:
      e.args = v;
      break;
    case Member::kCat:
      e.cat = v;
      break;
    case Member::kId:
      e.id = v;
      break;
    case Member::kOther:
      break;
  }
}

}  // namespace

void read_event(json::Reader& r, Event& e) {
  r.reset_compact();
  // Most events are compact and plain: one straight pass (keys hold no escapes there).
  if (r.compact_object([&](const Value& k, const Value& v) {
        take_member(e, member_of(std::string_view(k.text.data() + 1, k.text.size() - 2)), v);
      })) {
    e.compact = r.compact();
    return;
  }
  const size_t index = e.index;
  e = Event();
  e.index = index;
  std::string scratch;
  r.reset_compact();
  r.open('{');
  for (bool first = true; r.more('}', first); first = false) {
    const Value k = r.key();
    const Member m = member_of(json::text_of(k, scratch));
    take_member(e, m, r.value());
  }
  e.compact = r.compact();
}

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
  if (at == kLanes.end() || !time_of(e.ts, ts)) return;  // not one of pypto's: left out
  pipe_ends.push_back({key_id(e.pid, e, "pid"), static_cast<int>(at - kLanes.begin()), ts,
                       name_of(e.id), string_is(e.ph, "s")});
}

// Times are read now but judged later: only a slice on a kept lane must have them.
void Collector::slice(const Event& e, size_t begin, size_t end) {
  const uint32_t pid = key_id(e.pid, e, "pid");
  const uint32_t tid = key_id(e.tid, e, "tid");
  Slice s{thread(pid, tid), Problem::kNone, 0.0, 0.0, begin, end, false, {}, {}, {}};
  if (e.compact && e.pids == 1 && e.tids == 1 && e.cnames <= 1) {
    auto span = [&](const Value& v) {
      const auto at = static_cast<uint32_t>(v.text.data() - (payload_ + begin));
      return Span{at, at + static_cast<uint32_t>(v.text.size())};
    };
    s.copy = true, s.pid = span(e.pid), s.tid = span(e.tid);
    if (e.cnames == 1) s.cname = span(e.cname);
  }
  if (sources_ != nullptr && e.args.kind == Kind::kObject) {
    s.source = source_of(e.args);
    s.args_end =
        static_cast<uint32_t>(e.args.text.data() + e.args.text.size() - 1 - (payload_ + begin));
  }
  if (!e.ts.present()) {
    s.problem = Problem::kNoTs;
  } else if (!time_of(e.ts, s.ts)) {
    s.problem = Problem::kBadTs;
  } else if (e.dur.present() && e.dur.kind != Kind::kNull && !time_of(e.dur, s.dur)) {
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
    process_names[pid] = name_of(name);
  } else {
    thread_names[pair_key(pid, key_id(e.tid, e, "tid"))] = name_of(name);
  }
}

// A flag's ts or dur: absent reads as 0.
double Collector::flag_time(const Value& v, const Event& e, const char* what) {
  double out = 0.0;
  if (v.present() && !time_of(v, out))
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
    end = flag_time(e.ts, e, "ts");
    const OpenFlag begin = it->second.back();
    it->second.pop_back();
    start = flag_time(begin.ts, e, "ts");
    args = begin.args;
  } else {
    start = flag_time(e.ts, e, "ts");
    end = start + (e.dur.kind == Kind::kNull ? 0.0 : flag_time(e.dur, e, "dur"));
  }
  const int route = route_of(args);
  if (route < 0) return;
  auto [slot, added] = flag_slots_.try_emplace(pair_key(pid, static_cast<uint32_t>(route)),
                                               static_cast<uint32_t>(flags.size()));
  if (added) flags.push_back({pid, static_cast<uint32_t>(route), {}, {}});
  FlagTimes& times = flags[slot->second];
  (is_set ? times.sets : times.waits).push_back(is_set ? start : end);
}

// The route of a flag's args, cached by the args' text: a trace repeats a few of them. Only
// a string detail names one.
int Collector::route_of(const Value& args) {
  if (auto it = routes_by_args_.find(args.text); it != routes_by_args_.end()) return it->second;
  const Value detail = member(args, "detail");
  std::string scratch;
  FlagRoute route;
  int id = -1;
  if (detail.is_string() && parse_detail(json::text_of(detail, scratch), route)) {
    const std::string key =
        std::to_string(route.src) + "/" + std::to_string(route.dst) + "/" + route.flag;
    auto [it, added] = route_ids_.try_emplace(key, static_cast<int>(routes.size()));
    if (added) routes.push_back(route);
    id = it->second;
  }
  routes_by_args_.emplace(args.text, id);
  return id;
}

// The source line of a slice's args (rule 7), cached by the args' text: a trace repeats the
// args of each static instruction.
int32_t Collector::source_of(const Value& args) {
  if (auto it = sources_by_args_.find(args.text); it != sources_by_args_.end()) return it->second;
  int32_t id = -1;
  const Value pc = member(args, "pc_addr");
  if (pc.is_string() && !member(args, "source_line").present()) {
    std::string scratch;
    auto found = sources_->by_pc.find(std::string(json::text_of(pc, scratch)));
    if (found != sources_->by_pc.end()) id = found->second;
  }
  sources_by_args_.emplace(args.text, id);
  return id;
}

}  // namespace pypto::tools::clean
