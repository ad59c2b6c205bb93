#include "tools/trace_clean.hpp"

#include <algorithm>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "tools/clean_collect.hpp"
#include "tools/clean_layout.hpp"
#include "tools/clean_output.hpp"
#include "tools/json_scan.hpp"

namespace pypto::tools::clean {
namespace {

class Cleaner {
 public:
  Cleaner(std::string_view payload, bool keep_scalar, const SourceLines& sources)
      : payload_(payload),
        keep_scalar_(keep_scalar),
        sources_(source_table(sources)),
        got_(payload.data(), sources_ptr()) {}
  void read_document();        // first: the whole document is checked before a byte is written
  size_t added_bytes() const;  // what rule 7 adds to the slices' text
  CleanStats run(std::string_view source, Output& out);

 private:
  void read_events(json::Reader& r);
  void defer(const std::string& what);
  void layout(Output& out);
  void flows(Output& out);
  void flag_arrows(Output& out, const FlagRoute& route, FlagTimes& f, const Lane& p, const Lane& c);
  void pipe_arrows(Output& out);
  std::string lane_name(uint32_t thread) const;
  static SourceTable source_table(const SourceLines& sources);
  const SourceTable* sources_ptr() const { return sources_.members.empty() ? nullptr : &sources_; }

  std::string_view payload_;
  bool keep_scalar_;
  SourceTable sources_;
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
        got_ = Collector(payload_.data(), sources_ptr());  // of a repeated key the last counts
        read_events(r);
      } else if (key == "traceEvents") {
        const Value v = r.value();
        if (v.kind != Kind::kNull) defer("traceEvents is not an array");
        got_ = Collector(payload_.data(), sources_ptr());
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
  // Events take 100-200 bytes: room for every slice up front saves regrowing (copying) a big
  // vector; the pages of room left unused are never touched.
  reserve_huge(got_.slices, payload_.size() / 96);
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

SourceTable Cleaner::source_table(const SourceLines& sources) {
  SourceTable table;
  for (const auto& [pc, line] : sources) {
    table.by_pc.emplace(pc, static_cast<int32_t>(table.members.size()));
    std::string member = "\"source_line\":";
    json::write_string(member, line);
    table.members.push_back(std::move(member));
  }
  return table;
}

size_t Cleaner::added_bytes() const {
  size_t n = 0;
  for (const Slice& s : got_.slices) n += s.source >= 0 ? sources_.members[s.source].size() + 1 : 0;
  return n;
}

void Cleaner::defer(const std::string& what) {
  if (shape_error_.empty()) shape_error_ = "not a trace: " + what;
}

std::string Cleaner::lane_name(uint32_t thread) const {
  const auto [pid, tid] = got_.threads[thread];
  auto it = got_.thread_names.find(pair_key(pid, tid));
  std::string name = it != got_.thread_names.end() ? it->second : name_of(got_.ids.value(tid));
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
        CoreOrder(it != got_.process_names.end() ? it->second : name_of(got_.ids.value(pid))), pid);
  }
  std::stable_sort(procs.begin(), procs.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  int64_t n = 0;
  for (const auto& [order, pid] : procs) {
    ++n;
    write_meta(out.event(), n, -1, "process_name", "name");
    json::write_string(out.raw(), order.name);
    out.raw() += "}}";
    write_meta(out.event(), n, -1, "process_sort_index", "sort_index");
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
        write_meta(out.event(), n, base + k, "thread_name", "name");
        json::write_string(out.raw(), label);
        out.raw() += "}}";
        write_meta(out.event(), n, base + k, "thread_sort_index", "sort_index");
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

// The flag arrows, then the tile-pipe ones, as JSON events. Flags go by output process, source
// lane, target lane (dataflow order) and flag number, so arrow ids follow the picture.
void Cleaner::flows(Output& out) {
  struct Keyed {
    int64_t pid;
    const FlagRoute* route;
    FlagTimes* times;
    const Lane *prod, *cons;
  };
  std::vector<Keyed> keyed;
  for (FlagTimes& f : got_.flags) {
    const FlagRoute& route = got_.routes[f.route];
    const size_t pairs = std::min(f.sets.size(), f.waits.size());
    stats_.skipped_flags += static_cast<int64_t>(std::max(f.sets.size(), f.waits.size()) - pairs);
    auto prod = lane_at_.find(pair_key(f.pid, static_cast<uint32_t>(route.src)));
    auto cons = lane_at_.find(pair_key(f.pid, static_cast<uint32_t>(route.dst)));
    if (prod == lane_at_.end() || cons == lane_at_.end()) {
      stats_.skipped_flags += static_cast<int64_t>(pairs);
      continue;
    }
    const Lane& p = lanes_[prod->second];
    keyed.push_back({p.out_pid, &route, &f, &p, &lanes_[cons->second]});
  }
  std::sort(keyed.begin(), keyed.end(), [](const Keyed& a, const Keyed& b) {
    if (a.pid != b.pid) return a.pid < b.pid;
    if (a.route->src != b.route->src) return a.route->src < b.route->src;
    if (a.route->dst != b.route->dst) return a.route->dst < b.route->dst;
    return compare_digits(a.route->flag, b.route->flag) < 0;
  });
  for (const Keyed& k : keyed) flag_arrows(out, *k.route, *k.times, *k.prod, *k.cons);
  pipe_arrows(out);
}

// One flag's set -> wait pairs, first in first out: from the last producer slice starting by
// the set to the first consumer slice starting once the wait is over.
void Cleaner::flag_arrows(Output& out, const FlagRoute& route, FlagTimes& f, const Lane& p,
                          const Lane& c) {
  // A simulator writes them in time order: checking is one pass, sorting many.
  if (!std::is_sorted(f.sets.begin(), f.sets.end())) std::sort(f.sets.begin(), f.sets.end());
  if (!std::is_sorted(f.waits.begin(), f.waits.end())) std::sort(f.waits.begin(), f.waits.end());
  const std::string head = arrow_head(std::string(kLanes[route.src]) + "\u2192" +
                                      std::string(kLanes[route.dst]) + " flag" + route.flag);
  const size_t pairs = std::min(f.sets.size(), f.waits.size());
  for (size_t k = 0; k < pairs; ++k) {
    const auto i_end = std::upper_bound(p.starts.begin(), p.starts.end(), f.sets[k] + kEps);
    const auto j = std::lower_bound(c.starts.begin(), c.starts.end(), f.waits[k] - kEps);
    if (i_end == p.starts.begin() || j == c.starts.end()) {
      ++stats_.skipped_flags;
      continue;
    }
    const size_t pi = static_cast<size_t>(i_end - p.starts.begin()) - 1;
    const size_t ci = static_cast<size_t>(j - c.starts.begin());
    const int64_t id = ++stats_.flows;
    write_arrow(out, head, id, p.out_pid, true, p.tids[pi], p.mids[pi]);
    write_arrow(out, head, id, p.out_pid, false, c.tids[ci], c.mids[ci]);
  }
}

// Tile-pipe arrows: each push slice to the pop slice that received it, across cores.
void Cleaner::pipe_arrows(Output& out) {
  const std::string head = arrow_head("tile pipe");
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
    write_arrow(out, head, id, p.out_pid, true, p.tids[pi], p.mids[pi]);
    write_arrow(out, head, id, c.out_pid, false, c.tids[ci], c.mids[ci]);
  }
}

CleanStats Cleaner::run(std::string_view source, Output& out) {
  out.raw() += "{\"traceEvents\":[";
  layout(out);
  for (const Lane& lane : lanes_) {
    const std::string_view color = kColors[lane.lane];
    for (size_t i = 0; i < lane.order.size(); ++i) {
      const Slice& s = got_.slices[lane.order[i]];
      const std::string_view text = payload_.substr(s.begin, s.end - s.begin);
      const std::string_view source =
          s.source >= 0 ? std::string_view(sources_.members[s.source]) : std::string_view();
      write_slice(out, text, s.begin, s, lane.out_pid, lane.tids[i], color, source);
    }
  }
  flows(out);  // after the slices, by the same events
  std::string& o = out.raw();
  o += "],\"displayTimeUnit\":\"ns\",\"otherData\":{\"generator\":\"pypto.tools.clean_sim_trace\","
       "\"skipped_flags\":";
  json::write_int(o, stats_.skipped_flags);
  if (top_is_object_) {
    o += ",\"source_otherData\":";
    if (other_data_.present()) {
      json::write_compact(o, other_data_.text);
    } else {
      o += "{}";
    }
  }
  o += ",\"source\":";
  json::write_string(o, source);
  o += "}}";
  return stats_;
}

}  // namespace
}  // namespace pypto::tools::clean

namespace pypto::tools {

CleanTrace clean_trace(std::string_view payload, bool keep_scalar, std::string_view source,
                       const SourceLines& sources) {
  try {
    clean::Cleaner cleaner(payload, keep_scalar, sources);
    cleaner.read_document();
    clean::Output out(payload.size() + payload.size() / 4 + cleaner.added_bytes() + 4096);
    const CleanStats stats = cleaner.run(source, out);
    return {out.take(), stats};
  } catch (const json::SyntaxError& e) {
    throw TraceFormatError(std::string("not valid JSON: ") + e.what());
  }
}

CleanStats clean_trace_to_file(std::string_view payload, bool keep_scalar, std::string_view source,
                               const std::string& path, const SourceLines& sources) {
  clean::Cleaner cleaner(payload, keep_scalar, sources);
  try {
    cleaner.read_document();  // a bad document is found before the file is created
  } catch (const json::SyntaxError& e) {
    throw TraceFormatError(std::string("not valid JSON: ") + e.what());
  }
  clean::Output out(path);
  const CleanStats stats = cleaner.run(source, out);
  out.take();
  return stats;
}

}  // namespace pypto::tools
