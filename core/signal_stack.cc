#include "core/signal_stack.h"

#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

#include "core/enforce.h"

namespace halfcaf {

namespace {

// A thread's alternate stack, from its installation to the thread's end. At the end the stack the
// thread had before (or none) comes back before the memory goes: the kernel must not keep a freed
// stack, and sanitizer runtimes unmap the stack they gave the thread when it exits.
struct ThreadSignalStack {
  std::unique_ptr<char[]> memory;
  stack_t previous{};
  ~ThreadSignalStack() {
    // `previous` as sigaltstack reported it: its SS_DISABLE flag, where the thread had none,
    // disables the alternate stack again.
    if (memory) sigaltstack(&previous, nullptr);
  }
};

}  // namespace

void UseAlternateSignalStack() {
  thread_local ThreadSignalStack current;
  if (current.memory) return;
  // Room for the largest signal frame (the XSAVE area with AVX-512 and AMX state is ~11 KB) and
  // the handler.
  const size_t bytes = std::max<size_t>(static_cast<size_t>(SIGSTKSZ) * 4, size_t{256} << 10);
  std::unique_ptr<char[]> memory(new char[bytes]);
  stack_t ss{};
  ss.ss_sp = memory.get();
  ss.ss_size = bytes;
  stack_t previous{};
  if (sigaltstack(&ss, &previous) != 0) {
    HALFCAF_THROW("sigaltstack failed: ", std::strerror(errno));
  }
  current.previous = previous;
  current.memory = std::move(memory);
}

void HandleSignalOnOwnStack(int sig, void (*handler)(int)) {
  UseAlternateSignalStack();
  struct sigaction sa;
  std::memset(&sa, 0, sizeof(sa));
  sa.sa_handler = handler;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART | SA_ONSTACK;
  if (sigaction(sig, &sa, nullptr) != 0) {
    HALFCAF_THROW("sigaction(", sig, ") failed: ", std::strerror(errno));
  }
}

}  // namespace halfcaf
