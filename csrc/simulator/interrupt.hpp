// Ctrl-C during a native run: the binding's SIGINT handler raises this flag; core models check
// it as instructions issue and stop the run with SimError(kInterrupted). Defined once in
// libpypto_sim, so the bindings and the simulator see the same flag.
#pragma once
#include <atomic>

namespace pypto {

std::atomic<bool>& interrupt_flag();

}  // namespace pypto
