// benchmark --max_batch: the search for the largest batch that fits.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>

namespace halfcaf {
namespace bench {

// The largest batch for which `fits` holds: doubling from `start` until one does not fit (or
// halving until one does), then bisecting. 0: not even a batch of 1 fits. Capped at 2^20.
inline int64_t LargestFitting(int64_t start, const std::function<bool(int64_t)>& fits) {
  constexpr int64_t kCap = int64_t{1} << 20;
  int64_t good = 0, bad = 0;
  if (fits(start)) {
    good = start;
    while (good < kCap && fits(std::min(good * 2, kCap))) good = std::min(good * 2, kCap);
    if (good == kCap) return good;
    bad = std::min(good * 2, kCap);
  } else {
    bad = start;
    while (bad > 1) {
      const int64_t half = bad / 2;
      if (fits(half)) {
        good = half;
        break;
      }
      bad = half;
    }
    if (good == 0) return 0;
  }
  while (bad - good > 1) {
    const int64_t mid = good + (bad - good) / 2;
    if (fits(mid)) {
      good = mid;
    } else {
      bad = mid;
    }
  }
  return good;
}

}  // namespace bench
}  // namespace halfcaf
