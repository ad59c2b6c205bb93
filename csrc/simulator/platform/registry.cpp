// Name -> table lookup. The device names run on their matching simulator.
#include <map>

#include "simulator/errors.hpp"
#include "simulator/platform/platform.hpp"

namespace pypto {

const std::vector<std::string>& platform_names() {
  static const std::vector<std::string> names = {"a2a3sim", "a5sim", "a2a3", "a5"};
  return names;
}

const Platform& platform_by_name(const std::string& name) {
  static const std::map<std::string, Platform> tables = {
      {"a2a3sim", make_a2a3sim()}, {"a5sim", make_a5sim()},
      {"a2a3", make_a2a3sim()},    {"a5", make_a5sim()}};
  auto it = tables.find(name);
  if (it == tables.end()) {
    std::string valid;
    for (const auto& n : platform_names()) valid += (valid.empty() ? "" : ", ") + n;
    throw SimError(ErrorKind::kInvalidArgument,
                   "unknown platform '" + name + "'; valid platforms: " + valid);
  }
  return it->second;
}

}  // namespace pypto
