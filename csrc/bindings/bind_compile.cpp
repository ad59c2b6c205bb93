// The compiler's native parts: the launch planner's dependency index
// (csrc/compile/dep_index.hpp), used by pypto/compile/deps.py.
#include <pybind11/pybind11.h>

#include <algorithm>
#include <vector>

#include "bindings/bind.hpp"
#include "compile/dep_index.hpp"

namespace py = pybind11;

namespace pypto {
namespace {

int64_t as_int(PyObject* o) {
  const long long v = PyLong_AsLongLong(o);
  if (v == -1 && PyErr_Occurred()) throw py::error_already_set();
  return v;
}

// A planner's uses, read with the C API: a plan converts a few per task, tens of thousands of
// tasks, and pybind11's casters would cost more than the index itself.
std::vector<plan::Use> uses_of(const py::list& uses) {
  std::vector<plan::Use> out;
  out.reserve(uses.size());
  for (py::handle item : uses) {
    PyObject* u = item.ptr();
    if (!PyTuple_Check(u) || PyTuple_GET_SIZE(u) != 4)
      throw py::type_error("a use is (root, box, reads, writes)");
    plan::Use& use = out.emplace_back();
    use.root = as_int(PyTuple_GET_ITEM(u, 0));
    PyObject* box = PyTuple_GET_ITEM(u, 1);
    if (box != Py_None) {
      if (!PyTuple_Check(box))
        throw py::type_error("a use's box is a tuple of (start, stop) pairs or None");
      plan::Box& b = use.box.emplace();
      for (Py_ssize_t d = 0; d < PyTuple_GET_SIZE(box); ++d) {
        PyObject* dim = PyTuple_GET_ITEM(box, d);
        if (!PyTuple_Check(dim) || PyTuple_GET_SIZE(dim) != 2)
          throw py::type_error("a box dim is (start, stop)");
        b.push_back(as_int(PyTuple_GET_ITEM(dim, 0)));
        b.push_back(as_int(PyTuple_GET_ITEM(dim, 1)));
      }
    }
    use.reads = PyObject_IsTrue(PyTuple_GET_ITEM(u, 2)) == 1;
    use.writes = PyObject_IsTrue(PyTuple_GET_ITEM(u, 3)) == 1;
  }
  return out;
}

py::tuple submit_task(plan::DepIndex& index, const py::list& uses, const py::iterable& atomic,
                      const py::list& parallel) {
  const std::vector<plan::Use> u = uses_of(uses);
  std::vector<int64_t> atomic_roots;
  for (py::handle root : atomic) atomic_roots.push_back(as_int(root.ptr()));
  std::sort(atomic_roots.begin(), atomic_roots.end());
  std::vector<std::pair<int64_t, int64_t>> loops;
  for (py::handle p : parallel) {
    PyObject* pair = p.ptr();
    if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2)
      throw py::type_error("a parallel loop is (loop run, iteration)");
    loops.emplace_back(as_int(PyTuple_GET_ITEM(pair, 0)), as_int(PyTuple_GET_ITEM(pair, 1)));
  }
  const plan::Followed f = index.submit(u, atomic_roots, loops);
  py::list tasks(f.tasks.size()), gates(f.gates.size());
  for (size_t i = 0; i < f.tasks.size(); ++i) tasks[i] = py::int_(f.tasks[i]);
  for (size_t i = 0; i < f.gates.size(); ++i)
    gates[i] = py::make_tuple(f.gates[i].first, f.gates[i].second);
  return py::make_tuple(tasks, gates);
}

}  // namespace

void bind_compile(py::module_& m) {
  py::class_<plan::DepIndex>(m, "DepIndex",
                             "The launch planner's dependency index (pypto.compile.deps).")
      .def(py::init<>())
      .def("submit", &submit_task, py::arg("uses"), py::arg("atomic"), py::arg("parallel"),
           "The earlier tasks a task with `uses` ((root, box, reads, writes) each) must follow, "
           "ascending, and its write gates ((task, buffer) pairs); the task is then indexed as the "
           "next one. `atomic`: the buffers it writes only by atomic adds; `parallel`: the (loop "
           "run, iteration) of each pl.parallel loop it is in.")
      .def_property_readonly("count", &plan::DepIndex::count, "The tasks indexed so far.");
}

}  // namespace pypto
