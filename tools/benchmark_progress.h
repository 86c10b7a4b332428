// benchmark's progress line on stderr: which configuration of the sweep runs ("[3/6]"), its phase
// (warm-up, timing, per-op), the last iteration's time, the rate and the time left in the phase.
// On a terminal it is updated in place; elsewhere the first line of each phase is written, and
// then one line a minute while the phase lasts (logs stay short).
#pragma once

#include <unistd.h>

#include <chrono>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <string>

#include "tools/progress_bar.h"

namespace halfcaf {

class Progress {
 public:
  Progress() : tty_(isatty(STDERR_FILENO)) {}
  // The sweep has `n` configurations; the next Show belongs to the first one.
  void StartSweep(int n) {
    configs_ = n;
    config_ = 0;
  }
  // The following Shows belong to the next configuration.
  void NextConfig() { ++config_; }

  // Iteration `i` of `n` of `phase` starts; `last_ms` is the previous iteration's time (0: none).
  void Show(const std::string& what, const std::string& phase, int i, int n, double last_ms) {
    const auto now = std::chrono::steady_clock::now();
    const bool new_phase = phase != last_phase_ || what != last_what_;
    if (new_phase) {
      phase_start_ = now;
      last_plain_ = now;
    }
    last_phase_ = phase;
    last_what_ = what;
    const std::string line = Line(what, phase, i, n, last_ms, now);
    if (tty_) {
      std::cerr << "\r" << line << std::string(12, ' ') << std::flush;
      shown_ = true;
    } else if (new_phase) {
      std::cerr << Prefix() << what << "  " << phase << " (" << n << " iterations)" << std::endl;
    } else if (now - last_plain_ >= std::chrono::seconds(60)) {
      std::cerr << line << std::endl;
      last_plain_ = now;
    }
  }
  void Clear() {
    if (shown_) std::cerr << "\r" << std::string(110, ' ') << "\r" << std::flush;
    shown_ = false;
  }

 private:
  std::string Prefix() const {
    if (configs_ <= 1 || config_ < 1) return "benchmark: ";
    return "benchmark [" + std::to_string(config_) + "/" + std::to_string(configs_) + "]: ";
  }

  std::string Line(const std::string& what, const std::string& phase, int i, int n,
                   double last_ms, std::chrono::steady_clock::time_point now) const {
    std::ostringstream line;
    line << Prefix() << what << "  " << phase << " " << i << "/" << n;
    if (last_ms > 0) line << "  " << std::fixed << std::setprecision(1) << last_ms << " ms";
    // Iterations i-1 are done since the phase started: their mean time gives the rest's.
    const double secs = std::chrono::duration<double>(now - phase_start_).count();
    if (i > 1 && secs > 0) {
      const double per_it = secs / (i - 1);
      line << "  " << std::setprecision(2) << 1.0 / per_it << " it/s  ETA "
           << ProgressBar::Duration(per_it * (n - i + 1));
    }
    return line.str();
  }

  bool tty_;
  bool shown_ = false;
  int configs_ = 0, config_ = 0;
  std::string last_phase_, last_what_;
  std::chrono::steady_clock::time_point phase_start_, last_plain_;
};

}  // namespace halfcaf
