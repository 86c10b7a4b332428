// Waiting for child processes with a deadline, so that no multi-process test can hang: what is
// still running at the deadline is killed (SIGKILL) and reported as such.
#pragma once

#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <thread>
#include <vector>

namespace halfcaf {
namespace testing {

struct ExitStatus {
  int exit_code = -1;  // -1: killed at the deadline; 128+N: died of signal N
  double seconds = 0;  // from `start` to the exit (the deadline when killed)
};

inline std::vector<ExitStatus> WaitAllBounded(std::vector<pid_t> pids, double deadline_s,
                                              std::chrono::steady_clock::time_point start) {
  using Clock = std::chrono::steady_clock;
  std::vector<ExitStatus> out(pids.size());
  size_t left = pids.size();
  while (left > 0) {
    for (size_t k = 0; k < pids.size(); ++k) {
      int status = 0;
      if (pids[k] > 0 && waitpid(pids[k], &status, WNOHANG) == pids[k]) {
        out[k].exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        out[k].seconds = std::chrono::duration<double>(Clock::now() - start).count();
        pids[k] = 0;
        --left;
      }
    }
    if (left > 0 && std::chrono::duration<double>(Clock::now() - start).count() > deadline_s) {
      for (size_t k = 0; k < pids.size(); ++k) {
        if (pids[k] > 0) {
          kill(pids[k], SIGKILL);
          waitpid(pids[k], nullptr, 0);
          out[k].seconds = deadline_s;
        }
      }
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return out;
}

}  // namespace testing
}  // namespace halfcaf
