// Ctrl-C during a native run: the binding's SIGINT handler raises this flag; core models check
// it as instructions issue and stop the run with SimError(kInterrupted).
#pragma once
#include <atomic>

namespace pypto {

inline std::atomic<bool>& interrupt_flag() {
  static std::atomic<bool> flag{false};
  return flag;
}

}  // namespace pypto
