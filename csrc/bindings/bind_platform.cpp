// Platform tables, read-only: as plain dicts (pypto.platforms wraps them in a dataclass) and as
// the bound Platform, whose attributes are the C++ field list (PYPTO_PLATFORM_FIELDS).
#include <pybind11/stl.h>

#include "bindings/bind.hpp"
#include "chip/isa/cube.hpp"
#include "chip/isa/elem.hpp"
#include "chip/isa/vec_math.hpp"
#include "simulator/errors.hpp"
#include "simulator/hardware.hpp"

namespace py = pybind11;

namespace pypto {
namespace {

py::dict platform_to_dict(const Platform& p) {
  py::dict d;
  d["name"] = p.name;
  d["device"] = p.device;
  d["cost_profile"] = p.cost_profile;
#define PYPTO_TO_DICT(key, member) d[#key] = p.member;
  PYPTO_PLATFORM_FIELDS(PYPTO_TO_DICT)
#undef PYPTO_TO_DICT
  return d;
}

// The dtypes an ISA check accepts, by the dtype names of hw::kDTypes.
template <class Accepts>
std::vector<std::string> accepted(Accepts ok) {
  std::vector<std::string> names;
  for (const hw::DType& t : hw::kDTypes)
    if (ok(t.code)) names.push_back(t.name);
  return names;
}

// Which dtypes each op family of the ISA accepts, asked of the ISA's own checks, so the
// compiler's check before a run (pypto.hardware.ISA_DTYPES) is the run's, not a copy of it.
py::dict isa_dtypes() {
  const std::pair<int, const char*> binary_ops[] = {{PYPTO_ADD, "add"}, {PYPTO_SUB, "sub"},
                                                    {PYPTO_MUL, "mul"}, {PYPTO_DIV, "div"},
                                                    {PYPTO_MAX, "max"}, {PYPTO_MIN, "min"}};
  const std::pair<int, const char*> unary_ops[] = {
      {PYPTO_EXP, "exp"},   {PYPTO_LOG, "log"}, {PYPTO_SQRT, "sqrt"}, {PYPTO_RECIP, "recip"},
      {PYPTO_RELU, "relu"}, {PYPTO_NEG, "neg"}, {PYPTO_ABS, "abs"},   {PYPTO_COPY, "copy"}};
  py::dict binary, unary, d;
  for (const auto& [op, name] : binary_ops)
    binary[name] = accepted([op = op](int dt) { return vm::binary_supported(op, dt); });
  for (const auto& [op, name] : unary_ops)
    unary[name] = accepted([op = op](int dt) { return vm::unary_supported(op, dt); });
  d["binary"] = binary;
  d["unary"] = unary;
  d["reduce"] = accepted(vm::reduce_supported);
  d["float_math"] = accepted(isa::is_float_dtype);
  d["cube_inputs"] = accepted(isa::cube_input_supported);
  d["gemv_inputs"] = accepted(isa::gemv_input_supported);
  py::dict acc, out;  // by input dtype, and by accumulator dtype
  for (const hw::DType& t : hw::kDTypes) {
    if (!isa::cube_input_supported(t.code)) continue;
    const int a = isa::cube_acc_dtype(t.code);
    acc[t.name] = accepted([a](int dt) { return dt == a; });
    out[dtype_name(a)] = accepted([a](int dt) { return isa::fixpipe_out_supported(a, dt); });
  }
  d["cube_acc"] = acc;
  d["fixpipe_out"] = out;
  return d;
}

py::dict hardware_facts() {
  py::dict d;
  d["pipes"] = std::vector<std::string>(std::begin(hw::kPipeNames), std::end(hw::kPipeNames));
  d["flag_pipes"] =
      std::vector<std::string>(std::begin(hw::kFlagPipeNames), std::end(hw::kFlagPipeNames));
  d["mem_spaces"] = std::vector<std::string>(std::begin(hw::kMemNames), std::end(hw::kMemNames));
  py::list dtypes;
  for (const hw::DType& t : hw::kDTypes)
    dtypes.append(py::make_tuple(t.code, t.name, t.numpy, t.size));
  d["dtypes"] = dtypes;
  py::list routes;
  for (const hw::Route& r : hw::kRoutes) {
    routes.append(py::make_tuple(hw::kMemNames[r.src], hw::kMemNames[r.dst], hw::kPipeNames[r.pipe],
                                 r.vec_mat, r.windowed));
  }
  d["routes"] = routes;
  d["max_event_ids"] = hw::kMaxEventIds;
  d["max_l2_ways"] = hw::kMaxL2Ways;
  d["isa_dtypes"] = isa_dtypes();
  return d;
}

// Overrides the encodings or the models cannot hold are refused before anything runs.
void check_platform(const Platform& p) {
  auto need = [&](bool ok, const std::string& what) {
    if (!ok) throw SimError(ErrorKind::kInvalidArgument, "platform " + p.name + ": " + what);
  };
  const std::string ids =
      "in [1, " + std::to_string(hw::kMaxEventIds) + "] (the flag encoding's capacity)";
  need(p.event_ids >= 1 && p.event_ids <= hw::kMaxEventIds, "event_ids must be " + ids);
  need(p.cross_flag_ids >= 1 && p.cross_flag_ids <= hw::kMaxEventIds,
       "cross_flag_ids must be " + ids);
  need(p.tpipe_slots >= 1, "tpipe_slots must be at least 1");
  need(p.l2_ways >= 1 && p.l2_ways <= hw::kMaxL2Ways,
       "l2_ways must be in [1, " + std::to_string(hw::kMaxL2Ways) + "]");
  need(p.l2_line_bytes > 0 && (p.l2_line_bytes & (p.l2_line_bytes - 1)) == 0,
       "l2_line_bytes must be a power of two");
  need(p.aic_cores >= 0 && p.aiv_cores >= 0, "core counts must not be negative");
}

}  // namespace

Platform platform_from_dict(const py::dict& d) {
  const std::string profile =
      d.contains("cost_profile") ? d["cost_profile"].cast<std::string>() : std::string("device");
  Platform p = platform_with_profile(d["name"].cast<std::string>(), profile);
  for (auto item : d) {
    std::string key = item.first.cast<std::string>();
    if (key == "name" || key == "device" || key == "cost_profile") continue;
    bool known = false;
#define PYPTO_FROM_DICT(field, member)                 \
  if (key == #field) {                                 \
    p.member = item.second.cast<decltype(p.member)>(); \
    known = true;                                      \
  }
    PYPTO_PLATFORM_FIELDS(PYPTO_FROM_DICT)
#undef PYPTO_FROM_DICT
    if (!known) throw SimError(ErrorKind::kInvalidArgument, "unknown platform field '" + key + "'");
  }
  check_platform(p);
  return p;
}

void bind_platform(py::module_& m) {
  py::class_<Platform> platform(m, "Platform",
                                "A resolved platform table, built once and passed to runs; "
                                "each field of the table a typed read-only attribute.");
  platform.def_readonly("name", &Platform::name)
      .def_readonly("device", &Platform::device)
      .def_readonly("cost_profile", &Platform::cost_profile);
  // Each field of the C++ table, by its own C++ type (int or float in the stub).
#define PYPTO_PROPERTY(key, member) \
  platform.def_property_readonly(#key, [](const Platform& p) { return p.member; });
  PYPTO_PLATFORM_FIELDS(PYPTO_PROPERTY)
#undef PYPTO_PROPERTY
  m.def(
      "make_platform", &platform_from_dict, py::arg("table"),
      "A native platform from {'name': base table, 'cost_profile': profile, <field>: value, ...}.");
  m.def("cost_profile_names", &cost_profile_names, "Cost profiles a table can be read under.");
  m.def("hardware_facts", &hardware_facts,
        "Pipes, flag pipe spellings, memory spaces, dtypes (code, name, numpy name, size), "
        "on-chip routes (src, dst, pipe, only with vec_mat_routes, windowed), the event-id "
        "capacity and the dtypes each ISA op family accepts, as the simulator defines "
        "them.");
  m.def("platform_names", &platform_names, "Names accepted by platform_table().");
  m.def(
      "platform_table",
      [](const std::string& name, const std::string& profile) {
        return platform_to_dict(platform_with_profile(name, profile));
      },
      py::arg("name"), py::arg("cost_profile") = "device",
      "The hardware table of one platform under a cost profile, as a dict.");
}

}  // namespace pypto
