// Ctrl-C during a native run. A run in progress holds an InterruptScope; the simulator's SIGINT
// handler raises interrupt_flag() while any run is in progress, and core models check the flag
// as instructions issue and stop the run with SimError(kInterrupted). Outside runs the handler
// hands the signal on to the one it found (Python's), so Python sees Ctrl-C as it always does.
// Defined once in libpypto_sim, so the bindings and the simulator see the same state.
#pragma once
#include <atomic>
#include <cstdint>

namespace pypto {

std::atomic<bool>& interrupt_flag();

// Instructions one core issues in a run before it makes sure the simulator's handler is the one
// installed (arm_interrupts). A shorter run ends sooner than a person can press Ctrl-C and
// gets no system call; a Ctrl-C during it still reaches Python, which raises when it returns.
constexpr uint64_t kArmAfterInstructions = 4096;

// Puts the simulator's SIGINT handler in front of whatever is installed (a handler set since,
// e.g. by signal.signal, is found and chained the same way). At most one query of SIGINT's
// handler per run; nothing outside an InterruptScope.
void arm_interrupts();

// A native run in progress, from its start to its end (on the run's thread, the GIL released).
class InterruptScope {
 public:
  InterruptScope();
  ~InterruptScope();
  InterruptScope(const InterruptScope&) = delete;
  InterruptScope& operator=(const InterruptScope&) = delete;
};

}  // namespace pypto
