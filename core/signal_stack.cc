#include "core/signal_stack.h"

#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/enforce.h"

namespace halfcaf {

void UseAlternateSignalStack() {
  thread_local bool installed = false;
  if (installed) return;
  // Room for the largest signal frame (the XSAVE area with AVX-512 and AMX state is ~11 KB) and
  // the handler. Kept for the thread's life: the kernel may switch to it at any time.
  const size_t bytes = std::max<size_t>(static_cast<size_t>(SIGSTKSZ) * 4, size_t{256} << 10);
  char* stack = new char[bytes];
  stack_t ss;
  std::memset(&ss, 0, sizeof(ss));
  ss.ss_sp = stack;
  ss.ss_size = bytes;
  if (sigaltstack(&ss, nullptr) != 0) {
    const int err = errno;
    delete[] stack;
    HALFCAF_THROW("sigaltstack failed: ", std::strerror(err));
  }
  installed = true;
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
