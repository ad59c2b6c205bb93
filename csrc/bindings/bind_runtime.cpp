// Kernel loading and launching. Arrays arrive already checked and converted by
// pypto.runtime (dtype code per array); this layer only builds descriptors.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <memory>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

#include "bindings/bind.hpp"
#include "chip/core/core_pool.hpp"
#include "chip/core/launch.hpp"
#include "chip/core/scheduler.hpp"
#include "simulator/errors.hpp"
#include "simulator/interrupt.hpp"

namespace py = pybind11;

namespace pypto {
namespace {

// `code` is the dtype, plus pypto_tensor_flags << 8 (pypto.runtime.dtypes.flagged).
pypto_tensor describe(const py::array& a, int code, size_t index) {
  if (a.ndim() < 1 || a.ndim() > PYPTO_MAX_DIMS) {
    throw SimError(ErrorKind::kShape,
                   "tensors must have 1 to 4 dims, got " + std::to_string(a.ndim()));
  }
  pypto_tensor t{};
  t.data = const_cast<void*>(a.data());
  t.dtype = code & 0xff;
  t.flags = (code >> 8) | (a.writeable() ? 0 : PYPTO_TENSOR_READONLY);
  t.index = static_cast<int32_t>(index);
  t.ndim = static_cast<int32_t>(a.ndim());
  for (py::ssize_t i = 0; i < a.ndim(); ++i) {
    t.shape[i] = a.shape(i);
    t.strides[i] = a.strides(i) / a.itemsize();
  }
  return t;
}

// An array over a buffer the core model filled, owned by the array from now on (no copy).
template <class T>
py::array_t<T> hand_over(GrowBuffer& buffer, std::vector<py::ssize_t> shape) {
  const Mapping m = buffer.release();
  if (m.data == nullptr) return py::array_t<T>(shape);
  py::capsule owner(new Mapping(m), [](void* p) {
    auto* mapping = static_cast<Mapping*>(p);
    GrowBuffer::recycle(*mapping);
    delete mapping;
  });
  return py::array_t<T>(shape, static_cast<T*>(m.data), owner);
}

// Records as one int64 table (a row per instruction, RECORD_COLUMNS order) plus interned
// name/location strings: no Python object per instruction, and no copy of the rows.
py::dict records_to_columns(RecordTable& records) {
  RecordTable::Columns c = records.take_columns();
  const auto n = static_cast<py::ssize_t>(c.rows);
  py::dict d;
  d["table"] = hand_over<int64_t>(c.table, {n, py::ssize_t{kRecordWidth}});
  d["name_id"] = hand_over<int32_t>(c.name_id, {n});
  d["loc_id"] = hand_over<int32_t>(c.loc_id, {n});
  py::list strings;
  for (const char* s : c.strings) strings.append(s);
  d["strings"] = strings;
  return d;
}

py::dict memory_to_dict(const MemoryStats& m) {
  py::dict d;
  d["l2_hits"] = m.l2_hits;
  d["l2_misses"] = m.l2_misses;
  d["hbm_bytes"] = m.hbm_bytes;
  d["l2_bytes"] = m.l2_bytes;
  d["stalled_transfers"] = m.stalled_transfers;
  return d;
}

py::dict block_to_dict(BlockResult& r, bool record) {
  py::dict d;
  d["block"] = r.block;
  d["cycles"] = r.stats.total_cycles;
  d["instructions"] = r.stats.instructions;
  d["pipe_busy"] = std::vector<uint64_t>(r.stats.pipe_busy.begin(), r.stats.pipe_busy.end());
  py::list hazards;
  for (const Hazard& h : r.hazards) hazards.append(h.describe());
  d["hazards"] = hazards;
  d["hazard_count"] = r.hazard_count;
  d["memory"] = memory_to_dict(r.stats.memory);
  d["records"] = record ? py::object(records_to_columns(r.records)) : py::none();
  return d;
}

CoreKind core_kind(const std::string& core) {
  if (core == "aiv") return CoreKind::kAiv;
  if (core == "aic") return CoreKind::kAic;
  if (core == "cluster") return CoreKind::kCluster;
  throw SimError(ErrorKind::kInvalidArgument,
                 "core must be 'aiv', 'aic' or 'cluster', got '" + core + "'");
}

py::dict chip_to_dict(ChipResult& chip, const std::vector<TaskSpec>& specs, bool record) {
  py::list out;
  for (TaskResult& r : chip.instances) {
    py::dict d = block_to_dict(r.block, record);
    d["name"] = specs[static_cast<size_t>(r.task)].name;
    d["task"] = r.task;
    d["core"] = r.core;
    d["cube"] = r.cube;
    d["cluster"] = r.cluster;
    d["subblock"] = r.subblock;
    d["start"] = r.start;
    d["end"] = r.end;
    out.append(d);
  }
  py::dict result;
  result["tasks"] = out;
  result["memory"] = memory_to_dict(chip.memory);
  result["races"] = chip.races;
  return result;
}

ChipResult run_specs(const std::vector<TaskSpec>& specs, const std::vector<pypto_tensor>& table,
                     const Platform& p, const ScheduleOptions& o) {
  py::gil_scoped_release release;  // kernels never call back into Python
  InterruptScope interrupts;
  return run_tasks(specs, table, p, o);
}

ScheduleOptions options(bool record, bool hazards_fatal, std::optional<uint64_t> seed,
                        uint64_t max_cycles, uint64_t max_instructions) {
  ScheduleOptions o{record, hazards_fatal, seed.has_value(), seed.value_or(0), {}};
  o.limits.max_cycles = max_cycles;
  o.limits.max_instructions = max_instructions;
  return o;
}

py::dict run_kernel(const std::string& path, const std::vector<std::pair<py::array, int>>& tensors,
                    const std::vector<int64_t>& scalars, const Platform& p,
                    const std::string& kernel_name, int64_t block_num, bool record,
                    bool hazards_fatal, const std::string& core, uint64_t max_cycles,
                    uint64_t max_instructions) {
  if (block_num < 1) throw SimError(ErrorKind::kInvalidArgument, "block_num must be >= 1");
  std::vector<pypto_tensor> table;
  std::vector<int> all;
  for (const auto& [array, code] : tensors) {
    all.push_back(static_cast<int>(table.size()));
    table.push_back(describe(array, code, table.size()));
  }
  KernelEntry entry = load_kernel(path);
  std::vector<TaskSpec> specs;
  for (int64_t b = 0; b < block_num; ++b) {
    specs.push_back({entry, kernel_name, all, scalars, core_kind(core), {}, {}, b, block_num});
  }
  ChipResult chip = run_specs(
      specs, table, p, options(record, hazards_fatal, std::nullopt, max_cycles, max_instructions));
  return chip_to_dict(chip, specs, record);
}

using TaskTuple =
    std::tuple<std::string, std::string, std::vector<int>, std::vector<int64_t>, int,
               std::vector<int>, std::vector<std::pair<int, int>>, int64_t, int64_t, bool>;

std::vector<TaskSpec> task_specs(const std::vector<TaskTuple>& tasks) {
  std::vector<TaskSpec> specs;
  for (const auto& [path, name, idx, scalars, kind, deps, gates, block, blocks, early] : tasks) {
    if (kind < 0 || kind > 2)
      throw SimError(ErrorKind::kInvalidArgument, "task core kind must be 0, 1 or 2");
    if (blocks < 1 || block < 0 || block >= blocks)
      throw SimError(ErrorKind::kInvalidArgument, "task block index must be in [0, block_num)");
    specs.push_back({load_kernel(path), name, idx, scalars, static_cast<CoreKind>(kind), deps,
                     gates, block, blocks, early});
  }
  return specs;
}

std::vector<pypto_tensor> tensor_table(const std::vector<std::pair<py::array, int>>& tensors) {
  std::vector<pypto_tensor> table;
  table.reserve(tensors.size());
  for (const auto& [array, code] : tensors) table.push_back(describe(array, code, table.size()));
  return table;
}

py::dict run_task_list(const std::vector<TaskTuple>& tasks,
                       const std::vector<std::pair<py::array, int>>& tensors, const Platform& p,
                       bool record, bool hazards_fatal, std::optional<uint64_t> seed,
                       uint64_t max_cycles, uint64_t max_instructions) {
  const std::vector<pypto_tensor> table = tensor_table(tensors);
  const std::vector<TaskSpec> specs = task_specs(tasks);
  ChipResult chip = run_specs(specs, table, p,
                              options(record, hazards_fatal, seed, max_cycles, max_instructions));
  return chip_to_dict(chip, specs, record);
}

// A run's results as the scheduler left them: the dict a report reads is built on request,
// so a call whose report is never read pays nothing for it.
struct RunResults {
  ChipResult chip;
  std::shared_ptr<const std::vector<TaskSpec>> specs;
  bool record = false;
  py::object dict;  // built once: the records are handed over to it

  py::object to_dict() {
    if (dict.is_none()) dict = chip_to_dict(chip, *specs, record);
    return dict;
  }
};

// A warm call's tensor table, made from the call's arguments (pypto.runtime.warm): per entry
// the argument it takes, the shape and dtype that argument had when the call was set up, its
// dtype code (with flags) and the numpy flag bits it must have (C-contiguous, owning its data,
// writeable for an output); an entry with need < 0 repeats an argument another entry checks.
// The checks read the array's own fields: a warm call checks its arguments in nanoseconds.
class WarmSpec {
 public:
  using Entry = std::tuple<size_t, std::vector<py::ssize_t>, py::dtype, int, int>;

  explicit WarmSpec(std::vector<Entry> entries) : entries_(std::move(entries)) {}

  // The table of `args`, or nullopt when an argument is not as set up (a miss: the general
  // path checks it and names any problem) or one array is passed for two arguments.
  std::optional<std::vector<pypto_tensor>> table(const py::tuple& args) const {
    auto& api = py::detail::npy_api::get();
    std::vector<pypto_tensor> table;
    table.reserve(entries_.size());
    std::vector<PyObject*> seen;
    for (const auto& [arg, shape, dtype, code, need] : entries_) {
      if (arg >= args.size()) return std::nullopt;
      PyObject* obj = PyTuple_GET_ITEM(args.ptr(), static_cast<py::ssize_t>(arg));
      if (Py_TYPE(obj) != api.PyArray_Type_) return std::nullopt;  // exactly an ndarray
      const auto* a = py::detail::array_proxy(obj);
      if (need >= 0) {
        if ((a->flags & need) != need || a->nd != static_cast<int>(shape.size()))
          return std::nullopt;
        for (size_t d = 0; d < shape.size(); ++d) {
          if (a->dimensions[d] != shape[d]) return std::nullopt;
        }
        if (a->descr != dtype.ptr() && !api.PyArray_EquivTypes_(a->descr, dtype.ptr()))
          return std::nullopt;
        for (PyObject* other : seen) {
          if (other == obj) return std::nullopt;
        }
        seen.push_back(obj);
      }
      table.push_back(describe(py::reinterpret_borrow<py::array>(obj), code, table.size()));
    }
    return table;
  }

 private:
  std::vector<Entry> entries_;
};

// One program's task list, its kernels loaded once, run again and again on one platform; the
// runs reuse core contexts and scheduler tables (CorePool). Runs on several threads at once
// each get a pool of their own.
class TaskRunner {
 public:
  TaskRunner(const std::vector<TaskTuple>& tasks, py::object platform)
      : specs_(std::make_shared<const std::vector<TaskSpec>>(task_specs(tasks))),
        platform_ref_(std::move(platform)),
        platform_(platform_ref_.cast<const Platform&>()) {}

  std::unique_ptr<RunResults> run(const std::vector<std::pair<py::array, int>>& tensors,
                                  bool record, bool hazards_fatal, std::optional<uint64_t> seed,
                                  uint64_t max_cycles, uint64_t max_instructions) {
    return run_table(tensor_table(tensors),
                     options(record, hazards_fatal, seed, max_cycles, max_instructions));
  }

  // run() on the table `spec` makes of `args`; None (nothing run) when an argument misses.
  std::unique_ptr<RunResults> run_args(const WarmSpec& spec, const py::tuple& args, bool record,
                                       bool hazards_fatal, std::optional<uint64_t> seed,
                                       uint64_t max_cycles, uint64_t max_instructions) {
    std::optional<std::vector<pypto_tensor>> table = spec.table(args);
    if (!table) return nullptr;
    return run_table(*table, options(record, hazards_fatal, seed, max_cycles, max_instructions));
  }

 private:
  std::unique_ptr<RunResults> run_table(const std::vector<pypto_tensor>& table,
                                        const ScheduleOptions& o) {
    std::unique_ptr<CorePool> pool = std::exchange(idle_, nullptr);
    if (!pool) pool = std::make_unique<CorePool>(platform_);
    auto r = std::make_unique<RunResults>(RunResults{{}, specs_, o.record, py::none()});
    {
      py::gil_scoped_release release;
      InterruptScope interrupts;
      r->chip = run_tasks(*specs_, table, platform_, o, pool.get());
    }
    idle_ = std::move(pool);  // the GIL is held again: no other run touches idle_ now
    return r;
  }

  std::shared_ptr<const std::vector<TaskSpec>> specs_;
  py::object platform_ref_;  // keeps the Platform the contexts refer to alive
  const Platform& platform_;
  std::unique_ptr<CorePool> idle_;
};

}  // namespace

void bind_runner(py::module_& m) {
  py::class_<RunResults>(m, "RunResults",
                         "A run's results; to_dict() builds what run_tasks returns.")
      .def("to_dict", &RunResults::to_dict);
  py::class_<WarmSpec>(m, "WarmSpec",
                       "A warm call's tensor table from its arguments: (argument, shape, dtype, "
                       "code, numpy flag bits it needs or -1 for a repeated argument) entries.")
      .def(py::init<std::vector<WarmSpec::Entry>>(), py::arg("entries"));
  py::class_<TaskRunner>(m, "TaskRunner",
                         "A task list (as run_tasks takes it) bound to a platform, run many times.")
      .def(py::init<const std::vector<TaskTuple>&, py::object>(), py::arg("tasks"),
           py::arg("platform"))
      .def("run", &TaskRunner::run, py::arg("tensors"), py::arg("record") = false,
           py::arg("hazards_fatal") = true, py::arg("seed") = py::none(), py::arg("max_cycles") = 0,
           py::arg("max_instructions") = 0,
           "Runs the tasks on `tensors` as run_tasks does; the results, as RunResults.")
      .def("run_args", &TaskRunner::run_args, py::arg("spec"), py::arg("args"),
           py::arg("record") = false, py::arg("hazards_fatal") = true, py::arg("seed") = py::none(),
           py::arg("max_cycles") = 0, py::arg("max_instructions") = 0,
           "run() on the table a WarmSpec makes of a call's arguments; None, with nothing run, "
           "when an argument is not as the spec was set up.");
}

void bind_runtime(py::module_& m) {
  bind_runner(m);
  m.def("run_tasks", &run_task_list, py::arg("tasks"), py::arg("tensors"), py::arg("platform"),
        py::arg("record") = false, py::arg("hazards_fatal") = true, py::arg("seed") = py::none(),
        py::arg("max_cycles") = 0, py::arg("max_instructions") = 0,
        "Runs (path, name, tensor indices, scalars, core kind 0=AIV/1=AIC/2=cluster, deps, write "
        "gates, block index, block count, early resolve) tasks on the platform's cores in one "
        "simulated clock; a "
        "write gate (task, tensor) "
        "holds writes into that tensor until the task has ended. Returns {tasks, memory, races}.");
  m.def(
      "load_kernel", [](const std::string& path) { load_kernel(path); }, py::arg("path"),
      "Loads a kernel .so and checks it exports kernel_entry.");
  m.def("probe_kernel", &probe_kernel, py::arg("path"),
        "Loads and unloads a kernel .so; returns '' or why it does not load.");
  m.def("run_kernel", &run_kernel, py::arg("path"), py::arg("tensors"), py::arg("scalars"),
        py::arg("platform"), py::arg("kernel_name") = "kernel", py::arg("block_num") = 1,
        py::arg("record") = false, py::arg("hazards_fatal") = true, py::arg("core") = "aiv",
        py::arg("max_cycles") = 0, py::arg("max_instructions") = 0,
        "Runs kernel_entry once per block, each block a task on a core of kind `core` ('aiv', "
        "'aic', or 'cluster': one AIC and its AIVs); returns {tasks, memory, races}.");
}

}  // namespace pypto
