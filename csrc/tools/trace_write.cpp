// See trace_write.hpp. After a validation pass (so bad input writes nothing), one pass over
// the records formats the events (each string's JSON spelling is computed once, by the
// caller) and totals them per static instruction; the text goes to trace.json and, framed as
// a TRACE block, to visualize_data.bin in 1 MiB chunks, so no copy of the whole payload is
// ever held in memory.
#include "tools/trace_write.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <string_view>
#include <unordered_map>

namespace pypto::tools {
namespace {

// The container's block framing, as pypto/tools/opprof_format.py defines it.
constexpr uint8_t kTraceBlock = 2;
constexpr uint8_t kMagic = 0x5A;
constexpr size_t kAlign = 4;

std::string hex_address(uint64_t v) {
  char tmp[24] = "0x";
  auto [end, ec] = std::to_chars(tmp + 2, tmp + sizeof tmp, v, 16);
  return std::string(tmp, static_cast<size_t>(end - tmp));
}

void write_all(int fd, std::string_view data, const std::string& path) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw TraceWriteError("cannot write " + path + ": " + std::strerror(errno));
    data.remove_prefix(static_cast<size_t>(n));
  }
}

std::string block_header(size_t payload_bytes, size_t padding) {
  std::string h(12, '\0');
  const uint64_t size = payload_bytes + padding;
  for (int i = 0; i < 8; ++i) h[i] = static_cast<char>((size >> (8 * i)) & 0xFF);
  h[8] = static_cast<char>(kTraceBlock);
  h[9] = static_cast<char>(padding);
  h[10] = 0;  // version
  h[11] = static_cast<char>(kMagic);
  return h;
}

// Both output files, written as the events are formatted: trace.json gets the payload, the
// container gets the prefix, a TRACE block header (rewritten with the size at the end), the
// payload and the padding.
class Files {
 public:
  Files(const std::string& json_path, const std::string& bin_path, std::string_view bin_prefix)
      : json_path_(json_path), bin_path_(bin_path) {
    json_ = open_out(json_path);
    bin_ = open_out(bin_path);
    write_all(bin_, bin_prefix, bin_path_);
    header_at_ = bin_prefix.size();
    write_all(bin_, std::string(12, '\0'), bin_path_);
  }
  ~Files() {
    if (json_ >= 0) ::close(json_);
    if (bin_ >= 0) ::close(bin_);
  }
  void emit(std::string_view chunk) {
    write_all(json_, chunk, json_path_);
    write_all(bin_, chunk, bin_path_);
    payload_ += chunk.size();
  }
  void finish() {
    const size_t padding = (kAlign - payload_ % kAlign) % kAlign;
    write_all(bin_, std::string_view("\0\0\0\0", padding), bin_path_);
    const std::string header = block_header(payload_, padding);
    if (::pwrite(bin_, header.data(), header.size(), static_cast<off_t>(header_at_)) !=
        static_cast<ssize_t>(header.size())) {
      throw TraceWriteError("cannot write " + bin_path_ + ": " + std::strerror(errno));
    }
    close_checked(json_, json_path_);
    close_checked(bin_, bin_path_);
  }

 private:
  static int open_out(const std::string& path) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) throw TraceWriteError("cannot create " + path + ": " + std::strerror(errno));
    return fd;
  }
  static void close_checked(int& fd, const std::string& path) {
    const int rc = ::close(fd);
    fd = -1;
    if (rc != 0) throw TraceWriteError("cannot write " + path + ": " + std::strerror(errno));
  }
  std::string json_path_, bin_path_;
  int json_ = -1, bin_ = -1;
  size_t header_at_ = 0, payload_ = 0;
};

// The event text, handed to the files in chunks that stay in the CPU cache. Appends are
// unchecked copies into room reserved beforehand (one check per event, not per field).
class Out {
 public:
  static constexpr size_t kChunk = size_t{1} << 20;
  explicit Out(Files& files) : files_(files), buf_(kChunk) {}
  void reserve(size_t n) {
    if (pos_ + n <= buf_.size()) return;
    flush();
    if (n > buf_.size()) buf_.resize(n);
  }
  void flush() {
    files_.emit(std::string_view(buf_.data(), pos_));
    pos_ = 0;
  }
  void put(std::string_view s) {
    std::memcpy(buf_.data() + pos_, s.data(), s.size());
    pos_ += s.size();
  }
  void put(char c) { buf_[pos_++] = c; }
  void integer(int64_t v) {
    auto [end, ec] = std::to_chars(buf_.data() + pos_, buf_.data() + buf_.size(), v);
    pos_ = static_cast<size_t>(end - buf_.data());
  }
  // Cycles as trace microseconds (1 cycle = 1 ns): the exact decimal c / 1000.
  void cycles_as_us(int64_t c) {
    if (c < 0) {
      put('-');
      c = -c;
    }
    integer(c / 1000);
    int64_t frac = c % 1000;
    if (frac == 0) return;
    const char digits[3] = {static_cast<char>('0' + frac / 100),
                            static_cast<char>('0' + frac / 10 % 10),
                            static_cast<char>('0' + frac % 10)};
    size_t n = 3;
    while (digits[n - 1] == '0') --n;
    put('.');
    put(std::string_view(digits, n));
  }

 private:
  Files& files_;
  std::vector<char> buf_;
  size_t pos_ = 0;
};

// Numbers static instructions — distinct (name, source, pipe) — across the cores of a launch.
class SiteTable {
 public:
  int code(const CoreRecordsView& core, int32_t name, int32_t loc, int64_t pipe,
           TraceSummary& sum) {
    const std::string key =
        core.strings[name] + '\0' + core.strings[loc] + '\0' + std::to_string(pipe);
    auto [it, fresh] = index_.emplace(key, static_cast<int>(sum.sites.size()));
    if (fresh) {
      sum.sites.push_back({core.strings[name], core.strings[loc], static_cast<int>(pipe)});
      for (SiteTotals& t : sum.per_core) grow(t, sum.sites.size());
    }
    return it->second;
  }
  static void grow(SiteTotals& t, size_t n) {
    t.count.resize(n, 0);
    t.cycles.resize(n, 0);
    t.bytes.resize(n, 0);
    t.capacity.resize(n, 0);
    t.first_addr.resize(n, -1);
  }

 private:
  std::unordered_map<std::string, int> index_;
};

void check_ids(const CoreRecordsView& core, size_t row, const TraceLayout& layout, int64_t pipe,
               int64_t kind) {
  const auto n = static_cast<int32_t>(core.strings.size());
  const bool ids_ok = core.name_id[row] >= 0 && core.name_id[row] < n && core.loc_id[row] >= 0 &&
                      core.loc_id[row] < n;
  const bool pipe_ok = pipe >= 0 && static_cast<size_t>(pipe) < layout.lanes.size();
  const bool kind_ok = kind >= 0 && static_cast<size_t>(kind) < layout.sync_names.size();
  if (!ids_ok || !pipe_ok || !kind_ok) {
    throw std::invalid_argument("trace record " + std::to_string(row) + " of " + core.pid +
                                " has an out-of-range string id, pipe or kind");
  }
}

std::string flag_detail(const TraceLayout& layout, int64_t kind, const int64_t* row) {
  const auto& c = layout.col;
  auto pipe_name = [&](int64_t p) -> const std::string& {
    static const std::string unknown = "?";
    return p >= 0 && static_cast<size_t>(p) < layout.flag_pipes.size() ? layout.flag_pipes[p]
                                                                       : unknown;
  };
  if (kind == 1 || kind == 2) {
    return "PIPE:" + pipe_name(row[c.flag_src]) + ",TRIGGERPIPE:" + pipe_name(row[c.flag_dst]) +
           ",FLAGID:" + std::to_string(row[c.flag_id]) + ",";
  }
  return kind == 3 ? "PIPE:" + pipe_name(row[c.pipe]) + "," : "";
}

using DetailCache = std::unordered_map<uint64_t, std::string>;

// The args.detail of a sync record, computed once per distinct (kind, pipes, flag id).
const std::string& detail_of(const TraceLayout& layout, int64_t kind, const int64_t* row,
                             DetailCache& cache, std::string& scratch) {
  const auto& c = layout.col;
  const int64_t src = kind == 3 ? 0 : row[c.flag_src], dst = kind == 3 ? 0 : row[c.flag_dst];
  const int64_t fid = kind == 3 ? 0 : row[c.flag_id], pipe = kind == 3 ? row[c.pipe] : 0;
  auto small = [](int64_t v) { return v >= 0 && v < 256; };
  if (!(small(src) && small(dst) && small(pipe) && fid >= 0 && fid < (int64_t{1} << 32))) {
    scratch = flag_detail(layout, kind, row);  // outside the packed key's ranges: uncached
    return scratch;
  }
  const uint64_t key = (static_cast<uint64_t>(kind) << 56) | (static_cast<uint64_t>(pipe) << 48) |
                       (static_cast<uint64_t>(src) << 40) | (static_cast<uint64_t>(dst) << 32) |
                       static_cast<uint64_t>(fid);
  auto it = cache.find(key);
  if (it == cache.end()) it = cache.emplace(key, flag_detail(layout, kind, row)).first;
  return it->second;
}

// One Chrome-trace "X" event: an operation with its bytes and address, or a sync slice.
void append_event(Out& out, const CoreRecordsView& core, const TraceLayout& layout,
                  const int64_t* row, size_t r, const std::string& pc, DetailCache& details) {
  const auto& c = layout.col;
  const int64_t kind = row[c.kind];
  const std::string& name = core.quoted[core.name_id[r]];
  std::string scratch;
  out.put("{\"name\":");
  if (kind == 0) {
    out.put(name);
  } else {
    out.put('"');
    out.put(layout.sync_names[kind]);
    out.put('"');
  }
  out.put(",\"ph\":\"X\",\"pid\":\"");
  out.put(core.pid);
  out.put("\",\"tid\":\"");
  out.put(layout.lanes[row[c.pipe]]);
  out.put("\",\"ts\":");
  out.cycles_as_us(row[c.start]);
  out.put(",\"dur\":");
  out.cycles_as_us(row[c.end] - row[c.start]);
  if (kind == 0) {
    out.put(",\"args\":{\"instr\":");
    out.put(name);
  } else {
    out.put(",\"args\":{\"detail\":\"");
    out.put(detail_of(layout, kind, row, details, scratch));
    out.put('"');
  }
  out.put(",\"source_line\":");
  out.put(core.quoted[core.loc_id[r]]);
  out.put(",\"source\":");
  out.put(core.quoted[core.loc_id[r]]);
  out.put(",\"index\":");
  out.integer(row[c.index]);
  out.put(",\"pc_addr\":\"");
  out.put(pc);
  out.put("\",\"cycles\":");
  out.integer(row[c.end] - row[c.start]);
  if (kind == 0) {
    out.put(",\"bytes\":");
    out.integer(row[c.bytes]);
    out.put(",\"addr\":");
    out.integer(row[c.addr]);
  }
  out.put("}}");
}

// An upper bound on one event's length: the fixed text and seven numbers (< 512 bytes), the
// core's strings, and a sync detail.
size_t event_bound(const CoreRecordsView& core, const TraceLayout& layout) {
  size_t quoted = 0, lane = 0, sync = 0, flag = 0;
  for (const std::string& q : core.quoted) quoted = std::max(quoted, q.size());
  for (const std::string& l : layout.lanes) lane = std::max(lane, l.size());
  for (const std::string& n : layout.sync_names) sync = std::max(sync, n.size());
  for (const std::string& f : layout.flag_pipes) flag = std::max(flag, f.size());
  return 512 + core.pid.size() + 3 * quoted + lane + sync + 2 * flag + 16;
}

void tally(SiteTotals& t, int code, const int64_t* row, const TraceLayout& layout) {
  const auto& c = layout.col;
  const int64_t nbytes = row[c.bytes];
  t.count[code] += 1;
  t.cycles[code] += row[c.end] - row[c.start];
  t.bytes[code] += nbytes;
  t.capacity[code] +=
      (nbytes + layout.repeat_bytes - 1) / layout.repeat_bytes * layout.repeat_bytes;
  if (t.count[code] == 1) t.first_addr[code] = row[c.addr];  // the first execution's
}

// One core's events, appended to `out`; its totals into `sum.per_core[k]`.
void format_core(const CoreRecordsView& core, size_t k, const TraceLayout& layout, SiteTable& sites,
                 std::vector<std::string>& pcs, TraceSummary& sum, Out& out, bool& first) {
  std::unordered_map<uint64_t, int> local;  // (name, loc, pipe) ids of this core -> code
  DetailCache details;
  const size_t bound = event_bound(core, layout);
  for (size_t r = 0; r < core.rows; ++r) {
    const int64_t* row = core.table + r * core.width;
    const int64_t pipe = row[layout.col.pipe];
    const int32_t name = core.name_id[r], loc = core.loc_id[r];
    const uint64_t key = (static_cast<uint64_t>(name) << 40) | (static_cast<uint64_t>(loc) << 8) |
                         static_cast<uint64_t>(pipe & 0xFF);
    auto found = local.find(key);
    if (found == local.end())
      found = local.emplace(key, sites.code(core, name, loc, pipe, sum)).first;
    const int code = found->second;
    while (pcs.size() <= static_cast<size_t>(code))
      pcs.push_back(hex_address(layout.pc_base + 4 * pcs.size()));
    tally(sum.per_core[k], code, row, layout);
    out.reserve(bound);
    if (!first) out.put(',');
    first = false;
    append_event(out, core, layout, row, r, pcs[code], details);
  }
}

}  // namespace

TraceSummary write_trace_files(const std::vector<CoreRecordsView>& cores, const TraceLayout& layout,
                               const std::string& bin_prefix, const std::string& json_path,
                               const std::string& bin_path) {
  if (layout.repeat_bytes <= 0) throw std::invalid_argument("repeat_bytes must be positive");
  for (const CoreRecordsView& core : cores) {  // everything is checked before a byte is written
    if (core.strings.size() >= (size_t{1} << 24) || core.quoted.size() != core.strings.size()) {
      throw std::invalid_argument("trace strings of " + core.pid + ": too many, or unquoted ones");
    }
    for (size_t r = 0; r < core.rows; ++r) {
      const int64_t* row = core.table + r * core.width;
      check_ids(core, r, layout, row[layout.col.pipe], row[layout.col.kind]);
    }
  }
  TraceSummary sum;
  sum.per_core.resize(cores.size());
  Files files(json_path, bin_path, bin_prefix);
  Out out(files);
  out.reserve(layout.head.size());
  out.put(layout.head);
  bool first = layout.head.empty() || layout.head.back() == '[';
  SiteTable sites;
  std::vector<std::string> pcs;
  for (size_t k = 0; k < cores.size(); ++k) {
    format_core(cores[k], k, layout, sites, pcs, sum, out, first);
    sum.events += cores[k].rows;
  }
  for (SiteTotals& t : sum.per_core) SiteTable::grow(t, sum.sites.size());
  out.reserve(layout.tail.size());
  out.put(layout.tail);
  out.flush();
  files.finish();
  return sum;
}

}  // namespace pypto::tools
