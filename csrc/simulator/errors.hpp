// The one exception type the native side throws. Its kind selects the Python class
// (pypto.errors) in bind_errors.cpp; the message already names the instruction and the
// kernel source line where one is known.
#pragma once
#include <stdexcept>
#include <string>

namespace pypto {

enum class ErrorKind {
  kInvalidArgument,  // -> ValueError (bad platform name, bad override)
  kMemorySpace,      // tile outside its space, illegal route
  kOutOfBounds,      // GM window outside its tensor
  kShape,            // operand shapes disagree
  kDType,            // operand dtypes disagree or unsupported
  kFlag,             // bad pipe pair or event id
  kDeadlock,         // a wait that can never be satisfied
  kHazard,           // a race found by the hazard checker
  kLoad,             // kernel could not be loaded
  kLimit,            // max_cycles, the instruction budget or a timeout was exceeded
  kInterrupted,      // Ctrl-C during a run -> KeyboardInterrupt
  kCrossCore,        // misuse of a cross-core pipe or flag (mismatched tile, freeing twice)
  kRace,             // two tasks overlapping in time touch the same GM bytes, one writing
  kInternal,         // a bug in pypto: say so
  kReadOnly,         // a write into an input tensor or read-only memory
  kZeroDivision,     // integer // or % by zero in kernel scalar code
  kHostMemory,       // the simulated cores would need more host memory than is available
  kConfig,           // the platform cannot run the program (no cores of a task's kind)
};

class SimError : public std::runtime_error {
 public:
  SimError(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  ErrorKind kind() const { return kind_; }

 private:
  ErrorKind kind_;
};

}  // namespace pypto
