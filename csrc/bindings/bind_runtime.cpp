// Kernel loading and launching. Arrays arrive already checked and converted by
// pypto.runtime (dtype code per array); this layer only builds descriptors.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>
#include <pybind11/typing.h>

#include <array>
#include <exception>
#include <memory>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

#include "bindings/bind.hpp"
#include "chip/core/core_pool.hpp"
#include "chip/core/data_queue.hpp"
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

// One kernel instance's results without its records (those are read once, by to_dict).
struct TaskRun {
  std::string name;
  int task = 0, core = 0, cluster = 0, subblock = 0;
  bool cube = false;
  int64_t block = 0;
  uint64_t start = 0, end = 0, cycles = 0, instructions = 0, hazard_count = 0;
  std::vector<uint64_t> pipe_busy;
  std::vector<std::string> hazards;
  MemoryStats memory;
};

TaskRun task_run(const TaskResult& r, const std::string& name) {
  const CoreStats& s = r.block.stats;
  TaskRun t{name,
            r.task,
            r.core,
            r.cluster,
            r.subblock,
            r.cube,
            r.block.block,
            r.start,
            r.end,
            s.total_cycles,
            s.instructions,
            r.block.hazard_count,
            std::vector<uint64_t>(s.pipe_busy.begin(), s.pipe_busy.end()),
            {},
            s.memory};
  for (const Hazard& h : r.block.hazards) t.hazards.push_back(h.describe());
  return t;
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

// One task as Python describes it (pypto.compile.plan's launch specs): the kernel is named by
// its .so path and loaded when a runner is built. Checked on construction.
struct Task {
  Task(std::string kernel_path, std::string name, std::vector<int> tensors,
       std::vector<int64_t> scalars, CoreKind core, std::vector<int> deps,
       std::vector<std::pair<int, int>> write_gates, int64_t block_idx, int64_t block_num,
       bool early_resolve)
      : kernel_path(std::move(kernel_path)),
        name(std::move(name)),
        tensors(std::move(tensors)),
        scalars(std::move(scalars)),
        core(core),
        deps(std::move(deps)),
        write_gates(std::move(write_gates)),
        block_idx(block_idx),
        block_num(block_num),
        early_resolve(early_resolve) {
    if (block_num < 1 || block_idx < 0 || block_idx >= block_num)
      throw SimError(ErrorKind::kInvalidArgument, "task block index must be in [0, block_num)");
  }
  std::string kernel_path, name;
  std::vector<int> tensors;  // indices into the run's tensor table, in ABI order
  std::vector<int64_t> scalars;
  CoreKind core;
  std::vector<int> deps;                         // earlier tasks it waits for before it starts
  std::vector<std::pair<int, int>> write_gates;  // (earlier task, tensor): only writes wait
  int64_t block_idx, block_num;
  bool early_resolve;
};

std::vector<TaskSpec> task_specs(const std::vector<Task>& tasks) {
  std::vector<TaskSpec> specs;
  specs.reserve(tasks.size());
  for (const Task& t : tasks) {
    specs.push_back({load_kernel(t.kernel_path), t.name, t.tensors, t.scalars, t.core, t.deps,
                     t.write_gates, t.block_idx, t.block_num, t.early_resolve});
  }
  return specs;
}

std::vector<pypto_tensor> tensor_table(const std::vector<std::pair<py::array, int>>& tensors) {
  std::vector<pypto_tensor> table;
  table.reserve(tensors.size());
  for (const auto& [array, code] : tensors) table.push_back(describe(array, code, table.size()));
  return table;
}

// A run's results as the scheduler left them: the dict a report reads, and the typed task
// list, are built on request, so a call whose results are never read pays nothing for them.
struct RunResults {
  ChipResult chip;
  std::shared_ptr<const std::vector<TaskSpec>> specs;
  bool record = false;
  py::object dict;   // built once: the records are handed over to it
  py::object tasks;  // list[TaskRun], built once

  using Dict = py::typing::Dict<py::str, py::object>;
  using TaskRuns = py::typing::List<TaskRun>;

  Dict to_dict() {
    if (dict.is_none()) dict = chip_to_dict(chip, *specs, record);
    return py::reinterpret_borrow<Dict>(dict);
  }
  TaskRuns task_runs() {
    if (tasks.is_none()) {
      py::list out;
      for (const TaskResult& r : chip.instances)
        out.append(task_run(r, (*specs)[static_cast<size_t>(r.task)].name));
      tasks = out;
    }
    return py::reinterpret_borrow<TaskRuns>(tasks);
  }
};

std::unique_ptr<RunResults> results(std::shared_ptr<const std::vector<TaskSpec>> specs,
                                    bool record) {
  return std::make_unique<RunResults>(
      RunResults{{}, std::move(specs), record, py::none(), py::none()});
}

ScheduleOptions options(bool record, bool hazards_fatal, std::optional<uint64_t> seed,
                        uint64_t max_cycles, uint64_t max_instructions) {
  ScheduleOptions o{record, hazards_fatal, seed.has_value(), seed.value_or(0), {}, -1};
  o.limits.max_cycles = max_cycles;
  o.limits.max_instructions = max_instructions;
  return o;
}

std::unique_ptr<RunResults> run_kernel(const std::string& path,
                                       const std::vector<std::pair<py::array, int>>& tensors,
                                       const std::vector<int64_t>& scalars, const Platform& p,
                                       const std::string& kernel_name, int64_t block_num,
                                       bool record, bool hazards_fatal, const std::string& core,
                                       uint64_t max_cycles, uint64_t max_instructions) {
  if (block_num < 1) throw SimError(ErrorKind::kInvalidArgument, "block_num must be >= 1");
  std::vector<pypto_tensor> table;
  std::vector<int> all;
  for (const auto& [array, code] : tensors) {
    all.push_back(static_cast<int>(table.size()));
    table.push_back(describe(array, code, table.size()));
  }
  KernelEntry entry = load_kernel(path);
  auto specs = std::make_shared<std::vector<TaskSpec>>();
  for (int64_t b = 0; b < block_num; ++b) {
    specs->push_back({entry, kernel_name, all, scalars, core_kind(core), {}, {}, b, block_num});
  }
  auto r = results(specs, record);
  const ScheduleOptions o =
      options(record, hazards_fatal, std::nullopt, max_cycles, max_instructions);
  {
    py::gil_scoped_release release;  // kernels never call back into Python
    InterruptScope interrupts;
    r->chip = run_tasks(*specs, table, p, o);
  }
  return r;
}

// A warm call's tensor table, made from the call's arguments (pypto.runtime.warm): per entry
// the argument it takes, the shape and dtype that argument had when the call was set up, its
// dtype code (with flags) and the numpy flag bits it must have (C-contiguous, owning its data,
// writeable for an output); an entry with need < 0 repeats an argument another entry checks.
// The checks read the array's own fields: a warm call checks its arguments in nanoseconds.
// With them, the call's run options, converted once, and whether its runs get a data thread
// (DataQueue::wanted() now: the warm call leaves its fast path when PYPTO_SIM_THREADS changes).
class WarmSpec {
 public:
  using Entry = std::tuple<size_t, std::vector<py::ssize_t>, py::dtype, int, int>;

  WarmSpec(std::vector<Entry> entries, bool record, bool hazards_fatal,
           std::optional<uint64_t> seed, uint64_t max_cycles, uint64_t max_instructions)
      : entries_(std::move(entries)),
        options_(options(record, hazards_fatal, seed, max_cycles, max_instructions)) {
    options_.data_thread = DataQueue::wanted() ? 1 : 0;
  }

  const ScheduleOptions& run_options() const { return options_; }

  // Fills `table` (its storage kept: the run's pool's) with the table of `args`; false when an
  // argument is not as set up (a miss: the general path checks it and names any problem) or
  // one array is passed for two arguments.
  bool table(const py::tuple& args, std::vector<pypto_tensor>& table) const {
    auto& api = py::detail::npy_api::get();
    table.clear();
    table.reserve(entries_.size());
    for (size_t e = 0; e < entries_.size(); ++e) {
      const auto& [arg, shape, dtype, code, need] = entries_[e];
      if (arg >= args.size()) return false;
      PyObject* obj = PyTuple_GET_ITEM(args.ptr(), static_cast<py::ssize_t>(arg));
      if (Py_TYPE(obj) != api.PyArray_Type_) return false;  // exactly an ndarray
      const auto* a = py::detail::array_proxy(obj);
      if (need >= 0) {
        if ((a->flags & need) != need || a->nd != static_cast<int>(shape.size())) return false;
        for (size_t d = 0; d < shape.size(); ++d) {
          if (a->dimensions[d] != shape[d]) return false;
        }
        if (a->descr != dtype.ptr() && !api.PyArray_EquivTypes_(a->descr, dtype.ptr()))
          return false;
        for (size_t before = 0; before < e; ++before) {  // the arrays checked so far
          const Entry& other = entries_[before];
          if (std::get<4>(other) >= 0 &&
              PyTuple_GET_ITEM(args.ptr(), static_cast<py::ssize_t>(std::get<0>(other))) == obj)
            return false;
        }
      }
      table.push_back(describe(py::reinterpret_borrow<py::array>(obj), code, table.size()));
    }
    return true;
  }

 private:
  std::vector<Entry> entries_;
  ScheduleOptions options_;
};

// One program's task list, its kernels loaded once, run again and again on one platform; the
// runs reuse core contexts and scheduler tables (CorePool). Runs on several threads at once
// each get a pool of their own.
class TaskRunner {
 public:
  // The Platform is kept alive by the binding (keep_alive): the contexts refer to it.
  TaskRunner(const std::vector<Task>& tasks, const Platform& platform)
      : specs_(std::make_shared<const std::vector<TaskSpec>>(task_specs(tasks))),
        platform_(platform) {}

  // A RunResults object, typed as one (a union of one type: pybind11 names it RunResults).
  using ResultsObject = py::typing::Union<RunResults>;

  ResultsObject run(const std::vector<std::pair<py::array, int>>& tensors, bool record,
                    bool hazards_fatal, std::optional<uint64_t> seed, uint64_t max_cycles,
                    uint64_t max_instructions) {
    Idle pool(*this);
    py::object r =
        run_table(tensor_table(tensors),
                  options(record, hazards_fatal, seed, max_cycles, max_instructions), pool.get());
    pool.keep();
    return py::reinterpret_steal<ResultsObject>(r.release());
  }

  // run() on the table `spec` makes of `args`, with its options; None (nothing run) when an
  // argument misses. The table is made in the run's pool (no allocation per run).
  py::typing::Optional<RunResults> run_args(const WarmSpec& spec, const py::tuple& args) {
    Idle pool(*this);
    if (!spec.table(args, pool->table)) {
      pool.keep();
      return py::typing::Optional<RunResults>(py::none());
    }
    py::object r = run_table(pool->table, spec.run_options(), pool.get());
    pool.keep();
    return py::typing::Optional<RunResults>(std::move(r));
  }

 private:
  // The runner's idle pool for one run (or a new one when another run holds it), given back
  // when the run has returned (keep(); the GIL is held then: no other run touches idle_); a run
  // that throws drops it, and the next run starts from a new one.
  class Idle {
   public:
    explicit Idle(TaskRunner& runner)
        : runner_(runner), pool_(std::exchange(runner.idle_, nullptr)) {
      if (!pool_) pool_ = std::make_unique<CorePool>(runner.platform_);
    }
    void keep() { runner_.idle_ = std::move(pool_); }
    Idle(const Idle&) = delete;
    Idle& operator=(const Idle&) = delete;
    CorePool* get() const { return pool_.get(); }
    CorePool* operator->() const { return pool_.get(); }

   private:
    TaskRunner& runner_;
    std::unique_ptr<CorePool> pool_;
  };

  // A RunResults object for a run: a kept one nobody else holds any more (the runner's reference
  // is its only one: no caller can see it change), cleared, or a new one, kept for a later run.
  // A warm call's results are held until the next call replaces them (the kernel's last
  // report), so two are kept: a run takes the one its call before last returned. Reusing one
  // saves making and freeing the Python object, its instance list and its registration with
  // pybind11 (~1,000 host instructions of a tiny kernel's run).
  std::pair<py::object, RunResults*> result_for(bool record) {
    for (Kept& k : kept_results_) {
      if (k.results != nullptr && Py_REFCNT(k.object.ptr()) == 1) {
        k.results->record = record;
        k.results->dict = py::none();
        k.results->tasks = py::none();
        return {k.object, k.results};
      }
    }
    auto made = results(specs_, record);
    RunResults* raw = made.get();
    py::object object = py::cast(std::move(made));
    Kept& slot = kept_results_[next_kept_];
    next_kept_ = (next_kept_ + 1) % kept_results_.size();
    slot.object = object;
    slot.results = raw;
    return {std::move(object), raw};
  }

  py::object run_table(const std::vector<pypto_tensor>& table, const ScheduleOptions& o,
                       CorePool* pool) {
    auto [object, r] = result_for(o.record);
    {
      py::gil_scoped_release release;
      InterruptScope interrupts;
      run_tasks(*specs_, table, platform_, o, pool, r->chip);
    }
    return std::move(object);
  }

  struct Kept {
    py::object object;
    RunResults* results = nullptr;  // object's (it owns it)
  };

  std::shared_ptr<const std::vector<TaskSpec>> specs_;
  const Platform& platform_;
  std::unique_ptr<CorePool> idle_;
  std::array<Kept, 2> kept_results_;
  size_t next_kept_ = 0;
};

// A warm call's run, bound once to its runner and WarmSpec: a plain CPython function of the
// call's argument tuple, run_args(spec, args) without pybind11's dispatcher (the call's argument
// vectors on the heap, the overload loop, keyword handling, a type lookup per argument: ~1,500
// instructions, a tenth of a tiny kernel's native run, on every call). The function's self is a
// capsule holding both objects (and references keeping them alive). A failing run raises what
// pybind11 would (its exception translators: pypto.errors).
struct WarmBinding {
  TaskRunner* runner;
  const WarmSpec* spec;
  py::object runner_ref, spec_ref;
};
constexpr const char* kWarmBinding = "pypto._native.WarmBinding";

PyObject* run_bound(PyObject* capsule, PyObject* args) noexcept {
  auto* b = static_cast<WarmBinding*>(PyCapsule_GetPointer(capsule, kWarmBinding));
  if (b == nullptr) return nullptr;
  if (!PyTuple_Check(args)) {
    PyErr_SetString(PyExc_TypeError, "a warm run takes the call's arguments as a tuple");
    return nullptr;
  }
  try {
    return b->runner->run_args(*b->spec, py::reinterpret_borrow<py::tuple>(args)).release().ptr();
  } catch (py::error_already_set& e) {
    e.restore();
  } catch (...) {
    py::detail::try_translate_exceptions();
  }
  return nullptr;
}

PyMethodDef g_run_bound_def = {
    "run_args", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&run_bound)), METH_O,
    "run_args(spec, args) of the runner and WarmSpec this function was bound to "
    "(TaskRunner.bind)."};

using BoundRun = py::typing::Callable<py::typing::Optional<RunResults>(py::tuple)>;

BoundRun bind_run(TaskRunner& runner, const WarmSpec& spec) {
  // Their Python objects (pybind11 finds the ones that hold them), kept alive by the binding.
  auto binding = std::make_unique<WarmBinding>(
      WarmBinding{&runner, &spec, py::cast(&runner, py::return_value_policy::reference),
                  py::cast(&spec, py::return_value_policy::reference)});
  py::capsule owner(binding.get(), kWarmBinding, [](PyObject* capsule) {
    delete static_cast<WarmBinding*>(PyCapsule_GetPointer(capsule, kWarmBinding));
  });
  binding.release();  // the capsule owns it now
  PyObject* fn = PyCFunction_New(&g_run_bound_def, owner.ptr());
  if (fn == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<BoundRun>(fn);
}

}  // namespace

void bind_results(py::module_& m) {
  py::class_<MemoryStats>(m, "MemoryStats", "The shared memory system's counters of one run.")
      .def_readonly("l2_hits", &MemoryStats::l2_hits)
      .def_readonly("l2_misses", &MemoryStats::l2_misses)
      .def_readonly("hbm_bytes", &MemoryStats::hbm_bytes)
      .def_readonly("l2_bytes", &MemoryStats::l2_bytes)
      .def_readonly("stalled_transfers", &MemoryStats::stalled_transfers);
  py::class_<TaskRun>(m, "TaskRun", "One kernel instance of a run: a task on one core.")
      .def_readonly("name", &TaskRun::name)
      .def_readonly("task", &TaskRun::task, "the task's index in the task list")
      .def_readonly("core", &TaskRun::core, "the core's index among the cores of its kind")
      .def_readonly("cube", &TaskRun::cube)
      .def_readonly("cluster", &TaskRun::cluster)
      .def_readonly("subblock", &TaskRun::subblock, "the AIV's index in its cluster (0 on an AIC)")
      .def_readonly("block", &TaskRun::block)
      .def_readonly("start", &TaskRun::start)
      .def_readonly("end", &TaskRun::end)
      .def_readonly("cycles", &TaskRun::cycles)
      .def_readonly("instructions", &TaskRun::instructions)
      .def_readonly("hazard_count", &TaskRun::hazard_count)
      .def_readonly("pipe_busy", &TaskRun::pipe_busy, "busy cycles per pipe, in ABI order")
      .def_readonly("hazards", &TaskRun::hazards)
      .def_readonly("memory", &TaskRun::memory);
  py::class_<RunResults>(m, "RunResults",
                         "A run's results: typed attributes, or to_dict() for the report and the "
                         "trace (with the records, when recorded).")
      .def_property_readonly("tasks", &RunResults::task_runs)
      .def_property_readonly("memory", [](const RunResults& r) { return r.chip.memory; })
      .def_property_readonly("races", [](const RunResults& r) { return r.chip.races; })
      .def("to_dict", &RunResults::to_dict);
}

void bind_runner(py::module_& m) {
  py::enum_<CoreKind>(m, "CoreKind", "The cores a task runs on.")
      .value("aiv", CoreKind::kAiv, "one vector core")
      .value("aic", CoreKind::kAic, "one cube core")
      .value("cluster", CoreKind::kCluster, "one cube core and its vector cores together");
  py::class_<Task>(m, "Task", "One task of a task list, as TaskRunner takes it.")
      .def(py::init<std::string, std::string, std::vector<int>, std::vector<int64_t>, CoreKind,
                    std::vector<int>, std::vector<std::pair<int, int>>, int64_t, int64_t, bool>(),
           py::arg("kernel_path"), py::arg("name"), py::arg("tensors"), py::arg("scalars"),
           py::arg("core"), py::arg("deps") = std::vector<int>{},
           py::arg("write_gates") = std::vector<std::pair<int, int>>{}, py::arg("block_idx") = 0,
           py::arg("block_num") = 1, py::arg("early_resolve") = false)
      .def_readonly("kernel_path", &Task::kernel_path)
      .def_readonly("name", &Task::name)
      .def_readonly("tensors", &Task::tensors, "indices into the run's tensor table, ABI order")
      .def_readonly("scalars", &Task::scalars, "the scalar slots, as the ABI passes them")
      .def_readonly("core", &Task::core)
      .def_readonly("deps", &Task::deps, "earlier tasks it waits for before it starts")
      .def_readonly("write_gates", &Task::write_gates,
                    "(earlier task, tensor): its writes into the tensor wait for the task's end")
      .def_readonly("block_idx", &Task::block_idx)
      .def_readonly("block_num", &Task::block_num)
      .def_readonly("early_resolve", &Task::early_resolve);
  py::class_<WarmSpec>(m, "WarmSpec",
                       "A warm call's tensor table from its arguments: (argument, shape, dtype, "
                       "code, numpy flag bits it needs or -1 for a repeated argument) entries; "
                       "and its run options, as TaskRunner.run takes them.")
      .def(py::init<std::vector<WarmSpec::Entry>, bool, bool, std::optional<uint64_t>, uint64_t,
                    uint64_t>(),
           py::arg("entries"), py::arg("record") = false, py::arg("hazards_fatal") = true,
           py::arg("seed") = py::none(), py::arg("max_cycles") = 0,
           py::arg("max_instructions") = 0);
  py::class_<TaskRunner> runner(m, "TaskRunner",
                                "A task list bound to a platform, its kernels loaded once, run "
                                "many times in one simulated clock each.");
  runner
      .def(py::init<const std::vector<Task>&, const Platform&>(), py::arg("tasks"),
           py::arg("platform"), py::keep_alive<1, 3>())
      .def("run", &TaskRunner::run, py::arg("tensors"), py::arg("record") = false,
           py::arg("hazards_fatal") = true, py::arg("seed") = py::none(), py::arg("max_cycles") = 0,
           py::arg("max_instructions") = 0,
           "Runs the tasks on `tensors` ((array, flagged dtype code) each) on the platform's "
           "cores; a write gate holds writes into that tensor until its task has ended.")
      .def("run_args", &TaskRunner::run_args, py::arg("spec"), py::arg("args"),
           "run() on the table a WarmSpec makes of a call's arguments, with the spec's options; "
           "None, with nothing run, when an argument is not as the spec was set up.")
      .def("bind", &bind_run, py::arg("spec"),
           "run_args with `spec`, as a function of the call's arguments alone: the warm call's "
           "run, without the dispatch of a bound method's arguments on every call.");
}

void bind_runtime(py::module_& m) {
  bind_results(m);
  bind_runner(m);
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
        "'aic', or 'cluster': one AIC and its AIVs).");
}

}  // namespace pypto
