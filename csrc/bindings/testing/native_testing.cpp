// pypto._native_testing: hooks into the simulator's parts for tests, benchmarks and the
// calibration tool, kept out of the product module (pypto._native). The core model alone, for
// cycle-exact unit tests: instructions are described directly (pipe, cost, accesses) instead of
// coming from a kernel; the fp32 matmul and fractal forms one by one; the data thread's queue;
// the L2's line lookups alone.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>
#include <pybind11/typing.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include "bindings/bind.hpp"
#include "chip/core/context.hpp"
#include "chip/core/core_storage.hpp"
#include "chip/core/data_queue.hpp"
#include "chip/isa/fractal.hpp"
#include "chip/isa/matmul_f32.hpp"
#include "chip/isa/vec_math.hpp"
#include "simulator/core_model.hpp"
#include "simulator/memory_system.hpp"

namespace py = pybind11;

namespace pypto {
namespace {

// Interned names: records keep const char* to static storage.
const char* intern(const std::string& s) {
  static std::vector<std::unique_ptr<std::string>> pool;
  for (const auto& p : pool)
    if (*p == s) return p->c_str();
  pool.push_back(std::make_unique<std::string>(s));
  return pool.back()->c_str();
}

struct ModelHarness {
  ModelHarness(const Platform& platform, bool record)
      : platform(platform), model(this->platform, record) {}
  Platform platform;
  CoreModel model;
};

using Range = std::tuple<int, int64_t, int64_t>;  // (space, base, bytes)

// Flags are priced as kernels' flags are (the platform's sync_cycles).
Instr sync_instr(InstrKind kind, int pipe, const char* name, int src, int dst, int id) {
  Instr in;
  in.kind = kind;
  in.pipe = pipe;
  in.name = name;
  in.flag_src = src;
  in.flag_dst = dst;
  in.flag_id = id;
  in.op.cls = OpClass::kSync;
  return in;
}

template <typename E>
E lookup(const std::map<std::string, E>& names, const std::string& key, const char* what) {
  auto it = names.find(key);
  if (it == names.end())
    throw std::invalid_argument(std::string("unknown ") + what + " '" + key + "'");
  return it->second;
}

// An instruction description from {"class": ..., "vec": ..., "link": ..., sizes}: the same
// OpDesc an ISA op builds, priced by the cost model (and the core model's vector runs).
OpDesc describe(const py::dict& spec) {
  static const std::map<std::string, OpClass> classes = {{"gm_read", OpClass::kGmRead},
                                                         {"gm_write", OpClass::kGmWrite},
                                                         {"fixpipe_gm", OpClass::kFixpipeGm},
                                                         {"fixpipe", OpClass::kFixpipe},
                                                         {"local_move", OpClass::kLocalMove},
                                                         {"vector", OpClass::kVector},
                                                         {"row_reduce", OpClass::kRowReduce},
                                                         {"matmul", OpClass::kMatmul},
                                                         {"scalar", OpClass::kScalar},
                                                         {"transpose", OpClass::kTranspose},
                                                         {"sort", OpClass::kSort},
                                                         {"scalar_access", OpClass::kScalarAccess},
                                                         {"sync", OpClass::kSync}};
  static const std::map<std::string, VecClass> vecs = {{"binary", VecClass::kBinary},
                                                       {"unary", VecClass::kUnary},
                                                       {"exp", VecClass::kExp},
                                                       {"div", VecClass::kDiv},
                                                       {"reduce", VecClass::kReduce},
                                                       {"cvt", VecClass::kCvt},
                                                       {"cmp", VecClass::kCmp},
                                                       {"sel", VecClass::kSel},
                                                       {"bitwise", VecClass::kBitwise},
                                                       {"trig", VecClass::kTrig},
                                                       {"gather", VecClass::kGather},
                                                       {"sort", VecClass::kSort},
                                                       {"add", VecClass::kAdd},
                                                       {"copy", VecClass::kCopy},
                                                       {"gather_mask", VecClass::kGatherMask}};
  static const std::map<std::string, Link> links = {
      {"gm_to_ub", Link::kGmToUb},   {"gm_to_l1", Link::kGmToL1},   {"ub_to_gm", Link::kUbToGm},
      {"l1_to_l0a", Link::kL1ToL0a}, {"l1_to_l0b", Link::kL1ToL0b}, {"l0c_to_gm", Link::kL0cToGm},
      {"ub_to_ub", Link::kUbToUb},   {"l0c_to_l1", Link::kL0cToL1}};
  static const std::map<std::string, RowReduceKind> reduces = {{"other", RowReduceKind::kOther},
                                                               {"sum", RowReduceKind::kSum},
                                                               {"max", RowReduceKind::kMax},
                                                               {"min", RowReduceKind::kMin}};
  OpDesc d;
  auto text = [&](const char* key, const char* dflt) {
    return spec.contains(key) ? spec[key].cast<std::string>() : std::string(dflt);
  };
  auto num = [&](const char* key) { return spec.contains(key) ? spec[key].cast<int64_t>() : 0; };
  d.cls = lookup(classes, text("class", "vector"), "instruction class");
  d.vec = lookup(vecs, text("vec", "unary"), "vector class");
  d.link = lookup(links, text("link", "gm_to_ub"), "link");
  d.reduce = lookup(reduces, text("reduce", "other"), "row reduction");
  d.rows = num("rows");
  d.row_bytes = num("row_bytes");
  d.bytes = spec.contains("bytes") ? num("bytes") : d.rows * d.row_bytes;
  d.acc_row_bytes = num("acc_row_bytes");
  d.m = num("m"), d.k = num("k"), d.n = num("n"), d.in_esize = num("in_esize");
  if (d.cls == OpClass::kMatmul && d.in_esize <= 0)
    throw std::invalid_argument("matmul needs in_esize > 0");
  return d;
}

void instr(ModelHarness& h, int pipe, const py::dict& spec, const std::string& name) {
  Instr in;
  in.pipe = pipe;
  in.op = describe(spec);
  in.name = intern(name);
  h.model.issue(std::move(in));
}

void op(ModelHarness& h, int pipe, uint64_t cost, const std::string& name,
        const std::vector<Range>& reads, const std::vector<Range>& writes, const std::string& loc) {
  Instr in;
  in.pipe = pipe;
  in.op = OpDesc::fixed(cost);
  in.name = intern(name);
  in.loc = intern(loc);
  for (const auto& [space, base, bytes] : reads)
    in.accesses.add({space, base, 1, bytes, bytes, false});
  for (const auto& [space, base, bytes] : writes)
    in.accesses.add({space, base, 1, bytes, bytes, true});
  h.model.issue(std::move(in));
}

// A vector op over `bytes` (class `vec` as in describe), through the vector issue path or,
// with `general`, as an Instr through issue(): the two must agree in every output.
void vector(ModelHarness& h, const std::string& vec, int64_t bytes, const std::vector<Range>& reads,
            const std::vector<Range>& writes, const std::string& name, bool general) {
  py::dict spec;
  spec["class"] = "vector";
  spec["vec"] = vec;
  spec["bytes"] = bytes;
  AccessList acc;
  for (const auto& [space, base, n] : reads) acc.add({space, base, 1, n, n, false});
  for (const auto& [space, base, n] : writes) acc.add({space, base, 1, n, n, true});
  const int64_t addr = writes.empty() ? -1 : std::get<1>(writes.front());
  if (!general) {
    h.model.issue_vector(intern(name), "", describe(spec).vec, bytes, addr, acc);
    return;
  }
  Instr in;
  in.pipe = PYPTO_VECTOR;
  in.op = describe(spec);
  in.name = intern(name);
  in.bytes = static_cast<uint64_t>(bytes);
  in.addr = addr;
  in.accesses = acc;
  h.model.issue(in);
}

py::typing::List<py::dict> records(const ModelHarness& h) {
  py::typing::List<py::dict> out;
  const RecordTable& records = h.model.records();
  for (size_t i = 0; i < records.size(); ++i) {
    const int64_t* r = records.row(i);
    py::dict d;
    d["index"] = r[kColIndex];
    d["name"] = records.name(i);
    d["pipe"] = pipe_name(static_cast<int>(r[kColPipe]));
    d["issue"] = r[kColIssue];
    d["start"] = r[kColStart];
    d["end"] = r[kColEnd];
    d["bytes"] = r[kColBytes];
    d["addr"] = r[kColAddr];
    out.append(d);
  }
  return out;
}

using F32 = py::array_t<float, py::array::c_style | py::array::forcecast>;

// c (+)= a @ b with one named form of the cube's fp32 kernel (c is updated in place), `repeat`
// times in a row: a rate measured per call would count a Python call per tile (microseconds,
// as long as the kernel on a FlashAttention piece).
void matmul_form(const std::string& form, const F32& a, const F32& b, F32& c, bool accumulate,
                 bool exact_products, int64_t repeat) {
  if (a.ndim() != 2 || b.ndim() != 2 || c.ndim() != 2 || a.shape(1) != b.shape(0) ||
      c.shape(0) != a.shape(0) || c.shape(1) != b.shape(1)) {
    throw std::invalid_argument("matmul_f32_form needs a [m, k], b [k, n] and c [m, n]");
  }
  if (repeat < 1) throw std::invalid_argument("matmul_f32_form needs repeat >= 1");
  for (int64_t i = 0; i < repeat; ++i) {
    vm::matmul_f32_form(form, a.data(), b.data(), c.mutable_data(), c.shape(1), a.shape(0),
                        a.shape(1), b.shape(1), accumulate, exact_products);
  }
}

using U16 = py::array_t<uint16_t, py::array::c_style | py::array::forcecast>;

// One named form of the fp32 -> fp16 cast over a whole array: its fp16 bits.
py::array_t<uint16_t> fp16_encode_form(const std::string& form, const F32& x) {
  py::array_t<uint16_t> out(std::vector<py::ssize_t>(x.shape(), x.shape() + x.ndim()));
  vm::fp16_encode_form(form, out.mutable_data(), x.data(), static_cast<size_t>(x.size()));
  return out;
}

// One named form of an fp32 row reduction (op: a pypto_reduce_op) of each row of `x`.
py::array_t<float> reduce_rows_form(const std::string& form, int op, const F32& x) {
  if (x.ndim() != 2) throw std::invalid_argument("reduce_rows_f32_form needs a [rows, n] array");
  const auto rows = static_cast<size_t>(x.shape(0)), n = static_cast<size_t>(x.shape(1));
  py::array_t<float> out(static_cast<py::ssize_t>(rows));
  vm::reduce_rows_f32_form(form, op, out.mutable_data(), 1, x.data(), n, rows, n);
  return out;
}

// One named form of the fractal moves on a [16, 16] block of fp16 bits (bf16 when asked):
// (transposed bits, widened fp32, transposed and widened in one pass, the widening's answer,
// the transposed widening's answer). fp16: all finite (the widened values are unspecified
// otherwise); bf16: every product of two values exact in fp32.
using FractalOut =
    py::typing::Tuple<py::array_t<uint16_t>, py::array_t<float>, py::array_t<float>, bool, bool>;

FractalOut fractal_form(const std::string& form, const U16& x, bool bf16) {
  if (x.ndim() != 2 || x.shape(0) != 16 || x.shape(1) != 16) {
    throw std::invalid_argument("fractal_form needs a [16, 16] array of 2-byte elements");
  }
  py::array_t<uint16_t> t({16, 16});
  py::array_t<float> w({16, 16}), wt({16, 16});
  const auto [finite, finite_t] = isa::fractal_form(form, bf16, x.data(), t.mutable_data(),
                                                    w.mutable_data(), wt.mutable_data());
  return FractalOut(py::make_tuple(t, w, wt, finite, finite_t));
}

// Blocks of the cores' storage for `sizes`, taken one after another and all live at once, then
// given back and taken again: the addresses of both rounds (a space's bytes must never overlap
// another live space's, and a block given back serves the next space of its size class).
std::pair<std::vector<uintptr_t>, std::vector<uintptr_t>> core_storage_rounds(
    const std::vector<size_t>& sizes) {
  std::pair<std::vector<uintptr_t>, std::vector<uintptr_t>> out;
  for (auto* round : {&out.first, &out.second}) {
    for (size_t n : sizes) round->push_back(reinterpret_cast<uintptr_t>(core_storage::take(n)));
    for (size_t i = 0; i < sizes.size(); ++i) {
      core_storage::give(reinterpret_cast<void*>((*round)[i]), sizes[i]);
    }
  }
  return out;
}

// A core context that marked a checked tile and a one-input operand in its vector storage,
// gave that storage back (kept empty, as CorePool::trim leaves it) and was reused: whether the
// marks held, and whether it took the same storage back. `taken_meanwhile`: another context was
// built in between, taking the storage from the thread's pool, so the reused one gets other
// bytes and the marks, which point into the old ones, must be forgotten.
std::pair<bool, bool> context_reuse_after_release(const Platform& platform, bool taken_meanwhile) {
  CoreContext ctx(platform, 0, 1, false);
  uint8_t* ub = ctx.space_data(PYPTO_VEC);
  ctx.checked[0].view.data = ub;
  ctx.one_input[0].op = 1;
  ctx.release_storage();
  std::unique_ptr<CoreContext> other;
  if (taken_meanwhile) {
    other = std::make_unique<CoreContext>(platform, 0, 1, false);
    other->space_data(PYPTO_VEC);
  }
  ctx.reuse(0, 1, false);
  const bool kept = ctx.checked[0].view.data != nullptr || ctx.one_input[0].op != -1;
  return {kept, ctx.space_data(PYPTO_VEC) == ub};
}

// The data thread's protocol under load: `ops` queued ops, op i splitting its first
// 1 + (7 i mod rows) rows (so the piece counts differ from one op to the next) in pieces of
// 3, each row one more than the last row of the op before, plus its index; a drain every
// `drain_every` ops. `when_waited`: split with DataQueue::split_when_waited (shared only while
// the run's thread waits). `gap_us`: the run's thread sleeps that long after each op, so the
// data thread runs out of work and falls asleep between ops (a publish or a drain must wake it).
// Returns the [ops, rows] result, where a lost or repeated piece changes it, and which rows the
// run's thread wrote (1: a piece it took from the data thread).
thread_local bool t_exercising = false;  // the thread that queues the exercise's ops
std::pair<py::array_t<int64_t>, py::array_t<uint8_t>> data_queue_exercise(int64_t ops, int64_t rows,
                                                                          int64_t drain_every,
                                                                          bool when_waited,
                                                                          int64_t gap_us) {
  if (ops < 1 || rows < 1 || drain_every < 1 || gap_us < 0) {
    throw std::invalid_argument("positive counts");
  }
  py::array_t<int64_t> out({ops, rows});
  py::array_t<uint8_t> by_run({ops, rows});
  int64_t* o = out.mutable_data();
  uint8_t* h = by_run.mutable_data();
  std::fill(o, o + ops * rows, 0);
  std::fill(h, h + ops * rows, 0);
  {
    py::gil_scoped_release released;
    t_exercising = true;
    DataQueue q;
    int64_t before = 0;  // the rows of the op before
    for (int64_t i = 0; i < ops; ++i) {
      const int64_t n = 1 + (7 * i) % rows;
      q.push(int64_t{1} << 20, [o, h, i, rows, n, before, when_waited] {
        const int64_t last = i > 0 ? o[(i - 1) * rows + before - 1] : 0;
        const auto piece = [&](int64_t b, int64_t e) {
          for (int64_t r = b; r < e; ++r) {
            o[i * rows + r] = last + 1 + r;
            h[i * rows + r] = t_exercising ? 1 : 0;
          }
        };
        if (when_waited) {
          DataQueue::split_when_waited(n, 3, piece);
        } else {
          DataQueue::split(n, 3, piece);
        }
      });
      before = n;
      if (gap_us > 0) std::this_thread::sleep_for(std::chrono::microseconds(gap_us));
      if ((i + 1) % drain_every == 0) q.drain();
    }
    q.drain();
    t_exercising = false;
  }
  return {out, by_run};
}

// A queue's put-off reads alone (no data thread): `ops` in order, each (kind, a, b) — kind 0
// puts off a read of bytes [a, b) of one buffer (the reads are numbered in the order they are
// put off), 1 writes bytes [a, b) (DataQueue::before_write), 2 takes back read number a. Per
// write, the numbers of the reads it flushed, ascending; the count of reads still put off last.
std::pair<std::vector<std::vector<int64_t>>, int> put_off_writes(
    const std::vector<std::tuple<int, int64_t, int64_t>>& ops) {
  int64_t size = 1;
  for (const auto& [kind, a, b] : ops) {
    if (kind < 0 || kind > 2 || a < 0 || (kind != 2 && b < a)) throw std::invalid_argument("op");
    size = std::max(size, kind == 2 ? size : b + 1);
  }
  std::vector<uint8_t> bytes(static_cast<size_t>(size));
  struct Read {
    int64_t number;
    std::vector<int64_t>* flushed;
  };
  std::vector<std::unique_ptr<Read>> reads;
  std::vector<int64_t> flushed;
  std::vector<std::vector<int64_t>> out;
  int count = 0;
  DataQueue q;
  for (const auto& [kind, a, b] : ops) {
    if (kind == 0) {
      reads.push_back(std::make_unique<Read>(Read{static_cast<int64_t>(reads.size()), &flushed}));
      const auto flush = [](DataQueue&, void* arg) {
        const Read& r = *static_cast<Read*>(arg);
        r.flushed->push_back(r.number);
      };
      q.put_off({bytes.data() + a, bytes.data() + b, flush, reads.back().get(), &count});
    } else if (kind == 1) {
      flushed.clear();
      q.before_write(bytes.data() + a, bytes.data() + b);
      std::sort(flushed.begin(), flushed.end());
      out.push_back(flushed);
    } else if (a < static_cast<int64_t>(reads.size())) {
      q.take_back(reads[static_cast<size_t>(a)].get());
    }
  }
  return {out, count};
}

using HostBytes = py::array_t<uint8_t, py::array::c_style>;
using Buffers = std::vector<std::pair<int64_t, int64_t>>;

// A memory system on its own, with buffers registered at (offset, bytes) of `host`.
// A registered buffer's bytes [offset, offset + bytes) lie in `host`.
void check_inside(const HostBytes& host, int64_t offset, int64_t bytes) {
  if (offset < 0 || bytes < 0 || offset + bytes > static_cast<int64_t>(host.size())) {
    throw std::invalid_argument("a buffer at " + std::to_string(offset) + " of " +
                                std::to_string(bytes) + " bytes lies outside the host array");
  }
}

void add_buffers(MemorySystem& memory, HostBytes& host, const Buffers& buffers) {
  for (const auto& [offset, bytes] : buffers) {
    check_inside(host, offset, bytes);
    memory.add_buffer(host.data() + offset, bytes);
  }
}

// A GM window from byte `offset` of `host`: `rows` rows of `row_bytes`, `stride` apart. It may
// run past the array (the system only keys lines by address: unregistered bytes are modelled too).
Access gm_window(HostBytes& host, int64_t offset, int64_t rows, int64_t row_bytes, int64_t stride) {
  if (rows < 1 || row_bytes < 1 || stride < 0)
    throw std::invalid_argument("a GM window needs rows >= 1, row_bytes >= 1 and stride >= 0");
  const auto base = static_cast<int64_t>(reinterpret_cast<intptr_t>(host.data()));
  return {PYPTO_GM, base + offset, rows, row_bytes, stride, 0};
}

// GM windows (offset, rows, row_bytes, stride) of `host` transferred one after another.
// Per window: (L2 hits, L2 misses) of its lines.
std::vector<std::pair<uint64_t, uint64_t>> l2_lookups(
    const Platform& platform, HostBytes host, const Buffers& buffers,
    const std::vector<std::tuple<int64_t, int64_t, int64_t, int64_t>>& windows) {
  MemorySystem memory(platform);
  add_buffers(memory, host, buffers);
  std::vector<std::pair<uint64_t, uint64_t>> out;
  double start = 0;
  for (const auto& [offset, rows, row_bytes, stride] : windows) {
    const MemoryStats before = memory.stats();
    start += memory.transfer(start, 1, 1, 64, gm_window(host, offset, rows, row_bytes, stride));
    out.emplace_back(memory.stats().l2_hits - before.l2_hits,
                     memory.stats().l2_misses - before.l2_misses);
  }
  return out;
}

// GM transfers (start cycle, offset, rows, row_bytes, stride) of `host` in the order given,
// each at `port_bw` bytes a cycle. Per transfer: its cycles (what the shared HBM and L2
// budgets let it take).
std::vector<double> gm_transfers(
    const Platform& platform, HostBytes host, const Buffers& buffers,
    const std::vector<std::tuple<double, int64_t, int64_t, int64_t, int64_t>>& transfers,
    double port_bw) {
  MemorySystem memory(platform);
  add_buffers(memory, host, buffers);
  std::vector<double> out;
  for (const auto& [start, offset, rows, row_bytes, stride] : transfers) {
    out.push_back(
        memory.transfer(start, 0, 0, port_bw, gm_window(host, offset, rows, row_bytes, stride)));
  }
  return out;
}

// Whether the calling thread's vector registers 0-15 hold live upper halves (the AVX and
// ZMM_Hi256 bits of XINUSE, read by XGETBV with ECX = 1): the state in which every legacy-SSE
// instruction pays a merge on Intel cores, until a vzeroupper. None where the CPU cannot tell.
std::optional<bool> vector_upper_state_dirty() {
#if defined(__x86_64__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(1, &a, &b, &c, &d) == 0 || (c & bit_OSXSAVE) == 0) return std::nullopt;
  if (__get_cpuid_count(0xD, 1, &a, &b, &c, &d) == 0 || (a & (1u << 2)) == 0) return std::nullopt;
  uint32_t lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(1));
  return (lo & ((1u << 2) | (1u << 6))) != 0;
#else
  return std::nullopt;
#endif
}

}  // namespace

void bind_testing(py::module_& m) {
  m.def("l2_lookups", &l2_lookups, py::arg("platform"), py::arg("host"), py::arg("buffers"),
        py::arg("windows"));
  m.def("gm_transfers", &gm_transfers, py::arg("platform"), py::arg("host"), py::arg("buffers"),
        py::arg("transfers"), py::arg("port_bw"));
  m.def("data_queue_exercise", &data_queue_exercise, py::arg("ops"), py::arg("rows"),
        py::arg("drain_every"), py::arg("when_waited") = false, py::arg("gap_us") = 0);
  m.def("put_off_writes", &put_off_writes, py::arg("ops"));
  m.def("core_storage_rounds", &core_storage_rounds, py::arg("sizes"));
  m.def("context_reuse_after_release", &context_reuse_after_release, py::arg("platform"),
        py::arg("taken_meanwhile"));
  m.def("vector_upper_state_dirty", &vector_upper_state_dirty);
  m.def("data_queue_times", [] {
    const DataQueue::Times t = DataQueue::times();
    py::typing::Dict<py::str, py::int_> d;
    d["run_waiting_ns"] = t.run_waiting_ns;
    d["run_full_ns"] = t.run_full_ns;
    d["run_helping_ns"] = t.run_helping_ns;
    d["data_idle_ns"] = t.data_idle_ns;
    d["data_joining_ns"] = t.data_joining_ns;
    d["data_cpu_ns"] = t.data_cpu_ns;
    d["drains"] = t.drains;
    return d;
  });
  m.def("matmul_f32_forms", &vm::matmul_f32_forms);
  m.def("matmul_f32_form", &matmul_form, py::arg("form"), py::arg("a"), py::arg("b"),
        py::arg("c").noconvert(), py::arg("accumulate") = false, py::arg("exact_products") = false,
        py::arg("repeat") = 1);
  m.def("fractal_forms", &isa::fractal_forms);
  m.def("fp16_encode_forms", &vm::fp16_encode_forms);
  m.def("fp16_encode_form", &fp16_encode_form, py::arg("form"), py::arg("x"));
  m.def("reduce_rows_f32_forms", &vm::reduce_rows_f32_forms);
  m.def("reduce_rows_f32_form", &reduce_rows_form, py::arg("form"), py::arg("op"), py::arg("x"));
  m.def("fractal_form", &fractal_form, py::arg("form"), py::arg("x"), py::arg("bf16") = false);
  py::class_<ModelHarness>(m, "CoreModel")
      .def(py::init<const Platform&, bool>(), py::arg("platform"), py::arg("record") = true)
      .def("op", &op, py::arg("pipe"), py::arg("cost"), py::arg("name") = "OP",
           py::arg("reads") = std::vector<Range>{}, py::arg("writes") = std::vector<Range>{},
           py::arg("loc") = "")
      .def("vector", &vector, py::arg("vec"), py::arg("bytes"),
           py::arg("reads") = std::vector<Range>{}, py::arg("writes") = std::vector<Range>{},
           py::arg("name") = "VOP", py::arg("general") = false,
           "Issues a vector op through the vector issue path (general: through issue()).")
      .def("instr", &instr, py::arg("pipe"), py::arg("spec"), py::arg("name") = "INSTR",
           "Issues one instruction described as an ISA op would describe it, priced by the cost "
           "model.")
      .def(
          "set_flag",
          [](ModelHarness& h, int src, int dst, int id) {
            h.model.issue(sync_instr(InstrKind::kSetFlag, src, "SET_FLAG", src, dst, id));
          },
          py::arg("src"), py::arg("dst"), py::arg("event_id"))
      .def(
          "wait_flag",
          [](ModelHarness& h, int src, int dst, int id) {
            h.model.issue(sync_instr(InstrKind::kWaitFlag, dst, "WAIT_FLAG", src, dst, id));
          },
          py::arg("src"), py::arg("dst"), py::arg("event_id"))
      .def(
          "barrier",
          [](ModelHarness& h, int pipe) {
            h.model.issue(sync_instr(InstrKind::kBarrier, pipe, "PIPE_BARRIER", pipe, pipe, 0));
          },
          py::arg("pipe"))
      .def("finish", [](ModelHarness& h) { h.model.finish(); })
      .def_property_readonly("records", &records)
      .def_property_readonly("cycles",
                             [](const ModelHarness& h) { return h.model.stats().total_cycles; })
      .def_property_readonly("pipe_busy",
                             [](const ModelHarness& h) {
                               const auto& b = h.model.stats().pipe_busy;
                               return std::vector<uint64_t>(b.begin(), b.end());
                             })
      .def_property_readonly("hazards", [](const ModelHarness& h) {
        std::vector<std::string> out;
        for (const Hazard& hz : h.model.hazards().found()) out.push_back(hz.describe());
        return out;
      });
}

}  // namespace pypto

PYBIND11_MODULE(_native_testing, m) {
  m.doc() = "pypto native test hooks: the core model alone, ISA kernel forms, the data queue";
  pybind11::module_::import("pypto._native");  // registers the Platform class CoreModel takes
  pypto::bind_testing(m);
}
