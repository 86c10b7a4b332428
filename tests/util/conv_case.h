// The geometry of one 2-D convolution test case (shapes of X, W and Y in NCHW or NHWC, the output
// size, flat indices), shared by the convolution tests of every engine.
#pragma once

#include <cstdint>
#include <vector>

namespace halfcaf {
namespace testing {

struct ConvShape {
  int64_t N, C, H, W, M, kh, kw;
  int64_t sh = 1, sw = 1, dh = 1, dw = 1;
  int64_t pt = 0, pl = 0, pb = 0, pr = 0;
  int64_t group = 1;
  bool nhwc = false;
  bool bias = true;

  int64_t OutH() const { return (H + pt + pb - (dh * (kh - 1) + 1)) / sh + 1; }
  int64_t OutW() const { return (W + pl + pr - (dw * (kw - 1) + 1)) / sw + 1; }
  std::vector<int64_t> XDims() const {
    return nhwc ? std::vector<int64_t>{N, H, W, C} : std::vector<int64_t>{N, C, H, W};
  }
  std::vector<int64_t> WDims() const {
    return nhwc ? std::vector<int64_t>{M, kh, kw, C / group}
                : std::vector<int64_t>{M, C / group, kh, kw};
  }
  std::vector<int64_t> YDims() const {
    return nhwc ? std::vector<int64_t>{N, OutH(), OutW(), M}
                : std::vector<int64_t>{N, M, OutH(), OutW()};
  }
};

}  // namespace testing
}  // namespace halfcaf
