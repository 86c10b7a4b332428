#include "tools/progress_bar.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iomanip>
#include <iostream>
#include <sstream>

namespace halfcaf {

ProgressBar::ProgressBar(std::string label, int64_t total, std::string unit, bool enabled,
                         double plain_every_s)
    : label_(std::move(label)),
      unit_(std::move(unit)),
      total_(total),
      enabled_(enabled),
      tty_(isatty(STDERR_FILENO)),
      plain_every_s_(plain_every_s),
      start_(Clock::now()),
      last_draw_(start_),
      last_plain_(start_) {}

std::string ProgressBar::Duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const int64_t s = static_cast<int64_t>(std::llround(seconds));
  char buf[32];
  if (s >= 3600) {
    std::snprintf(buf, sizeof(buf), "%lld:%02lld:%02lld", static_cast<long long>(s / 3600),
                  static_cast<long long>(s / 60 % 60), static_cast<long long>(s % 60));
  } else {
    std::snprintf(buf, sizeof(buf), "%lld:%02lld", static_cast<long long>(s / 60),
                  static_cast<long long>(s % 60));
  }
  return buf;
}

std::string ProgressBar::Line(int64_t done, double rate, const std::string& note) const {
  std::ostringstream line;
  line << label_;
  if (total_ > 0) {
    const double frac = std::clamp(static_cast<double>(done) / static_cast<double>(total_), 0.0, 1.0);
    const int width = 20;
    const int filled = static_cast<int>(width * frac);
    line << " [" << std::string(filled, '#') << std::string(width - filled, '.') << "] "
         << std::setw(3) << static_cast<int>(100 * frac) << "%  " << done << "/" << total_;
  } else {
    line << "  " << done;
  }
  if (rate > 0) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), rate >= 100 ? "%.0f" : rate >= 10 ? "%.1f" : "%.2f", rate);
    line << "  " << buf << " " << unit_ << "/s";
    if (total_ > 0 && done < total_) line << "  ETA " << Duration((total_ - done) / rate);
  }
  if (!note.empty()) line << "  " << note;
  return line.str();
}

void ProgressBar::Update(int64_t done, const std::string& note) {
  if (!enabled_) return;
  const Clock::time_point now = Clock::now();
  if (base_ < 0) {
    base_ = done;
    start_ = last_plain_ = now;
  }
  const double seconds = std::chrono::duration<double>(now - start_).count();
  const double rate = seconds > 0 && done > base_ ? (done - base_) / seconds : 0;
  if (tty_) {
    const bool last = total_ > 0 && done >= total_;
    if (drawn_once_ && !last && now - last_draw_ < std::chrono::milliseconds(100)) return;
    const std::string line = Line(done, rate, note);
    std::cerr << "\r" << line;
    if (line.size() < last_width_) std::cerr << std::string(last_width_ - line.size(), ' ');
    std::cerr << std::flush;
    last_width_ = line.size();
    last_draw_ = now;
    shown_ = drawn_once_ = true;
  } else if (std::chrono::duration<double>(now - last_plain_).count() >= plain_every_s_) {
    std::cerr << Line(done, rate, note) << std::endl;
    last_plain_ = now;
  }
}

void ProgressBar::Clear() {
  if (!shown_) return;
  std::cerr << "\r" << std::string(last_width_, ' ') << "\r" << std::flush;
  shown_ = false;
}

}  // namespace halfcaf
