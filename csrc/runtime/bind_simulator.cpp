// The core model alone, for cycle-exact unit tests: instructions are described directly
// (pipe, cost, accesses) instead of coming from a kernel.
#include <pybind11/stl.h>

#include <memory>

#include "runtime/bind.hpp"
#include "simulator/core_model.hpp"

namespace py = pybind11;

namespace pypto {
namespace {

// Interned names: records keep const char* to static storage.
const char* intern(const std::string& s) {
  static std::vector<std::unique_ptr<std::string>> pool;
  for (const auto& p : pool) if (*p == s) return p->c_str();
  pool.push_back(std::make_unique<std::string>(s));
  return pool.back()->c_str();
}

struct ModelHarness {
  ModelHarness(const Platform& platform, bool record) : platform(platform), model(this->platform, record) {}
  Platform platform;
  CoreModel model;
};

using Range = std::tuple<int, int64_t, int64_t>;  // (space, base, bytes)

Instr sync_instr(InstrKind kind, int pipe, const char* name, int src, int dst, int id, uint64_t cost) {
  Instr in;
  in.kind = kind;
  in.pipe = pipe;
  in.name = name;
  in.flag_src = src;
  in.flag_dst = dst;
  in.flag_id = id;
  in.cost = cost;
  return in;
}

void op(ModelHarness& h, int pipe, uint64_t cost, const std::string& name,
        const std::vector<Range>& reads, const std::vector<Range>& writes, const std::string& loc) {
  Instr in;
  in.pipe = pipe;
  in.cost = cost;
  in.name = intern(name);
  in.loc = intern(loc);
  for (const auto& [space, base, bytes] : reads) in.accesses.add({space, base, 1, bytes, bytes, false});
  for (const auto& [space, base, bytes] : writes) in.accesses.add({space, base, 1, bytes, bytes, true});
  h.model.issue(std::move(in));
}

py::list records(const ModelHarness& h) {
  py::list out;
  for (const InstrRecord& r : h.model.records()) {
    py::dict d;
    d["index"] = r.index; d["name"] = r.name; d["pipe"] = pipe_name(r.pipe);
    d["issue"] = r.issue; d["start"] = r.start; d["end"] = r.end;
    out.append(d);
  }
  return out;
}

}  // namespace

void bind_simulator(py::module_& m) {
  py::class_<ModelHarness>(m, "CoreModel")
      .def(py::init<const Platform&, bool>(), py::arg("platform"), py::arg("record") = true)
      .def("op", &op, py::arg("pipe"), py::arg("cost"), py::arg("name") = "OP",
           py::arg("reads") = std::vector<Range>{}, py::arg("writes") = std::vector<Range>{},
           py::arg("loc") = "")
      .def("set_flag", [](ModelHarness& h, int src, int dst, int id) {
        h.model.issue(sync_instr(InstrKind::kSetFlag, src, "SET_FLAG", src, dst, id, 1));
      })
      .def("wait_flag", [](ModelHarness& h, int src, int dst, int id) {
        h.model.issue(sync_instr(InstrKind::kWaitFlag, dst, "WAIT_FLAG", src, dst, id, 1));
      })
      .def("barrier", [](ModelHarness& h, int pipe) {
        h.model.issue(sync_instr(InstrKind::kBarrier, pipe, "PIPE_BARRIER", pipe, pipe, 0, 1));
      })
      .def("finish", [](ModelHarness& h) { h.model.finish(); })
      .def_property_readonly("records", &records)
      .def_property_readonly("cycles", [](const ModelHarness& h) { return h.model.stats().total_cycles; })
      .def_property_readonly("pipe_busy", [](const ModelHarness& h) {
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
