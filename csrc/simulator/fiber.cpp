// Fibers switch stacks with _longjmp where they have no assembly for it (see resume()); the
// fortified longjmp refuses to jump to another stack, so fortification is off for this file.
// It must be undone before any header.
#undef _FORTIFY_SOURCE
#include "simulator/fiber.hpp"

#include <setjmp.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <new>
#include <vector>

namespace pypto {
namespace {

// 1 MiB of stack per kernel instance (reserved, committed as touched) plus a guard page, so a
// runaway recursion faults instead of overwriting another fiber's stack. Stacks are pooled.
constexpr size_t kStackBytes = size_t{1} << 20;
constexpr size_t kTopPad = 64;  // see resume(); a multiple of 16 keeps the first frame aligned

// Read once: every fiber's first resume needs it (a system configuration query each time).
size_t page_bytes() {
  static const size_t bytes = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return bytes;
}

thread_local Fiber* g_running = nullptr;
thread_local std::vector<void*> g_stacks;

void* take_stack() {
  if (!g_stacks.empty()) {
    void* s = g_stacks.back();
    g_stacks.pop_back();
    return s;
  }
  const size_t guard = page_bytes();
  void* p = mmap(nullptr, kStackBytes + guard, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  mprotect(p, guard, PROT_NONE);
  return p;
}

void give_stack(void* s) {
  if (g_stacks.size() < 128) {
    g_stacks.push_back(s);
  } else {
    munmap(s, kStackBytes + page_bytes());
  }
}

#if defined(__x86_64__)
// Both switches' first half: the callee-saved registers pushed, the stack pointer stored in
// *rdi (the first argument) and rsi (the second) made the stack. A macro, as a naked
// function's body must be one literal.
#define PYPTO_SAVE_AND_SWAP_STACK \
  "pushq %rbp\n\t"                \
  "pushq %rbx\n\t"                \
  "pushq %r12\n\t"                \
  "pushq %r13\n\t"                \
  "pushq %r14\n\t"                \
  "pushq %r15\n\t"                \
  "movq %rsp, (%rdi)\n\t"         \
  "movq %rsi, %rsp\n\t"

// A switch between two stacks of this thread: the callee-saved registers are pushed on the
// current stack, its stack pointer stored in *save, and the other side's registers popped from
// the stack `load` left by an earlier switch (or start), whose call this one then returns from.
// The ABI leaves every other register to the caller, so that is all a switch must keep: no
// signal mask, no jump buffer, none of glibc's checks at every _longjmp (a walk of the thread's
// cleanup handlers) — a chip simulation switches hundreds of thousands of times per run.
[[gnu::naked, gnu::noinline]] void switch_stack(void** /*save*/, void* /*load*/) {
  asm(PYPTO_SAVE_AND_SWAP_STACK
      "popq %r15\n\t"
      "popq %r14\n\t"
      "popq %r13\n\t"
      "popq %r12\n\t"
      "popq %rbx\n\t"
      "popq %rbp\n\t"
      "ret");
}

// A fiber's first entry: the same save, then `entry` called on the fresh stack whose top is
// `top` (16-byte aligned; `call` pushes the return address, leaving the stack as a function's
// entry expects). `entry` never returns: the fiber leaves by switch_stack to *save, which
// returns from this call.
[[gnu::naked, gnu::noinline]] void start_stack(void** /*save*/, void* /*top*/,
                                               void (* /*entry*/)()) {
  asm(PYPTO_SAVE_AND_SWAP_STACK
      "callq *%rdx\n\t"
      "ud2");
}
#elif defined(__aarch64__)
// The first entry into a fiber: `entry` called on the stack whose top is `top` (16-byte
// aligned). It never returns: the fiber leaves with _longjmp. Two instructions, where
// getcontext/setcontext would save and restore the signal mask with a system call each.
[[noreturn]] void start_on(void* top, void (*entry)()) {
  asm volatile("mov sp, %0\n\tblr %1\n\tbrk #0" : : "r"(top), "r"(entry) : "memory");
  __builtin_unreachable();
}
#endif

}  // namespace

Fiber::Fiber(std::function<void()> body) : body_(std::move(body)), stack_(take_stack()) {
#if !defined(__x86_64__) && !defined(__aarch64__)
  getcontext(&context_);
  context_.uc_stack.ss_sp = static_cast<char*>(stack_) + page_bytes();
  context_.uc_stack.ss_size = kStackBytes;
  context_.uc_link = nullptr;
  makecontext(&context_, &Fiber::trampoline, 0);
#endif
}

Fiber::~Fiber() {
  if (!finished_) cancel();
  give_stack(stack_);
}

Fiber* Fiber::current() { return g_running; }

void Fiber::trampoline() {
  Fiber* self = g_running;
  try {
    self->body_();
  } catch (const FiberCancelled&) {
  } catch (...) {
    self->error_ = std::current_exception();
  }
  self->finished_ = true;
  g_running = nullptr;
#if defined(__x86_64__)
  switch_stack(&self->fiber_sp_, self->caller_sp_);
  __builtin_unreachable();
#else
  _longjmp(self->caller_jump_, 1);
#endif
}

// The zeros above a fiber's first frame: an unwinder walking past the trampoline (a debugger,
// a crash backtrace) reads a null return address there and stops.
char* Fiber::stack_top() const {
  char* top = static_cast<char*>(stack_) + page_bytes() + kStackBytes - kTopPad;
  std::memset(top, 0, kTopPad);
  return top;
}

// On x86-64 every switch is switch_stack (the first one start_stack). Elsewhere the first entry
// is start_on (ucontext where it has no assembly) and every later switch _setjmp/_longjmp:
// unlike swapcontext, they save no signal mask, so a hand-off makes no system call (a tiny
// kernel's run would otherwise pay two per instance).
void Fiber::resume() {
  if (finished_) return;
  Fiber* outer = g_running;
  g_running = this;
#if defined(__x86_64__)
  if (!started_) {
    started_ = true;
    start_stack(&caller_sp_, stack_top(), &Fiber::trampoline);
  } else {
    switch_stack(&caller_sp_, fiber_sp_);
  }
#else
  if (_setjmp(caller_jump_) == 0) {
    if (!started_) {
      started_ = true;
#if defined(__aarch64__)
      start_on(stack_top(), &Fiber::trampoline);
#else
      setcontext(&context_);
#endif
    }
    _longjmp(fiber_jump_, 1);
  }
#endif
  g_running = outer;
}

void Fiber::cancel() {
  if (finished_) return;
  if (!started_) {
    finished_ = true;
    return;
  }
  cancelled_ = true;
  resume();
}

void Fiber::suspend() {
  Fiber* self = g_running;
  if (self == nullptr) return;
  g_running = nullptr;
#if defined(__x86_64__)
  switch_stack(&self->fiber_sp_, self->caller_sp_);
#else
  if (_setjmp(self->fiber_jump_) == 0) _longjmp(self->caller_jump_, 1);
#endif
  g_running = self;
  if (self->cancelled_) throw FiberCancelled{};
}

}  // namespace pypto
