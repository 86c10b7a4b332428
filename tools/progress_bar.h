// Progress of long work on stderr (training, benchmark sweeps, DB creation, ONNX conversion): on a
// terminal a bar redrawn in place, with the rate and the time left,
//
//   make_mnist_db [##########..........]  51%  30600/60000  12403 images/s  ETA 0:02
//
// and, when stderr is not a terminal (logs, CI), a plain line at most every `plain_every_s`
// seconds, so logs of long runs show it progressing without filling up.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace halfcaf {

class ProgressBar {
 public:
  // `total` units of `unit` ("it", "images", "nodes"); 0 when unknown (no bar, no ETA).
  // `enabled` false: shows nothing (e.g. a process that is not rank 0).
  ProgressBar(std::string label, int64_t total, std::string unit, bool enabled = true,
              double plain_every_s = 60);
  ~ProgressBar() { Clear(); }
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  // `done` units so far; `note` is shown after the ETA ("loss 0.31"). Redraws at most 10 times a
  // second on a terminal (and always at the total). The rate counts from the first Update (so a
  // resumed run's earlier units, and the first unit's start-up, do not skew it).
  void Update(int64_t done, const std::string& note = "");
  // Erases the bar from the terminal (before other output); the next Update draws it again.
  void Clear();
  // Changes the total (a sweep that learns its size late); keeps the rate.
  void set_total(int64_t total) { total_ = total; }

  // The line Update shows for `done` units at `rate` units per second (0: not known yet).
  std::string Line(int64_t done, double rate, const std::string& note) const;
  // "0:07", "1:02:03".
  static std::string Duration(double seconds);

 private:
  using Clock = std::chrono::steady_clock;
  std::string label_, unit_;
  int64_t total_;
  bool enabled_, tty_;
  double plain_every_s_;
  Clock::time_point start_, last_draw_, last_plain_;
  int64_t base_ = -1;  // `done` at the first Update
  bool shown_ = false, drawn_once_ = false;
  size_t last_width_ = 0;
};

}  // namespace halfcaf
