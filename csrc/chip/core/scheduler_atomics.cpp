// Atomic adds between tasks: logged while a kernel runs, applied in simulated completion order
// before any task that depends on them starts (see scheduler.hpp).
#include <algorithm>

#include "chip/core/scheduler_state.hpp"
#include "chip/isa/vec_math.hpp"

namespace pypto::sched {

void apply_atomics(std::vector<PendingAtomics>& v, std::mt19937_64* shuffle) {
  std::stable_sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.end < b.end; });
  if (shuffle != nullptr) std::shuffle(v.begin(), v.end(), *shuffle);
  for (const PendingAtomics& p : v) {
    for (const AtomicWrite& w : p.writes) vm::accumulate(w.dtype, w.dst, w.data.data(), w.n);
  }
}

std::vector<PendingAtomics> take_atomics_for(std::vector<PendingAtomics>& pending, size_t task) {
  std::vector<void*> tensors;
  for (const auto& p : pending) {
    if (p.task != task) continue;
    for (const auto& w : p.writes) tensors.push_back(w.tensor);
  }
  if (tensors.empty()) return {};
  std::vector<PendingAtomics> now, later;
  for (auto& p : pending) {
    bool hit = std::any_of(p.writes.begin(), p.writes.end(), [&](const AtomicWrite& w) {
      return std::find(tensors.begin(), tensors.end(), w.tensor) != tensors.end();
    });
    (hit ? now : later).push_back(std::move(p));
  }
  pending = std::move(later);
  return now;
}

}  // namespace pypto::sched
