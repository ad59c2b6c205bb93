// The tools' native parts: clean_sim_trace's rebuild (csrc/tools/trace_clean.hpp), the raw
// trace writer (csrc/tools/trace_write.hpp), the whole-run trace's lanes
// (csrc/tools/perfetto_lanes.hpp), the records table by column (record_columns.hpp), the
// CRC-32 of the records file's zip members (crc32.hpp).
#include <pybind11/numpy.h>
#include <pybind11/stl.h>
#include <pybind11/typing.h>

#include <algorithm>
#include <limits>
#include <memory>
#include <optional>
#include <tuple>
#include <unordered_map>

#include "bindings/bind.hpp"
#include "tools/crc32.hpp"
#include "tools/perfetto_lanes.hpp"
#include "tools/record_columns.hpp"
#include "tools/trace_clean.hpp"
#include "tools/trace_write.hpp"

namespace py = pybind11;

namespace pypto {
namespace {

using I64Table = py::array_t<int64_t, py::array::c_style | py::array::forcecast>;
using I32Column = py::array_t<int32_t, py::array::c_style | py::array::forcecast>;

// The distinct string tables of a write's entries, each converted once: entries whose quoted
// strings are one Python list (write_container passes one per distinct table) and whose
// strings are equal share a table.
class StringTables {
 public:
  std::pair<const tools::StringTable*, size_t> of(const py::object& strings,
                                                  const py::object& quoted) {
    std::vector<size_t>& same_quoted = by_quoted_[quoted.ptr()];  // the cores' list keeps it alive
    for (size_t i : same_quoted) {
      if (strings_[i].equal(strings)) return {tables_[i].get(), i};
    }
    auto table = std::make_unique<tools::StringTable>();
    table->strings = strings.cast<std::vector<std::string>>();
    table->quoted = quoted.cast<std::vector<std::string>>();
    same_quoted.push_back(tables_.size());
    strings_.push_back(strings);
    tables_.push_back(std::move(table));
    return {tables_.back().get(), tables_.size() - 1};
  }

 private:
  std::unordered_map<PyObject*, std::vector<size_t>> by_quoted_;
  std::vector<py::object> strings_;
  std::vector<std::unique_ptr<tools::StringTable>> tables_;
};

// A core's records dict (as run_tasks returns it) viewed without copying; `keep` holds the
// converted arrays alive for the duration of the write, `tables` its strings.
tools::CoreRecordsView core_view(const py::tuple& core, std::vector<py::object>& keep,
                                 StringTables& tables) {
  const py::dict records = core[1].cast<py::dict>();
  auto table = I64Table::ensure(records["table"]);
  auto names = I32Column::ensure(records["name_id"]);
  auto locs = I32Column::ensure(records["loc_id"]);
  if (!table || !names || !locs || table.ndim() != 2)
    throw py::value_error("malformed trace records");
  tools::CoreRecordsView v;
  v.pid = core[0].cast<std::string>();
  v.rows = static_cast<size_t>(table.shape(0));
  v.width = static_cast<size_t>(table.shape(1));
  if (names.size() != table.shape(0) || locs.size() != table.shape(0)) {
    throw py::value_error("trace records of " + v.pid + ": columns of different lengths");
  }
  v.table = table.data();
  v.name_id = names.data();
  v.loc_id = locs.data();
  std::tie(v.text, v.text_id) = tables.of(records["strings"], core[2]);
  v.offset = core[3].cast<int64_t>();
  v.slot = core[4].cast<size_t>();
  keep.insert(keep.end(), {table, names, locs});
  return v;
}

tools::TraceLayout layout_of(const py::dict& d) {
  tools::TraceLayout l;
  const auto cols = d["columns"].cast<std::vector<int>>();
  if (cols.size() != 9) throw py::value_error("trace layout: 9 column positions expected");
  l.col = {cols[0], cols[1], cols[2], cols[3], cols[4], cols[5], cols[6], cols[7], cols[8]};
  l.lanes = d["lanes"].cast<std::vector<std::string>>();
  l.flag_pipes = d["flag_pipes"].cast<std::vector<std::string>>();
  l.sync_names = d["sync_names"].cast<std::vector<std::string>>();
  l.repeat_bytes = d["repeat_bytes"].cast<int64_t>();
  l.pc_base = d["pc_base"].cast<uint64_t>();
  l.head = d["head"].cast<std::string>();
  l.tail = d["tail"].cast<std::string>();
  if (d.contains("flows")) {  // [n, 6]: FlowEnd's fields per row
    const auto f = I64Table::ensure(d["flows"]);
    if (!f || f.ndim() != 2 || f.shape(1) != 6)
      throw py::value_error("trace layout: flows of 6 columns");
    const int64_t* v = f.data();
    for (py::ssize_t i = 0; i < f.shape(0); ++i, v += 6)
      l.flows.push_back({v[0], v[1], v[2], v[3], v[4], v[5]});
  }
  if (d.contains("api_head")) {  // the API_INSTR block too
    l.api_head = d["api_head"].cast<std::string>();
    l.api_tail = d["api_tail"].cast<std::string>();
    l.vector_pipe = d["vector_pipe"].cast<int>();
  }
  return l;
}

// (pid, records columns as run results hold them, JSON-quoted strings, cycles from the
// container's time 0 to the records' 0, the core's API_INSTR column) per core of a launch.
using Cores = py::typing::List<
    py::typing::Tuple<py::str, py::dict, py::typing::List<py::str>, py::int_, py::int_>>;

uint64_t write_trace(const Cores& cores, const py::dict& layout, const py::bytes& bin_prefix,
                     const std::string& json_path, const std::string& bin_path) {
  std::vector<py::object> keep;
  StringTables tables;
  std::vector<tools::CoreRecordsView> views;
  for (const auto& core : cores) views.push_back(core_view(core.cast<py::tuple>(), keep, tables));
  const tools::TraceLayout l = layout_of(layout);
  const auto& c = l.col;
  const int widest = std::max(
      {c.kind, c.pipe, c.start, c.end, c.bytes, c.addr, c.flag_src, c.flag_dst, c.flag_id});
  const int lowest = std::min(
      {c.kind, c.pipe, c.start, c.end, c.bytes, c.addr, c.flag_src, c.flag_dst, c.flag_id});
  for (const auto& v : views) {
    if (v.slot >= views.size() || v.offset < 0) {
      throw py::value_error("trace records of " + v.pid +
                            ": a core column past the entries, or a negative offset");
    }
    if (lowest < 0 || (v.rows && static_cast<size_t>(widest) >= v.width)) {
      throw py::value_error("trace records of " + v.pid + ": a column position is out of range");
    }
  }
  const std::string prefix = bin_prefix;
  tools::TraceSummary summary;
  {
    py::gil_scoped_release release;  // pure C++ over arrays `keep` holds alive
    summary = tools::write_trace_files(views, l, prefix, json_path, bin_path);
  }
  return summary.events;
}

// Per (source-line id, pipe) with operations in the records table: (loc ids, pipes, cycles,
// counts), the pairs in increasing loc * pipes + pipe (see record_columns.hpp).
py::tuple line_totals(const I64Table& table, const I32Column& loc, size_t strings, size_t pipes,
                      const std::vector<size_t>& columns) {
  if (table.ndim() != 2 || loc.ndim() != 1 || loc.shape(0) != table.shape(0))
    throw py::value_error("line_totals: a 2-D records table and one source-line id per row");
  const auto rows = static_cast<size_t>(table.shape(0));
  const auto width = static_cast<size_t>(table.shape(1));
  if (columns.size() != 4 || *std::max_element(columns.begin(), columns.end()) >= width)
    throw py::value_error("line_totals: the positions of kind, pipe, start, end expected");
  const tools::LineColumns cols{columns[0], columns[1], columns[2], columns[3]};
  std::vector<int64_t> cycles(strings * pipes), count(strings * pipes);
  {
    py::gil_scoped_release release;  // pure C++ over arrays the arguments hold alive
    tools::line_totals(table.data(), rows, width, loc.data(), cols, strings, pipes, cycles.data(),
                       count.data());
  }
  std::vector<int64_t> lines, lanes, sums, counts;
  for (size_t at = 0; at < count.size(); ++at) {
    if (count[at] == 0) continue;
    lines.push_back(static_cast<int64_t>(at / pipes));
    lanes.push_back(static_cast<int64_t>(at % pipes));
    sums.push_back(cycles[at]);
    counts.push_back(count[at]);
  }
  auto array = [](const std::vector<int64_t>& v) {
    return py::array_t<int64_t>(static_cast<py::ssize_t>(v.size()), v.data());
  };
  return py::make_tuple(array(lines), array(lanes), array(sums), array(counts));
}

py::array_t<int64_t> columns_of(const I64Table& table) {
  if (table.ndim() != 2) throw py::value_error("record_columns: a 2-D records table expected");
  const auto rows = static_cast<size_t>(table.shape(0));
  const auto width = static_cast<size_t>(table.shape(1));
  py::array_t<int64_t> out({table.shape(1), table.shape(0)});
  int64_t* dst = out.mutable_data();
  {
    py::gil_scoped_release release;  // pure C++ over arrays the arguments hold alive
    tools::record_columns(table.data(), rows, width, dst);
  }
  return out;
}

// The first of 1, 2, 4 and 8 bytes whose signed integers hold values of column_bits `bits`.
int bytes_for(uint64_t bits) {
  for (int b : {1, 2, 4}) {
    if (bits < (uint64_t{1} << (8 * b - 1))) return b;
  }
  return 8;
}

// Tables of at least this many rows in all have their column types chosen from a sample of rows
// (tools::sample_bits: the first kSamplePrefix rows of each table, then every kSampleStep-th),
// checked by the narrowing itself, which narrows again in the exact types when a column holds a
// value the sample's type does not: where column_bits' pass over every row cost about as much
// as the narrowing. A loop's instructions repeat within a few thousand rows, so the sample
// mostly sees every kind of value.
constexpr size_t kSampledFrom = size_t{1} << 16;
constexpr size_t kSamplePrefix = 4096, kSampleStep = 61;

// The tables' columns, each narrowed to the first of int8, int16, int32, int64 that holds it
// (int8 when there are no rows), laid out one after another (8-byte aligned) in one uint8
// block: `spare` when it is large enough (its pages are in already: fresh ones cost the
// kernel a zeroing each, a quarter of the narrowing), else a new one. Each column is a view
// whose base is the block.
py::list narrow_record_tables(const std::vector<I64Table>& tables,
                              const std::optional<py::array_t<uint8_t, 0>>& spare) {
  std::vector<tools::RecordsTable> views;
  size_t width = 0, rows = 0;
  for (const I64Table& t : tables) {
    if (t.ndim() != 2) throw py::value_error("narrow_record_tables: 2-D records tables expected");
    const auto w = static_cast<size_t>(t.shape(1));
    if (!views.empty() && w != width)
      throw py::value_error("narrow_record_tables: tables of different widths");
    width = w;
    views.push_back({t.data(), static_cast<size_t>(t.shape(0))});
    rows += views.back().rows;
  }
  const bool sampled = rows >= kSampledFrom;
  std::vector<uint64_t> bits(width), seen(width);
  {
    py::gil_scoped_release release;  // pure C++ over arrays the argument holds alive
    if (sampled) {
      tools::sample_bits(views, width, kSamplePrefix, kSampleStep, bits.data());
    } else {
      tools::column_bits(views, width, bits.data());
    }
  }
  std::vector<int> bytes(width);
  std::vector<void*> dst(width);
  py::array block;
  // The columns' places in the block for the types from `bits`, narrowed there; true when every
  // value fit its type (`seen`, the narrowing's own bits, is then within the types).
  auto narrow = [&]() {
    std::vector<size_t> offset(width + 1, 0);
    for (size_t c = 0; c < width; ++c) {
      bytes[c] = bytes_for(bits[c]);
      offset[c + 1] = offset[c] + (rows * static_cast<size_t>(bytes[c]) + 7) / 8 * 8;
    }
    const bool reuse = spare.has_value() && spare->ndim() == 1 && spare->writeable() &&
                       static_cast<size_t>(spare->size()) >= offset[width];
    const auto size = static_cast<py::ssize_t>(std::max<size_t>(offset[width], 1));
    block = reuse ? py::array(*spare) : py::array(py::array_t<uint8_t>(size));
    auto* base = static_cast<uint8_t*>(block.mutable_data());
    for (size_t c = 0; c < width; ++c) dst[c] = base + offset[c];
    {
      py::gil_scoped_release release;
      tools::narrow_columns(views, width, dst.data(), bytes.data(), seen.data());
    }
    bool fit = true;
    for (size_t c = 0; c < width; ++c) fit = fit && bytes_for(seen[c]) == bytes[c];
    return fit;
  };
  if (!narrow()) {  // a sample that missed a wider value: the exact types, narrowed again
    bits = seen;
    narrow();
  }
  py::list out;
  for (size_t c = 0; c < width; ++c) {
    const py::dtype type = bytes[c] == 1   ? py::dtype::of<int8_t>()
                           : bytes[c] == 2 ? py::dtype::of<int16_t>()
                           : bytes[c] == 4 ? py::dtype::of<int32_t>()
                                           : py::dtype::of<int64_t>();
    out.append(py::array(type, {static_cast<py::ssize_t>(rows)}, {}, dst[c], block));
  }
  return out;
}

// The CRC-32 (zip's) of the bytes of `data`, a contiguous buffer, continuing from `crc`.
uint32_t crc32_of(const py::buffer& data, uint32_t crc) {
  Py_buffer view;
  if (PyObject_GetBuffer(data.ptr(), &view, PyBUF_SIMPLE) != 0) throw py::error_already_set();
  {
    py::gil_scoped_release release;  // the view holds the buffer
    crc = tools::crc32(crc, view.buf, static_cast<size_t>(view.len));
  }
  PyBuffer_Release(&view);
  return crc;
}

// A core's lanes with the arrays its tasks' records live in (held for as long as it is).
struct BoundCoreLanes {
  std::vector<py::object> keep;
  std::unique_ptr<tools::CoreLanes> lanes;
};

// (records table, name ids, source-line ids, task string id -> core string id, start) per task.
using CoreTasks =
    py::typing::List<py::typing::Tuple<I64Table, I32Column, I32Column, I64Table, int>>;

BoundCoreLanes core_lanes(const CoreTasks& tasks, const std::vector<size_t>& at, size_t strings,
                          uint64_t first_flow) {
  if (at.size() != 7) throw py::value_error("core lanes: 7 column positions expected");
  BoundCoreLanes out;
  std::vector<tools::CoreTask> views;
  for (const auto& item : tasks) {
    const auto task = item.cast<py::tuple>();
    auto table = I64Table::ensure(task[0]);
    auto names = I32Column::ensure(task[1]);
    auto locs = I32Column::ensure(task[2]);
    auto ids = I64Table::ensure(task[3]);
    if (!table || !names || !locs || !ids || table.ndim() != 2 || ids.ndim() != 1)
      throw py::value_error("core lanes: malformed task records");
    tools::CoreTask v;
    v.rows = static_cast<size_t>(table.shape(0));
    v.width = static_cast<size_t>(table.shape(1));
    if (static_cast<size_t>(names.size()) != v.rows || static_cast<size_t>(locs.size()) != v.rows)
      throw py::value_error("core lanes: a task's columns of different lengths");
    v.table = table.data();
    v.name_id = names.data();
    v.loc_id = locs.data();
    v.core_id = ids.data();
    v.strings = static_cast<size_t>(ids.size());
    v.offset = task[4].cast<int64_t>();
    views.push_back(v);
    out.keep.insert(out.keep.end(), {table, names, locs, ids});
  }
  const tools::LaneColumnsAt cols{at[0], at[1], at[2], at[3], at[4], at[5], at[6]};
  try {
    py::gil_scoped_release release;  // pure C++ over arrays `keep` holds alive
    out.lanes = std::make_unique<tools::CoreLanes>(std::move(views), cols, strings, first_flow);
  } catch (const std::invalid_argument& e) {
    throw py::value_error(e.what());
  }
  return out;
}

py::list lanes_of(const BoundCoreLanes& core) {
  py::list out;
  for (const tools::CoreLane& lane : core.lanes->lanes()) {
    out.append(py::make_tuple(lane.pipe, lane.sub, py::array(py::cast(lane.names)),
                              py::array(py::cast(lane.locs))));
  }
  return out;
}

// The bytes of a contiguous one-dimensional buffer; `who` names the call in the error.
std::string_view payload_bytes(const py::buffer& payload, const char* who) {
  const py::buffer_info info = payload.request();
  if (info.ndim != 1 || info.strides[0] != info.itemsize) {
    throw py::value_error(std::string(who) + ": the payload must be contiguous bytes");
  }
  return {static_cast<const char*>(info.ptr), static_cast<size_t>(info.size * info.itemsize)};
}

py::typing::Dict<py::str, py::int_> stats_dict(const tools::CleanStats& stats) {
  py::typing::Dict<py::str, py::int_> out;
  out["slices"] = stats.slices;
  out["lanes"] = stats.lanes;
  out["flows"] = stats.flows;
  out["skipped_flags"] = stats.skipped_flags;
  return out;
}

}  // namespace

void bind_tools(py::module_& m) {
  py::register_exception<tools::TraceFormatError>(m, "TraceFormatError", PyExc_ValueError);
  m.def(
      "clean_trace",
      [](const py::buffer& payload, bool keep_scalar, const std::string& source,
         const tools::SourceLines& sources) {
        const std::string_view bytes = payload_bytes(payload, "clean_trace");
        tools::CleanTrace clean;
        {
          py::gil_scoped_release release;  // pure C++ over bytes the caller keeps alive
          clean = tools::clean_trace(bytes, keep_scalar, source, sources);
        }
        return py::typing::Tuple<py::bytes, py::typing::Dict<py::str, py::int_>>(
            py::make_tuple(py::bytes(clean.json), stats_dict(clean.stats)));
      },
      py::arg("payload"), py::arg("keep_scalar") = false, py::arg("source") = "",
      py::arg("sources") = tools::SourceLines{},
      "The clean trace of a TRACE payload and its stats; `sources`: pc_addr -> source line, "
      "added to the slices' args (see trace_clean.hpp).");
  m.def(
      "clean_trace_to_file",
      [](const py::buffer& payload, bool keep_scalar, const std::string& source,
         const std::string& path, const tools::SourceLines& sources) {
        const std::string_view bytes = payload_bytes(payload, "clean_trace_to_file");
        tools::CleanStats stats;
        {
          py::gil_scoped_release release;  // pure C++ over bytes the caller keeps alive
          stats = tools::clean_trace_to_file(bytes, keep_scalar, source, path, sources);
        }
        return stats_dict(stats);
      },
      py::arg("payload"), py::arg("keep_scalar"), py::arg("source"), py::arg("path"),
      py::arg("sources") = tools::SourceLines{},
      "clean_trace, streamed to the file `path` (written only once the payload has been read "
      "as JSON); returns the stats.");
  py::register_exception<tools::TraceWriteError>(m, "TraceWriteError", PyExc_OSError);
  m.def("write_trace", &write_trace, py::arg("cores"), py::arg("layout"), py::arg("bin_prefix"),
        py::arg("json_path"), py::arg("bin_path"),
        "Writes trace.json and visualize_data.bin (prefix, TRACE block and, when the layout "
        "has an api_head, API_INSTR block) of a kernel's launches from (pid, records, quoted "
        "strings, offset in cycles, API_INSTR column) per core of each, and the layout's tile "
        "pipe flows (int64 [n, 6]: id, pipe id, core entry, lane, cycles, 0 push / 1 pop) "
        "ahead of the records' events; returns the number of records' events.");
  m.def("narrow_record_tables", &narrow_record_tables, py::arg("tables"),
        py::arg("spare") = py::none(),
        "Column c of every records table (rows x columns, int64), one table after another, "
        "per column in the first of int8, int16, int32, int64 that holds its smallest and "
        "largest value (int8 when there are no rows), read without a transposed copy (see "
        "record_columns.hpp); the columns are views of one uint8 block (their base): `spare` "
        "when it is a writable 1-D uint8 array large enough, else a new one.");
  m.def("crc32", &crc32_of, py::arg("data"), py::arg("crc") = 0,
        "The CRC-32 of zip and zlib of the bytes of a contiguous buffer, continuing from `crc` "
        "as zlib's crc32 does, by carry-less multiplication where the CPU has it (see "
        "crc32.hpp).");
  m.def("line_totals", &line_totals, py::arg("table"), py::arg("loc"), py::arg("strings"),
        py::arg("pipes"), py::arg("columns"),
        "The hot-spot sums of a records table (rows x columns, int64) in one pass: (source-line "
        "ids, pipes, cycles, counts) of its operations (kind 0) per (line, pipe) that has any; "
        "columns: the positions of kind, pipe, start and end.");
  m.def("record_columns", &columns_of, py::arg("table"),
        "The records table (rows x columns, int64) as one contiguous row per column, in one "
        "pass (see record_columns.hpp).");
  py::class_<BoundCoreLanes>(m, "PerfettoCoreLanes",
                             "One core's lanes of the whole-run Perfetto trace (see "
                             "perfetto_lanes.hpp).")
      .def(py::init(&core_lanes), py::arg("tasks"), py::arg("columns"), py::arg("strings"),
           py::arg("first_flow"),
           "From (records table, name ids, source-line ids, task string id -> core string "
           "id, start cycle) per task of the core, the positions of the columns kind, pipe, "
           "start, end, flag_src, flag_dst, flag_id, the core's string count and the flag arrows "
           "numbered before it.")
      .def_property_readonly(
          "lanes",
          [](const BoundCoreLanes& c) {
            return py::typing::List<
                py::typing::Tuple<int, int, py::array_t<int64_t>, py::array_t<int64_t>>>(
                lanes_of(c));
          },
          "(pipe, sub-lane, the core string ids of its names, of its source lines) per lane.")
      .def_property_readonly(
          "flows", [](const BoundCoreLanes& c) { return c.lanes->flows(); },
          "The flag arrows of the core.")
      .def(
          "write_lane",
          [](const BoundCoreLanes& c, size_t lane, uint64_t seq, int fd, const std::string& path) {
            if (lane >= c.lanes->lanes().size()) throw py::index_error("no such lane");
            py::gil_scoped_release release;  // pure C++ over arrays the object holds alive
            return c.lanes->write_lane(lane, seq, fd, path);
          },
          py::arg("lane"), py::arg("seq"), py::arg("fd"), py::arg("path"),
          "The lane's slices, written to the open file descriptor `fd` (of the file `path`) a "
          "chunk at a time; returns their bytes.");
}

}  // namespace pypto
