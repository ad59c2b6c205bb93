#include "simulator/fiber.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <new>
#include <vector>

namespace pypto {
namespace {

// 1 MiB of stack per kernel instance (reserved, committed as touched) plus a guard page, so a
// runaway recursion faults instead of overwriting another fiber's stack. Stacks are pooled.
constexpr size_t kStackBytes = size_t{1} << 20;

size_t page_bytes() { return static_cast<size_t>(sysconf(_SC_PAGESIZE)); }

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

}  // namespace

Fiber::Fiber(std::function<void()> body) : body_(std::move(body)), stack_(take_stack()) {
  getcontext(&context_);
  context_.uc_stack.ss_sp = static_cast<char*>(stack_) + page_bytes();
  context_.uc_stack.ss_size = kStackBytes;
  context_.uc_link = nullptr;
  makecontext(&context_, &Fiber::trampoline, 0);
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
  swapcontext(&self->context_, &self->caller_);
}

void Fiber::resume() {
  if (finished_) return;
  started_ = true;
  Fiber* outer = g_running;
  g_running = this;
  swapcontext(&caller_, &context_);
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
  swapcontext(&self->context_, &self->caller_);
  g_running = self;
  if (self->cancelled_) throw FiberCancelled{};
}

}  // namespace pypto
