// Platform tables, read-only: as plain dicts (pypto.platforms wraps them in a dataclass) and as
// the bound Platform, whose attributes are the C++ field list (PYPTO_PLATFORM_FIELDS).
#include <pybind11/stl.h>

#include <iomanip>
#include <sstream>
#include <type_traits>
#include <utility>

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
  std::vector<std::string> aic;
  for (int m = 0; m < PYPTO_NUM_MEM; ++m)
    if (hw::on_core(true, m)) aic.emplace_back(hw::kMemNames[m]);
  d["aic_spaces"] = aic;
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

// The values an override of a platform field may take: each range stated once, here. Python's
// with_overrides reads them (platform_field_rule) to name a bad value before anything runs, and
// make_platform refuses a changed field outside them. They keep the simulator exact: it
// allocates each on-chip space for real (capacities up to 1 GiB), counts cores and events in
// small tables, and converts costs (cycles, bytes / bandwidth) to 64-bit cycle counts, which
// cannot wrap while per-op costs stay below ~1e11 cycles (assumption: runs of < 1e7
// instructions). The encodings' capacities are hardware.hpp's.
struct FieldRule {
  bool integer;
  double lo, hi;
};

FieldRule field_rule(const std::string& key, bool integer) {
  constexpr double kBytes = double(int64_t{1} << 30);
  if (key == "event_ids" || key == "cross_flag_ids") return {true, 1, hw::kMaxEventIds};
  if (key == "l2_ways") return {true, 1, hw::kMaxL2Ways};
  if (key == "aic_cores" || key == "aiv_cores") return {true, 1, 4096};
  if (key == "vec_mat_routes" || key == "cross_sync_holds_issue" ||
      key == "gm_transfer_rounds_down")
    return {true, 0, 1};                                           // a rule switched on or off
  if (key == "fixpipe_gm_priced_elem_bytes") return {true, 0, 8};  // 0: the bytes it writes
  if (key == "img2col_priced_elem_bytes") return {true, 0, 8};     // 0: the bytes it moves
  if (key == "alignment_bytes") return {true, 1, 4096};
  if (key == "hbm_efficiency") return {false, 1e-9, 1.0};  // a share of the nominal bandwidth
  if (key == "clock_hz") return {false, 1e3, 1e13};
  if (key.rfind("bw_", 0) == 0) return {false, 1e-2, 1e6};  // bytes per cycle
  if (integer) return {true, 1, kBytes};                    // sizes and counts
  return {false, 1e-9, 1e6};                                // per-op cycle constants
}

// The rule of a PYPTO_PLATFORM_FIELDS field by its name (integer-ness from its C++ type).
FieldRule field_rule(const std::string& key) {
#define PYPTO_RULE(field, member) \
  if (key == #field)              \
    return field_rule(key, std::is_integral_v<decltype(std::declval<Platform&>().member)>);
  PYPTO_PLATFORM_FIELDS(PYPTO_RULE)
#undef PYPTO_RULE
  throw SimError(ErrorKind::kInvalidArgument, "unknown platform field '" + key + "'");
}

// A field's value as its type writes it (an integer field without exponent or fraction).
std::string spelled(double x, bool integer) {
  if (integer) return std::to_string(static_cast<int64_t>(x));
  std::ostringstream out;
  out << std::setprecision(15) << x;
  return out.str();
}

void check_override(const Platform& p, const std::string& key, double value) {
  const FieldRule r = field_rule(key);
  if (!(value >= r.lo && value <= r.hi)) {
    throw SimError(ErrorKind::kInvalidArgument,
                   "platform " + p.name + ": " + key + " must be in [" + spelled(r.lo, r.integer) +
                       ", " + spelled(r.hi, r.integer) + "], got " + spelled(value, r.integer));
  }
}

// What the models need of the whole table, whatever was overridden.
void check_platform(const Platform& p) {
  if (p.l2_line_bytes <= 0 || (p.l2_line_bytes & (p.l2_line_bytes - 1)) != 0) {
    throw SimError(ErrorKind::kInvalidArgument,
                   "platform " + p.name + ": l2_line_bytes must be a power of two");
  }
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
#define PYPTO_FROM_DICT(field, member)                                         \
  if (key == #field) {                                                         \
    const auto value = item.second.cast<decltype(p.member)>();                 \
    if (value != p.member) check_override(p, key, static_cast<double>(value)); \
    p.member = value;                                                          \
    known = true;                                                              \
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
  m.def(
      "platform_field_rule",
      [](const std::string& key) {
        const FieldRule r = field_rule(key);
        return std::make_tuple(r.integer, r.lo, r.hi);
      },
      py::arg("key"),
      "(integer field, lowest, highest): the values an override of platform field `key` may "
      "take.");
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
