#include "runtime/core/launch.hpp"

#include <memory>

#include "runtime/core/context.hpp"
#include "simulator/errors.hpp"

namespace pypto {
namespace {

std::string hazard_message(const std::string& kernel, const BlockResult& r) {
  std::string msg = "kernel '" + kernel + "' (block " + std::to_string(r.block) + "): " +
                    std::to_string(r.hazard_count) + " race(s) found by the hazard checker:";
  for (const Hazard& h : r.hazards) msg += "\n  " + h.describe();
  if (r.hazard_count > r.hazards.size()) msg += "\n  ...";
  return msg + "\n  add set_flag/wait_flag between the two pipes";
}

}  // namespace

BlockResult run_on_core(KernelEntry entry, std::vector<int64_t>& args, const Platform& platform,
                        const LaunchOptions& o, int64_t block, std::vector<AtomicWrite>* atomic_log) {
  auto core = std::make_unique<CoreContext>(platform, block, o.block_num, o.record);
  core->atomic_log = atomic_log;
  core->model.gate_gm_writes(o.write_gates);
  {
    CoreBinding bind(core.get());
    try {
      entry(args.data());
      core->model.finish();
    } catch (const SimError& e) {
      throw SimError(e.kind(), "kernel '" + o.kernel_name + "' (block " + std::to_string(block) +
                                   "): " + e.what());
    }
  }
  BlockResult r;
  r.block = block;
  r.stats = core->model.stats();
  r.records = core->model.records();
  r.hazards = core->model.hazards().found();
  r.hazard_count = core->model.hazards().count();
  if (o.hazards_fatal && r.hazard_count > 0) throw SimError(ErrorKind::kHazard, hazard_message(o.kernel_name, r));
  return r;
}

std::vector<int64_t> abi_args(std::vector<pypto_tensor>& descs, const std::vector<int64_t>& scalars) {
  std::vector<int64_t> args;
  args.reserve(descs.size() + scalars.size());
  for (auto& d : descs) args.push_back(static_cast<int64_t>(reinterpret_cast<intptr_t>(&d)));
  args.insert(args.end(), scalars.begin(), scalars.end());
  return args;
}

std::vector<BlockResult> launch(KernelEntry entry, const std::vector<pypto_tensor>& tensors,
                                const std::vector<int64_t>& scalars, const Platform& platform,
                                const LaunchOptions& o) {
  if (o.block_num < 1) throw SimError(ErrorKind::kInvalidArgument, "block_num must be >= 1");
  std::vector<pypto_tensor> descs = tensors;  // the kernel may keep pointers into these
  const std::vector<int64_t> args = abi_args(descs, scalars);
  std::vector<BlockResult> results;
  for (int64_t b = 0; b < o.block_num; ++b) {
    std::vector<int64_t> block_args = args;  // a kernel may scribble on its argument array
    results.push_back(run_on_core(entry, block_args, platform, o, b, nullptr));
  }
  return results;
}

}  // namespace pypto
