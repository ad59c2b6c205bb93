#include "chip/core/launch.hpp"

namespace pypto {

std::vector<int64_t> abi_args(std::vector<pypto_tensor>& descs,
                              const std::vector<int64_t>& scalars) {
  std::vector<int64_t> args;
  abi_args(descs, scalars, args);
  return args;
}

void abi_args(std::vector<pypto_tensor>& descs, const std::vector<int64_t>& scalars,
              std::vector<int64_t>& args) {
  args.clear();
  args.reserve(descs.size() + scalars.size());
  for (auto& d : descs) args.push_back(static_cast<int64_t>(reinterpret_cast<intptr_t>(&d)));
  args.insert(args.end(), scalars.begin(), scalars.end());
}

}  // namespace pypto
