#include "simulator/interrupt.hpp"

#include <signal.h>

#include <csignal>

namespace pypto {
namespace {

std::atomic<int> g_runs{0};        // runs in progress, on any thread
std::atomic<bool> g_armed{false};  // the handler was checked since the latest run began
struct sigaction g_outer {};       // what SIGINT did before on_sigint

void on_sigint(int sig, siginfo_t* info, void* context) {
  if (g_runs.load(std::memory_order_relaxed) > 0) {
    interrupt_flag().store(true);
  } else if ((g_outer.sa_flags & SA_SIGINFO) != 0) {
    g_outer.sa_sigaction(sig, info, context);
  } else if (g_outer.sa_handler == SIG_DFL) {
    std::signal(sig, SIG_DFL);  // what the default does: the signal, raised again, ends the process
    std::raise(sig);
  } else if (g_outer.sa_handler != SIG_IGN) {
    g_outer.sa_handler(sig);
  }
}

}  // namespace

std::atomic<bool>& interrupt_flag() {
  static std::atomic<bool> flag{false};
  return flag;
}

void arm_interrupts() {
  if (g_runs.load() == 0 || g_armed.exchange(true)) return;
  struct sigaction now {};
  if (sigaction(SIGINT, nullptr, &now) != 0) return;
  if ((now.sa_flags & SA_SIGINFO) != 0 && now.sa_sigaction == &on_sigint) return;  // ours still
  g_outer = now;
  struct sigaction sa {};
  sa.sa_sigaction = &on_sigint;
  sa.sa_flags = SA_SIGINFO | (now.sa_flags & (SA_ONSTACK | SA_RESTART));
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
}

InterruptScope::InterruptScope() {
  interrupt_flag().store(false);
  g_armed.store(false);  // a handler may have been set since the last run: check it again
  g_runs.fetch_add(1);
}

InterruptScope::~InterruptScope() {
  g_runs.fetch_sub(1);
  interrupt_flag().store(false);
}

}  // namespace pypto
