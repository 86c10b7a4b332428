// benchmark's progress line on stderr: updated in place on a terminal; elsewhere only the first
// line of each phase is written (logs stay short).
#pragma once

#include <unistd.h>

#include <iomanip>
#include <iostream>
#include <sstream>
#include <string>

namespace halfcaf {

class Progress {
 public:
  Progress() : tty_(isatty(STDERR_FILENO)) {}
  // Updates in place on a terminal; elsewhere only the first line of each phase is written.
  void Show(const std::string& what, const std::string& phase, int i, int n, double last_ms) {
    std::ostringstream line;
    line << "benchmark: " << what << "  " << phase << " " << i << "/" << n;
    if (last_ms > 0) line << "  " << std::fixed << std::setprecision(1) << last_ms << " ms";
    if (tty_) {
      std::cerr << "\r" << line.str() << std::string(12, ' ') << std::flush;
      shown_ = true;
    } else if (phase != last_phase_ || what != last_what_) {
      std::cerr << "benchmark: " << what << "  " << phase << " (" << n << " iterations)"
                << std::endl;
    }
    last_phase_ = phase;
    last_what_ = what;
  }
  void Clear() {
    if (shown_) std::cerr << "\r" << std::string(90, ' ') << "\r" << std::flush;
    shown_ = false;
  }

 private:
  bool tty_;
  bool shown_ = false;
  std::string last_phase_, last_what_;
};

}  // namespace halfcaf
