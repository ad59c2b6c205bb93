// See trace_write.hpp. One pass over the records checks each one's ids, formats the events
// (each string's JSON spelling is computed once, by the caller) and totals them per static
// instruction; a bad record removes the files the call created (a file that existed is checked
// by a pass of its own first, so bad input never changes it). The text goes in 1 MiB chunks to
// trace.json and, framed as a TRACE block, to visualize_data.bin, each file written by its own
// thread while the next chunk is formatted (parallel_files.hpp). No copy of the whole payload is
// ever held in memory. The API_INSTR block, made from the totals, follows the TRACE block.
#include "tools/trace_write.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <string_view>
#include <unordered_map>

#include "tools/parallel_files.hpp"

namespace pypto::tools {
namespace {

// The container's block framing, as pypto/report/opprof_format.py defines it.
constexpr uint8_t kTraceBlock = 2;
constexpr uint8_t kApiInstrBlock = 4;
constexpr uint8_t kMagic = 0x5A;
constexpr size_t kAlign = 4;

std::string hex_address(uint64_t v) {
  char tmp[24] = "0x";
  auto [end, ec] = std::to_chars(tmp + 2, tmp + sizeof tmp, v, 16);
  return std::string(tmp, static_cast<size_t>(end - tmp));
}

std::string block_header(size_t payload_bytes, size_t padding, uint8_t type = kTraceBlock) {
  std::string h(12, '\0');
  const uint64_t size = payload_bytes + padding;
  for (int i = 0; i < 8; ++i) h[i] = static_cast<char>((size >> (8 * i)) & 0xFF);
  h[8] = static_cast<char>(type);
  h[9] = static_cast<char>(padding);
  h[10] = 0;  // version
  h[11] = static_cast<char>(kMagic);
  return h;
}

// The output files: the container gets the prefix, a TRACE block header (its size known at the
// end), the payload and the padding, then more blocks; trace.json, when asked for (a non-empty
// path), the payload alone. A payload of one chunk (a short launch, thousands of them a run) is
// written at the end, each file in one system call; a longer one by the files' own threads as
// the events are formatted, after the prefix and a header rewritten at the end.
class Files {
 public:
  Files(const std::string& json_path, const std::string& bin_path, std::string_view bin_prefix)
      : paths_(json_path.empty() ? std::vector<std::string>{bin_path}
                                 : std::vector<std::string>{bin_path, json_path}),
        files_(std::make_unique<ParallelFiles>(paths_)),
        prefix_(bin_prefix) {}
  Chunk* take() { return files_->take(); }
  void emit(Chunk* chunk) {
    payload_ += chunk->used;
    if (!streaming_ && held_ == nullptr) {  // perhaps the only one: kept for finish()
      held_ = chunk;
      return;
    }
    if (!streaming_) stream();
    files_->submit(chunk);
  }
  // The TRACE block's padding and size, then `after` (more blocks) at the container's end.
  void finish(std::string_view after) {
    const size_t padding = (kAlign - payload_ % kAlign) % kAlign;
    const std::string header = block_header(payload_, padding);
    const std::string_view zeros("\0\0\0\0", padding);
    const int bin = files_->fd(kBin);
    const std::string& bin_path = files_->path(kBin);
    if (!streaming_) {
      const std::string_view payload =
          held_ == nullptr ? std::string_view() : std::string_view(held_->data.get(), held_->used);
      write_all(bin, {prefix_, header, payload, zeros, after}, bin_path);
      if (paths_.size() > 1) write_all(files_->fd(1), payload, files_->path(1));
      files_->close_all();
      return;
    }
    files_->finish();
    write_all(bin, zeros, bin_path);
    write_all(bin, after, bin_path);
    if (::pwrite(bin, header.data(), header.size(), static_cast<off_t>(header_at_)) !=
        static_cast<ssize_t>(header.size())) {
      throw TraceWriteError("cannot write " + bin_path + ": " + std::strerror(errno));
    }
    files_->close_all();
  }
  // After a failure: the writer threads stopped, the files closed and removed.
  void remove() noexcept {
    files_.reset();
    for (const std::string& path : paths_) ::unlink(path.c_str());
  }

 private:
  static constexpr size_t kBin = 0;
  // A second chunk: the prefix and a placeholder header written, then the chunks by threads.
  void stream() {
    write_all(files_->fd(kBin), prefix_, files_->path(kBin));
    header_at_ = prefix_.size();
    write_all(files_->fd(kBin), std::string(12, '\0'), files_->path(kBin));
    files_->start();
    streaming_ = true;
    files_->submit(held_);
    held_ = nullptr;
  }
  std::vector<std::string> paths_;
  std::unique_ptr<ParallelFiles> files_;
  std::string_view prefix_;  // the caller's, alive until finish()
  Chunk* held_ = nullptr;    // the first chunk, until a second comes
  bool streaming_ = false;
  size_t header_at_ = 0, payload_ = 0;
};

bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

// ".ddd" cut back to its last nonzero digit, per thousandth (0: none), four bytes and a length:
// one load and one store where three divisions and a branch on the zeros were.
struct Fraction {
  char text[4];
  uint8_t size;
};

constexpr std::array<Fraction, 1000> make_fractions() {
  std::array<Fraction, 1000> t{};
  for (int f = 1; f < 1000; ++f) {
    t[f].text[0] = '.';
    t[f].text[1] = static_cast<char>('0' + f / 100);
    t[f].text[2] = static_cast<char>('0' + f / 10 % 10);
    t[f].text[3] = static_cast<char>('0' + f % 10);
    t[f].size = f % 100 == 0 ? 2 : f % 10 == 0 ? 3 : 4;
  }
  return t;
}

constexpr std::array<Fraction, 1000> kFractions = make_fractions();

// The digits of the last whole number of microseconds written: events come in time order, so
// most timestamps repeat the one before's (a thousand cycles to a microsecond).
struct WholeUs {
  int64_t value = -1;
  char text[24] = {};
  size_t size = 0;
};

// Text written at a raw position with room reserved beforehand (one check per event, not
// per field). The position stays in a register while an event is written; as a member of
// the chunk writer it would be reloaded after every store, since char stores alias it.
struct Cursor {
  char* p;
  // Up to 128 bytes as two overlapping copies of a fixed size (inlined moves, no call: an
  // event is mostly two such pieces of 30-80 bytes), longer ones by memcpy. Always inlined:
  // the size is then often known, and a call per piece cost as much as the copy.
  __attribute__((always_inline)) void put(std::string_view s) {
    const char* from = s.data();
    const size_t n = s.size();
    if (n >= 32 && n <= 64) {
      copy_pair<32>(from, n);
    } else if (n > 64 && n <= 128) {
      copy_pair<64>(from, n);
    } else if (n >= 16 && n < 32) {
      copy_pair<16>(from, n);
    } else {
      std::memcpy(p, from, n);
    }
    p += n;
  }
  template <size_t K>
  void copy_pair(const char* from, size_t n) {  // K <= n <= 2K; the text is never the chunk
    std::memcpy(p, from, K);
    std::memcpy(p + n - K, from + n - K, K);
  }
  void put(char c) { *p++ = c; }
  void integer(int64_t v) { p = std::to_chars(p, p + 24, v).ptr; }
  // Cycles as trace microseconds (1 cycle = 1 ns): the decimal c / 1000 (".ddd" cut back to
  // its last nonzero digit) whenever it reads back as a double that, times 1000, is not below
  // c; otherwise the shortest decimal of the next double up. So a reader that truncates
  // ts * 1000 to integer nanoseconds (Perfetto) and one that rounds both get c exactly, and
  // a number written is never more than one double's step from c / 1000.
  void cycles_as_us(int64_t c, WholeUs* whole = nullptr) {
    if (c < 0 || c % 1000 == 0 ||
        static_cast<double>(c) / 1000.0 * 1000.0 >= static_cast<double>(c)) {
      exact_us(c, whole);
      return;
    }
    const double up = std::nextafter(static_cast<double>(c) / 1000.0, HUGE_VAL);
    p = std::to_chars(p, p + 40, up, std::chars_format::fixed).ptr;  // shortest round trip
  }
  void exact_us(int64_t c, WholeUs* whole) {
    if (c < 0) {
      put('-');
      c = -c;
      whole = nullptr;  // the cache holds whole numbers of non-negative times
    }
    const int64_t us = c / 1000;
    if (whole == nullptr) {
      integer(us);
    } else {
      if (whole->value != us) {
        whole->value = us;
        whole->size =
            static_cast<size_t>(std::to_chars(whole->text, whole->text + 24, us).ptr - whole->text);
      }
      std::memcpy(p, whole->text, sizeof whole->text);  // fixed size: inlined moves
      p += whole->size;
    }
    const Fraction& f = kFractions[static_cast<size_t>(c - us * 1000)];
    std::memcpy(p, f.text, 4);
    p += f.size;
  }
};

// The event text, formatted into chunks that the files write while the next one fills.
class Out {
 public:
  explicit Out(Files& files) : files_(files), chunk_(files.take()), buf_(chunk_->data.get()) {}
  // Room for `n` more bytes, then where to write them.
  Cursor reserve(size_t n) {
    if (pos_ + n > chunk_->capacity) {
      flush();
      chunk_->grow(n);
      buf_ = chunk_->data.get();
    }
    return {buf_ + pos_};
  }
  void advance(Cursor c) { pos_ = static_cast<size_t>(c.p - buf_); }
  void flush() {
    chunk_->used = pos_;
    files_.emit(chunk_);
    chunk_ = files_.take();
    buf_ = chunk_->data.get();
    pos_ = 0;
  }
  void put(std::string_view s) {
    Cursor c = reserve(s.size());
    c.put(s);
    advance(c);
  }

 private:
  Files& files_;
  Chunk* chunk_;
  char* buf_;
  size_t pos_ = 0;
};

// Numbers static instructions — distinct (name, source, pipe) — across the cores of a launch.
class SiteTable {
 public:
  int code(const CoreRecordsView& core, int32_t name, int32_t loc, int64_t pipe,
           TraceSummary& sum) {
    const std::string key =
        core.text->strings[name] + '\0' + core.text->strings[loc] + '\0' + std::to_string(pipe);
    auto [it, fresh] = index_.emplace(key, static_cast<int>(sum.sites.size()));
    if (fresh) {
      const StringTable& text = *core.text;
      sum.sites.push_back({text.strings[name], text.strings[loc], static_cast<int>(pipe),
                           text.quoted[name], text.quoted[loc]});
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

// What a core's records may index: its strings, the layout's lanes (by pipe) and sync names
// (by kind).
struct IdLimits {
  uint32_t strings;
  uint64_t lanes, kinds;
  IdLimits(const CoreRecordsView& core, const TraceLayout& layout)
      : strings(static_cast<uint32_t>(core.text->strings.size())),
        lanes(layout.lanes.size()),
        kinds(layout.sync_names.size()) {}
  // Whether a record's string ids, pipe or kind fall outside them (branch-free).
  bool bad(int32_t name, int32_t loc, int64_t pipe, int64_t kind) const {
    return (static_cast<uint32_t>(name) >= strings) | (static_cast<uint32_t>(loc) >= strings) |
           (static_cast<uint64_t>(pipe) >= lanes) | (static_cast<uint64_t>(kind) >= kinds);
  }
};

[[noreturn]] void throw_bad_record(const CoreRecordsView& core, size_t r) {
  throw std::invalid_argument("trace record " + std::to_string(r) + " of " + core.pid +
                              " has an out-of-range string id, pipe or kind");
}

// Every record of a core in range, checked before a file is touched: one branch-free pass, and
// only on failure a second one to name the first bad row. (For files that do not exist yet the
// formatting checks each record instead, and a failure removes what it wrote: one pass less.)
void check_ids(const CoreRecordsView& core, const TraceLayout& layout) {
  const IdLimits limits(core, layout);
  auto bad = [&](size_t r) {
    const int64_t* row = core.table + r * core.width;
    return limits.bad(core.name_id[r], core.loc_id[r], row[layout.col.pipe], row[layout.col.kind]);
  };
  bool any = false;
  for (size_t r = 0; r < core.rows; ++r) any |= bad(r);
  if (!any) return;
  size_t r = 0;
  while (!bad(r)) ++r;
  throw_bad_record(core, r);
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

// The text of an operation's event that is the same at every execution of its static
// instruction, built once: the event is then these pieces around three numbers. The cycles
// are the slice's duration (1 trace ns = 1 cycle), so no argument repeats them; its source
// line is the API_INSTR block's "AscendC Inner Code" of its pc_addr, so no event repeats it
// (nor do the vendor's events carry one); the on-chip address of each execution is a
// records.npz column (and the first one the API_INSTR block's Buffer Address), not an
// argument: the vendor's events carry none either.
struct SiteText {
  int code = 0;
  std::string head;  // up to "ts":
  std::string args;  // from ,"args" to "bytes":
  // The event's text after its timestamp for the duration and bytes `tail` holds: an
  // instruction in a loop mostly repeats both, and then that text is one copy. It is kept
  // once an execution repeats the one before (`last`), so durations that keep changing cost
  // no copies into it.
  std::string tail;
  bool cached = false;  // whether `tail` holds the text for tail_dur and tail_bytes
  int64_t tail_dur = 0, tail_bytes = 0, last_dur = -1, last_bytes = -1;
};

SiteText site_text(const CoreRecordsView& core, const TraceLayout& layout, const int64_t* row,
                   size_t r, int code, const std::string& pc) {
  SiteText t;
  t.code = code;
  t.head = "{\"name\":" + core.text->quoted[core.name_id[r]] + ",\"ph\":\"X\",\"pid\":\"" +
           core.pid + "\",\"tid\":\"" + layout.lanes[row[layout.col.pipe]] + "\",\"ts\":";
  t.args = ",\"args\":{\"pc_addr\":\"" + pc + "\",\"bytes\":";
  return t;
}

// An operation's event (kind 0), from its static text.
void append_op(Cursor& out, SiteText& t, const int64_t* row, const RecordColumns& c, int64_t offset,
               WholeUs& ts) {
  out.put(t.head);
  out.cycles_as_us(row[c.start] + offset, &ts);
  const int64_t dur = row[c.end] - row[c.start], bytes = row[c.bytes];
  if (t.cached && dur == t.tail_dur && bytes == t.tail_bytes) {
    out.put(t.tail);
    return;
  }
  char* const from = out.p;
  out.put(",\"dur\":");
  out.cycles_as_us(dur);
  out.put(t.args);
  out.integer(bytes);
  out.put("}}");
  if (dur == t.last_dur && bytes == t.last_bytes) {
    t.tail.assign(from, static_cast<size_t>(out.p - from));
    t.cached = true;
    t.tail_dur = dur;
    t.tail_bytes = bytes;
  }
  t.last_dur = dur;
  t.last_bytes = bytes;
}

// A sync record's "X" event: the slice a SET_FLAG / WAIT_FLAG / BAR occupies on its pipe.
void append_sync(Cursor& out, const CoreRecordsView& core, const TraceLayout& layout,
                 const int64_t* row, const std::string& pc, DetailCache& details, WholeUs& ts) {
  const auto& c = layout.col;
  const int64_t kind = row[c.kind];
  std::string scratch;
  out.put("{\"name\":\"");
  out.put(layout.sync_names[kind]);
  out.put("\",\"ph\":\"X\",\"pid\":\"");
  out.put(core.pid);
  out.put("\",\"tid\":\"");
  out.put(layout.lanes[row[c.pipe]]);
  out.put("\",\"ts\":");
  out.cycles_as_us(row[c.start] + core.offset, &ts);
  out.put(",\"dur\":");
  out.cycles_as_us(row[c.end] - row[c.start]);
  out.put(",\"args\":{\"detail\":\"");
  out.put(detail_of(layout, kind, row, details, scratch));
  out.put("\",\"pc_addr\":\"");
  out.put(pc);
  out.put("\"}}");
}

// An upper bound on one event's length: the fixed text and seven numbers (< 512 bytes), the
// core's strings, and a sync detail.
size_t event_bound(const CoreRecordsView& core, const TraceLayout& layout) {
  size_t quoted = 0, lane = 0, sync = 0, flag = 0;
  for (const std::string& q : core.text->quoted) quoted = std::max(quoted, q.size());
  for (const std::string& l : layout.lanes) lane = std::max(lane, l.size());
  for (const std::string& n : layout.sync_names) sync = std::max(sync, n.size());
  for (const std::string& f : layout.flag_pipes) flag = std::max(flag, f.size());
  return 512 + core.pid.size() + 3 * quoted + lane + sync + 2 * flag + 16;
}

// A core's per-site totals as raw arrays, taken again whenever a new site grows them: every
// char the formatter stores may alias a vector's data pointer, so reading them through the
// vectors reloaded each pointer for every event.
struct Tallies {
  int64_t *count, *cycles, *bytes, *capacity, *first_addr;
  explicit Tallies(SiteTotals& t)
      : count(t.count.data()),
        cycles(t.cycles.data()),
        bytes(t.bytes.data()),
        capacity(t.capacity.data()),
        first_addr(t.first_addr.data()) {}
};

void tally(const Tallies& t, int code, const int64_t* row, const RecordColumns& c, int64_t rb) {
  const int64_t nbytes = row[c.bytes];
  t.count[code] += 1;
  t.cycles[code] += row[c.end] - row[c.start];
  t.bytes[code] += nbytes;
  // whole repeats of rb bytes: a mask for the usual power of two
  t.capacity[code] += (rb & (rb - 1)) == 0 ? (nbytes + rb - 1) & -rb : (nbytes + rb - 1) / rb * rb;
  if (t.count[code] == 1) t.first_addr[code] = row[c.addr];  // the first execution's
}

// What the entries of one core (pid) that share a string table have in common: the text of
// each of their sites by (name, loc, pipe) ids, a cache of recent sites in front of it (a loop
// body's few sites hit there, without hashing), and an upper bound on an event's length. A
// decode runs a kernel on a core hundreds of times, a few records each: each launch building
// its sites' texts again was most of the writing.
struct SiteCache {
  std::unordered_map<uint64_t, SiteText> local;
  std::array<std::pair<uint64_t, SiteText*>, 256> recent{};
  size_t bound = 0;
};

// One core's events, appended to `out`; its totals into `sum.per_core[k]`. What every event
// reads is held in locals (the table, the column positions, the comma flag): the formatter's
// char stores may alias anything reached through a pointer or reference, so it was reloaded
// after each one.
void format_core(const CoreRecordsView& core, size_t k, const TraceLayout& layout, SiteTable& sites,
                 std::vector<std::string>& pcs, TraceSummary& sum, Out& out, bool& first,
                 SiteCache& cache, DetailCache& details) {
  auto& local = cache.local;
  auto& recent = cache.recent;
  WholeUs ts;  // the events' timestamps
  if (cache.bound == 0) cache.bound = event_bound(core, layout);
  const size_t bound = cache.bound;
  const int64_t* const table = core.table;
  const int32_t *const names = core.name_id, *const locs = core.loc_id;
  const size_t width = core.width, rows = core.rows;
  const RecordColumns col = layout.col;
  const int64_t repeat = layout.repeat_bytes;
  const IdLimits limits(core, layout);
  Tallies totals(sum.per_core[k]);
  bool comma = !first;
  for (size_t r = 0; r < rows; ++r) {
    const int64_t* row = table + r * width;
    const int64_t pipe = row[col.pipe], kind = row[col.kind];
    const int32_t name = names[r], loc = locs[r];
    // Before any of them indexes a table (the caller's check_ids may not have run).
    if (limits.bad(name, loc, pipe, kind)) [[unlikely]]
      throw_bad_record(core, r);
    const uint64_t key = (static_cast<uint64_t>(name) << 40) | (static_cast<uint64_t>(loc) << 8) |
                         static_cast<uint64_t>(pipe & 0xFF);
    auto& slot = recent[(key ^ (key >> 40) ^ (key >> 13)) & 0xFF];
    if (slot.second == nullptr || slot.first != key) {
      auto found = local.find(key);
      if (found == local.end()) {
        const int code = sites.code(core, name, loc, pipe, sum);
        while (pcs.size() <= static_cast<size_t>(code))
          pcs.push_back(hex_address(layout.pc_base + 4 * pcs.size()));
        found = local.emplace(key, site_text(core, layout, row, r, code, pcs[code])).first;
        totals = Tallies(sum.per_core[k]);  // a new site grows the totals
      }
      slot = {key, &found->second};
    }
    SiteText& text = *slot.second;
    tally(totals, text.code, row, col, repeat);
    Cursor w = out.reserve(bound);
    if (comma) w.put(',');
    comma = true;
    if (kind == 0) {
      append_op(w, text, row, col, core.offset, ts);
    } else {
      append_sync(w, core, layout, row, pcs[text.code], details, ts);
    }
    out.advance(w);
  }
  first = first && !comma;
}

// Python's repr of a utilisation figure, k / 100 for a whole k in [0, 10000]: its shortest
// round-trip decimal, in fixed notation there (repr turns to exponents only below 1e-4), with
// ".0" when whole.
void put_percent(std::string& out, double v) {
  char tmp[40];
  char* end = std::to_chars(tmp, tmp + sizeof tmp, v, std::chars_format::fixed).ptr;
  out.append(tmp, static_cast<size_t>(end - tmp));
  if (std::find(tmp, end, '.') == end) out += ".0";
}

template <typename Put>
void per_core(std::string& out, const char* key, const TraceSummary& sum, Put put) {
  out += key;
  out += '[';
  for (size_t k = 0; k < sum.per_core.size(); ++k) {
    if (k) out += ',';
    put(sum.per_core[k]);
  }
  out += ']';
}

std::string api_instr_block(const TraceSummary& sum, const TraceLayout& layout) {
  const std::string payload = api_instr_payload(sum, layout);
  const size_t padding = (kAlign - payload.size() % kAlign) % kAlign;
  return block_header(payload.size(), padding, kApiInstrBlock) + payload +
         std::string(padding, '\0');
}

}  // namespace

std::string api_instr_payload(const TraceSummary& sum, const TraceLayout& layout) {
  std::string out = layout.api_head;
  char num[24];
  auto integer = [&](int64_t v) {
    out.append(num, static_cast<size_t>(std::to_chars(num, num + sizeof num, v).ptr - num));
  };
  for (size_t code = 0; code < sum.sites.size(); ++code) {
    const Site& site = sum.sites[code];
    out += code ? ",{\"Address\":\"" : "{\"Address\":\"";
    out += hex_address(layout.pc_base + 4 * code);
    out += "\",\"Source\":" + site.name_json + ",\"AscendC Inner Code\":" + site.loc_json;
    out += ",\"Pipe\":\"" + layout.lanes.at(static_cast<size_t>(site.pipe)) + '"';
    per_core(out, ",\"Instructions Executed\":", sum,
             [&](const SiteTotals& t) { integer(t.count[code]); });
    per_core(out, ",\"Cycles\":", sum, [&](const SiteTotals& t) { integer(t.cycles[code]); });
    per_core(out, ",\"Process Bytes\":", sum, [&](const SiteTotals& t) { integer(t.bytes[code]); });
    per_core(out, ",\"Vector Utilization Percentage\":", sum, [&](const SiteTotals& t) {
      const int64_t room = t.capacity[code];
      if (site.pipe != layout.vector_pipe || room <= 0) {
        out += "-1.0";
        return;
      }  // numpy's round(x, 2): x * 100 to the nearest (even) whole, / 100
      const double x = 100.0 * static_cast<double>(t.bytes[code]) / static_cast<double>(room);
      put_percent(out, std::nearbyint(x * 100.0) / 100.0);
    });
    per_core(out, ",\"Buffer Address\":", sum, [&](const SiteTotals& t) {
      const int64_t at = t.first_addr[code];
      out += at >= 0 ? '"' + hex_address(static_cast<uint64_t>(at)) + '"' : std::string("\"\"");
    });
    out += '}';
  }
  return out + layout.api_tail;
}

// A flow end of `layout.flows` that names no written core or lane: invalid_argument.
void check_flows(const std::vector<CoreRecordsView>& cores, const TraceLayout& layout) {
  for (const FlowEnd& f : layout.flows) {
    if (f.entry < 0 || static_cast<size_t>(f.entry) >= cores.size() || f.lane < 0 ||
        static_cast<size_t>(f.lane) >= layout.lanes.size() || (f.finish != 0 && f.finish != 1)) {
      throw std::invalid_argument("tile pipe flow " + std::to_string(f.id) +
                                  ": no such core entry, lane or end");
    }
  }
}

// The flow arrows' events: the push end binds to the slice it starts in, the pop end ("bp":"e")
// to the slice it ends in.
void format_flows(const std::vector<CoreRecordsView>& cores, const TraceLayout& layout, Out& out,
                  bool& first) {
  WholeUs ts;
  for (const FlowEnd& f : layout.flows) {
    const std::string& pid = cores[static_cast<size_t>(f.entry)].pid;
    const std::string& lane = layout.lanes[static_cast<size_t>(f.lane)];
    Cursor w = out.reserve(pid.size() + lane.size() + 160);
    if (!first) w.put(',');
    first = false;
    w.put("{\"name\":\"tile pipe ");
    w.integer(f.pipe_id);
    w.put("\",\"cat\":\"tpipe\",\"id\":");
    w.integer(f.id);
    w.put(f.finish ? std::string_view(",\"ph\":\"f\",\"bp\":\"e\",\"pid\":\"")
                   : std::string_view(",\"ph\":\"s\",\"pid\":\""));
    w.put(pid);
    w.put("\",\"tid\":\"");
    w.put(lane);
    w.put("\",\"ts\":");
    w.cycles_as_us(f.cycles, &ts);
    w.put('}');
    out.advance(w);
  }
}

TraceSummary write_trace_files(const std::vector<CoreRecordsView>& cores, const TraceLayout& layout,
                               const std::string& bin_prefix, const std::string& json_path,
                               const std::string& bin_path) {
  if (layout.repeat_bytes <= 0) throw std::invalid_argument("repeat_bytes must be positive");
  // Files this call creates are removed if it fails, so their records are checked as they are
  // formatted; a file that exists already is not touched unless every record is in range.
  const bool fresh = !exists(bin_path) && (json_path.empty() || !exists(json_path));
  for (const CoreRecordsView& core : cores) {
    if (core.text == nullptr || core.text->strings.size() >= (size_t{1} << 24) ||
        core.text->quoted.size() != core.text->strings.size()) {
      throw std::invalid_argument("trace strings of " + core.pid + ": too many, or unquoted ones");
    }
    if (!fresh) check_ids(core, layout);
  }
  check_flows(cores, layout);
  TraceSummary sum;
  size_t slots = 0;  // the container's cores: entries of one core (launches) share a slot
  for (const CoreRecordsView& core : cores) slots = std::max(slots, core.slot + 1);
  sum.per_core.resize(slots);
  Files files(json_path, bin_path, bin_prefix);
  try {
    Out out(files);
    out.put(layout.head);
    bool first = layout.head.empty() || layout.head.back() == '[';
    format_flows(cores, layout, out, first);
    SiteTable sites;
    std::vector<std::string> pcs;
    std::map<std::pair<std::string, size_t>, SiteCache> caches;  // by (pid, string table)
    DetailCache details;
    for (const CoreRecordsView& core : cores) {
      SiteCache& cache = caches[{core.pid, core.text_id}];
      format_core(core, core.slot, layout, sites, pcs, sum, out, first, cache, details);
      sum.events += core.rows;
    }
    for (SiteTotals& t : sum.per_core) SiteTable::grow(t, sum.sites.size());
    out.put(layout.tail);
    out.flush();
    files.finish(layout.api_head.empty() ? std::string() : api_instr_block(sum, layout));
  } catch (...) {
    if (fresh) files.remove();
    throw;
  }
  return sum;
}

}  // namespace pypto::tools
