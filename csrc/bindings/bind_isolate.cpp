// Crash reporting for isolated runs (pypto.runtime.isolate): the worker process arms fatal-
// signal handlers that write the last ISA instruction and its kernel line to a pipe before
// the process dies, so the parent can name where a native fault happened.
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "bindings/bind.hpp"
#include "chip/isa/checks.hpp"

namespace py = pybind11;

namespace pypto {
namespace {

int g_report_fd = -1;
// The handler runs on its own stack, so a stack overflow in a kernel is reported too.
alignas(16) char g_alt_stack[1 << 16];

void write_all(const char* s) {
  size_t n = std::strlen(s);
  while (n > 0) {
    const ssize_t k = ::write(g_report_fd, s, n);
    if (k <= 0) return;
    s += k;
    n -= static_cast<size_t>(k);
  }
}

// Async-signal-safe: only write(2) on pointers to string literals. Returning lets the fault
// recur (or abort() re-raise) with the default action, which ends the process.
void on_fatal_signal(int) {
  write_all("\nPYPTO-CRASH\t");
  write_all(isa::last_instruction_op());
  write_all("\t");
  write_all(isa::last_instruction_loc());
  write_all("\n");
}

void on_exit_call() { on_fatal_signal(0); }

void arm_crash_report(int fd) {
  g_report_fd = fd;
  std::atexit(on_exit_call);  // exit() inside a kernel; the worker itself leaves by _exit()
  stack_t ss{};
  ss.ss_sp = g_alt_stack;
  ss.ss_size = sizeof g_alt_stack;
  sigaltstack(&ss, nullptr);
  struct sigaction sa {};
  sa.sa_handler = on_fatal_signal;
  sa.sa_flags = SA_ONSTACK | SA_RESETHAND;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) sigaction(sig, &sa, nullptr);
}

}  // namespace

void bind_isolate(py::module_& m) {
  m.def("arm_crash_report", &arm_crash_report, py::arg("fd"),
        "In an isolated run's worker: on a fatal signal, write the last ISA instruction and "
        "its kernel line to fd, then die with the signal.");
  m.def(
      "last_instruction",
      []() { return py::make_tuple(isa::last_instruction_op(), isa::last_instruction_loc()); },
      "The ISA call most recently executed and its kernel line (the crash breadcrumb).");
}

}  // namespace pypto
