// The tools' native parts: clean_sim_trace's rebuild (csrc/tools/trace_clean.hpp).
#include "runtime/bind.hpp"
#include "tools/trace_clean.hpp"

namespace py = pybind11;

namespace pypto {

void bind_tools(py::module_& m) {
  py::register_exception<tools::TraceFormatError>(m, "TraceFormatError", PyExc_ValueError);
  m.def(
      "clean_trace",
      [](const py::buffer& payload, bool keep_scalar, const std::string& source) {
        const py::buffer_info info = payload.request();
        if (info.ndim != 1 || info.strides[0] != info.itemsize) {
          throw py::value_error("clean_trace: the payload must be contiguous bytes");
        }
        const std::string_view bytes(static_cast<const char*>(info.ptr),
                                     static_cast<size_t>(info.size * info.itemsize));
        tools::CleanTrace clean;
        {
          py::gil_scoped_release release;  // pure C++ over bytes the caller keeps alive
          clean = tools::clean_trace(bytes, keep_scalar, source);
        }
        py::dict stats;
        stats["slices"] = clean.stats.slices;
        stats["lanes"] = clean.stats.lanes;
        stats["flows"] = clean.stats.flows;
        stats["skipped_flags"] = clean.stats.skipped_flags;
        return py::make_tuple(py::bytes(clean.json), stats);
      },
      py::arg("payload"), py::arg("keep_scalar") = false, py::arg("source") = "");
}

}  // namespace pypto
