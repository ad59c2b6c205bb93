// Kernel loading and launching. Arrays arrive already checked and converted by
// pypto.runtime (dtype code per array); this layer only builds descriptors.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include "runtime/bind.hpp"
#include "runtime/core/launch.hpp"
#include "simulator/errors.hpp"

namespace py = pybind11;

namespace pypto {
namespace {

pypto_tensor describe(const py::array& a, int dtype) {
  if (a.ndim() < 1 || a.ndim() > PYPTO_MAX_DIMS) {
    throw SimError(ErrorKind::kShape, "tensors must have 1 to 4 dims, got " + std::to_string(a.ndim()));
  }
  pypto_tensor t{};
  t.data = const_cast<void*>(a.data());
  t.dtype = dtype;
  t.ndim = static_cast<int32_t>(a.ndim());
  for (py::ssize_t i = 0; i < a.ndim(); ++i) {
    t.shape[i] = a.shape(i);
    t.strides[i] = a.strides(i) / a.itemsize();
  }
  return t;
}

py::dict records_to_columns(const std::vector<InstrRecord>& recs) {
  size_t n = recs.size();
  py::array_t<int64_t> index(n), kind(n), pipe(n), issue(n), start(n), end(n), bytes(n), addr(n);
  py::array_t<int64_t> fsrc(n), fdst(n), fid(n);
  py::list names, locs;
  for (size_t i = 0; i < n; ++i) {
    const InstrRecord& r = recs[i];
    index.mutable_at(i) = r.index;
    kind.mutable_at(i) = static_cast<int64_t>(r.kind);
    pipe.mutable_at(i) = r.pipe;
    issue.mutable_at(i) = static_cast<int64_t>(r.issue);
    start.mutable_at(i) = static_cast<int64_t>(r.start);
    end.mutable_at(i) = static_cast<int64_t>(r.end);
    bytes.mutable_at(i) = static_cast<int64_t>(r.bytes);
    addr.mutable_at(i) = r.addr;
    fsrc.mutable_at(i) = r.flag_src;
    fdst.mutable_at(i) = r.flag_dst;
    fid.mutable_at(i) = r.flag_id;
    names.append(r.name);
    locs.append(r.loc);
  }
  py::dict d;
  d["index"] = index; d["kind"] = kind; d["pipe"] = pipe; d["issue"] = issue;
  d["start"] = start; d["end"] = end; d["bytes"] = bytes; d["addr"] = addr;
  d["flag_src"] = fsrc; d["flag_dst"] = fdst; d["flag_id"] = fid;
  d["name"] = names; d["loc"] = locs;
  return d;
}

py::dict block_to_dict(const BlockResult& r, bool record) {
  py::dict d;
  d["block"] = r.block;
  d["cycles"] = r.stats.total_cycles;
  d["instructions"] = r.stats.instructions;
  d["pipe_busy"] = std::vector<uint64_t>(r.stats.pipe_busy.begin(), r.stats.pipe_busy.end());
  py::list hazards;
  for (const Hazard& h : r.hazards) hazards.append(h.describe());
  d["hazards"] = hazards;
  d["hazard_count"] = r.hazard_count;
  d["records"] = record ? py::object(records_to_columns(r.records)) : py::none();
  return d;
}

py::list run_kernel(const std::string& path, const std::vector<std::pair<py::array, int>>& tensors,
                    const std::vector<int64_t>& scalars, const py::dict& platform,
                    const std::string& kernel_name, int64_t block_num, bool record,
                    bool hazards_fatal) {
  Platform p = platform_from_dict(platform);
  std::vector<pypto_tensor> descs;
  for (const auto& [array, dtype] : tensors) descs.push_back(describe(array, dtype));
  KernelEntry entry = load_kernel(path);
  LaunchOptions o{kernel_name, block_num, record, hazards_fatal};
  std::vector<BlockResult> results;
  {
    py::gil_scoped_release release;  // kernels never call back into Python
    results = launch(entry, descs, scalars, p, o);
  }
  py::list out;
  for (const auto& r : results) out.append(block_to_dict(r, record));
  return out;
}

}  // namespace

void bind_runtime(py::module_& m) {
  m.def("load_kernel", [](const std::string& path) { load_kernel(path); }, py::arg("path"),
        "Loads a kernel .so and checks it exports kernel_entry.");
  m.def("run_kernel", &run_kernel, py::arg("path"), py::arg("tensors"), py::arg("scalars"),
        py::arg("platform"), py::arg("kernel_name") = "kernel", py::arg("block_num") = 1,
        py::arg("record") = false, py::arg("hazards_fatal") = true,
        "Runs kernel_entry once per block on simulated cores; returns one dict per block.");
}

}  // namespace pypto
