// A kernel instance's own stack, so the chip scheduler can suspend it mid-kernel (before a
// GM transfer that must wait for earlier simulated times, or at a cross-core wait) and run
// another core. Hand-offs are deterministic: only the scheduler resumes fibers.
//
// An exception thrown inside the body is caught at the fiber's base and kept for the caller
// of resume(); a suspended fiber that is never finished is cancelled by resuming it with
// cancel(), which makes its pending suspend() throw FiberCancelled so its stack unwinds.
#pragma once
#include <setjmp.h>
#include <ucontext.h>

#include <cstddef>
#include <exception>
#include <functional>

namespace pypto {

struct FiberCancelled {};

class Fiber {
 public:
  explicit Fiber(std::function<void()> body);
  ~Fiber();
  Fiber(const Fiber&) = delete;
  Fiber& operator=(const Fiber&) = delete;

  // Runs the fiber until it suspends or finishes.
  void resume();
  // Unwinds a suspended fiber (its suspend() throws FiberCancelled).
  void cancel();
  bool finished() const { return finished_; }
  std::exception_ptr error() const { return error_; }

  // From inside a running fiber: back to the resume() that ran it.
  static void suspend();
  // The running fiber, or nullptr on the thread's own stack.
  static Fiber* current();

 private:
  static void trampoline();
  char* stack_top() const;  // where the first frame starts

  std::function<void()> body_;
#if defined(__x86_64__)
  // The stack pointer each side saved when it last switched away (fiber.cpp: switch_stack).
  void* caller_sp_ = nullptr;
  void* fiber_sp_ = nullptr;
#else
#if !defined(__aarch64__)
  ucontext_t context_{};                  // the first entry only, where start_on has no assembly
#endif
  jmp_buf caller_jump_{}, fiber_jump_{};  // every later switch
#endif
  void* stack_ = nullptr;
  bool started_ = false, finished_ = false, cancelled_ = false;
  std::exception_ptr error_;
};

}  // namespace pypto
