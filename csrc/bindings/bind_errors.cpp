// Maps SimError kinds onto the pypto.errors classes, so Python sees one hierarchy.
#include "bindings/bind.hpp"
#include "simulator/errors.hpp"

namespace py = pybind11;

namespace pypto {
namespace {

const char* python_class(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kMemorySpace:
      return "MemorySpaceError";
    case ErrorKind::kOutOfBounds:
      return "OutOfBoundsError";
    case ErrorKind::kShape:
      return "ShapeMismatchError";
    case ErrorKind::kDType:
      return "DTypeMismatchError";
    case ErrorKind::kFlag:
      return "FlagError";
    case ErrorKind::kDeadlock:
      return "DeadlockError";
    case ErrorKind::kHazard:
      return "HazardError";
    case ErrorKind::kLoad:
      return "KernelLoadError";
    case ErrorKind::kLimit:
      return "SimulationLimitError";
    case ErrorKind::kCrossCore:
      return "CrossCoreError";
    case ErrorKind::kRace:
      return "RaceError";
    case ErrorKind::kInterrupted:
      return nullptr;
    case ErrorKind::kInternal:
      return "SimulationError";
    case ErrorKind::kInvalidArgument:
      return nullptr;
    case ErrorKind::kReadOnly:
      return "ReadOnlyInputError";
    case ErrorKind::kZeroDivision:
      return "KernelZeroDivisionError";
    case ErrorKind::kHostMemory:
      return "HostMemoryError";
    case ErrorKind::kConfig:
      return "ConfigError";
  }
  return "SimulationError";
}

}  // namespace

void bind_errors(py::module_& m) {
  (void)m;
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const SimError& e) {
      if (e.kind() == ErrorKind::kInterrupted) {
        PyErr_SetString(PyExc_KeyboardInterrupt, e.what());
        return;
      }
      const char* cls = python_class(e.kind());
      if (cls == nullptr) {
        PyErr_SetString(PyExc_ValueError, e.what());
        return;
      }
      py::object type = py::module_::import("pypto.errors").attr(cls);
      PyErr_SetObject(type.ptr(), type(e.what()).ptr());
    }
  });
}

}  // namespace pypto
