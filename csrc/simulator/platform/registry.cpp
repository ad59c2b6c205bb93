// Name -> table lookup. The device names run on their matching simulator.
#include <map>

#include "simulator/errors.hpp"
#include "simulator/platform/platform.hpp"

namespace pypto {
namespace {

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace

const std::vector<std::string>& platform_names() {
  static const std::vector<std::string> names = {"a2a3sim", "a5sim", "a2a3", "a5"};
  return names;
}

const std::vector<std::string>& cost_profile_names() {
  static const std::vector<std::string> names = {"device", "pto-isa"};
  return names;
}

const Platform& platform_by_name(const std::string& name) {
  static const std::map<std::string, Platform> tables = {{"a2a3sim", make_a2a3sim()},
                                                         {"a5sim", make_a5sim()},
                                                         {"a2a3", make_a2a3sim()},
                                                         {"a5", make_a5sim()}};
  auto it = tables.find(name);
  if (it == tables.end()) {
    throw SimError(ErrorKind::kInvalidArgument,
                   "unknown platform '" + name + "'; valid platforms: " + joined(platform_names()));
  }
  return it->second;
}

Platform platform_with_profile(const std::string& name, const std::string& profile) {
  const Platform& base = platform_by_name(name);
  if (profile == "device") return base;
  if (profile != "pto-isa") {
    throw SimError(
        ErrorKind::kInvalidArgument,
        "unknown cost profile '" + profile + "'; valid profiles: " + joined(cost_profile_names()));
  }
  if (base.device != "a2a3") {
    throw SimError(ErrorKind::kInvalidArgument,
                   "cost profile 'pto-isa' reproduces pto-isa's a2a3 cost model; platform '" +
                       name + "' is " + base.device);
  }
  return apply_pto_isa_profile(base);
}

}  // namespace pypto
