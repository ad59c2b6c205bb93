// Platform tables, read-only, as plain dicts (pypto.platforms wraps them in a dataclass).
#include <pybind11/stl.h>

#include "runtime/bind.hpp"
#include "simulator/errors.hpp"

namespace py = pybind11;

namespace pypto {
namespace {

py::dict platform_to_dict(const Platform& p) {
  py::dict d;
  d["name"] = p.name;
  d["device"] = p.device;
#define PYPTO_TO_DICT(key, member) d[#key] = p.member;
  PYPTO_PLATFORM_FIELDS(PYPTO_TO_DICT)
#undef PYPTO_TO_DICT
  return d;
}

}  // namespace

Platform platform_from_dict(const py::dict& d) {
  Platform p = platform_by_name(d["name"].cast<std::string>());
  for (auto item : d) {
    std::string key = item.first.cast<std::string>();
    if (key == "name" || key == "device") continue;
    bool known = false;
#define PYPTO_FROM_DICT(field, member)                                      \
  if (key == #field) {                                                      \
    p.member = item.second.cast<decltype(p.member)>();                      \
    known = true;                                                           \
  }
    PYPTO_PLATFORM_FIELDS(PYPTO_FROM_DICT)
#undef PYPTO_FROM_DICT
    if (!known) throw SimError(ErrorKind::kInvalidArgument, "unknown platform field '" + key + "'");
  }
  return p;
}

void bind_platform(py::module_& m) {
  py::class_<Platform>(m, "Platform", "A resolved platform table, built once and passed to runs.")
      .def_readonly("name", &Platform::name);
  m.def("make_platform", &platform_from_dict, py::arg("table"),
        "A native platform from {'name': base table, <field>: value, ...}.");
  m.def("platform_names", &platform_names, "Names accepted by platform_table().");
  m.def("platform_table", [](const std::string& name) { return platform_to_dict(platform_by_name(name)); },
        py::arg("name"), "The hardware table of one platform as a dict.");
}

}  // namespace pypto
