// A 2-D pooling case for the MaxPool / AveragePool tests: shape, window, layout, the operator
// definition, and a naive reference of the forward pass.
#pragma once

#include <algorithm>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "tests/util/op_test_util.h"

namespace halfcaf {
namespace testing {

struct PoolCase {
  int64_t N, C, H, W, kh, kw;
  int64_t sh = 1, sw = 1;
  int64_t pt = 0, pl = 0, pb = 0, pr = 0;
  bool global = false;
  bool nhwc = false;
  int64_t dh = 1, dw = 1;  // dilations

  int64_t KH() const { return global ? H : kh; }
  int64_t KW() const { return global ? W : kw; }
  int64_t OutH() const { return global ? 1 : (H + pt + pb - dh * (kh - 1) - 1) / sh + 1; }
  int64_t OutW() const { return global ? 1 : (W + pl + pr - dw * (kw - 1) - 1) / sw + 1; }
  std::vector<int64_t> XDims() const {
    return nhwc ? std::vector<int64_t>{N, H, W, C} : std::vector<int64_t>{N, C, H, W};
  }
  std::vector<int64_t> YDims() const {
    return nhwc ? std::vector<int64_t>{N, OutH(), OutW(), C}
                : std::vector<int64_t>{N, C, OutH(), OutW()};
  }
  int64_t XIndex(int64_t n, int64_t c, int64_t h, int64_t w) const {
    return nhwc ? ((n * H + h) * W + w) * C + c : ((n * C + c) * H + h) * W + w;
  }
  int64_t YIndex(int64_t n, int64_t c, int64_t h, int64_t w) const {
    return nhwc ? ((n * OutH() + h) * OutW() + w) * C + c : ((n * C + c) * OutH() + h) * OutW() + w;
  }

  OperatorDef Def(const std::string& type) const {
    std::vector<Argument> args{MakeArgument("order", std::string(nhwc ? "NHWC" : "NCHW"))};
    if (global) {
      args.push_back(MakeArgument("global_pooling", 1));
    } else {
      args.push_back(MakeArgument("kernels", std::vector<int64_t>{kh, kw}));
      args.push_back(MakeArgument("strides", std::vector<int64_t>{sh, sw}));
      args.push_back(MakeArgument("pad_t", static_cast<int>(pt)));
      args.push_back(MakeArgument("pad_l", static_cast<int>(pl)));
      args.push_back(MakeArgument("pad_b", static_cast<int>(pb)));
      args.push_back(MakeArgument("pad_r", static_cast<int>(pr)));
      if (dh != 1 || dw != 1) {
        args.push_back(MakeArgument("dilations", std::vector<int64_t>{dh, dw}));
      }
    }
    return MakeOperatorDef(type, "pool", {"X"}, {"Y"}, args);
  }

  // Max or mean (over in-image taps only) of each window.
  std::vector<float> Naive(const Tensor& X, bool max) const {
    const float* x = X.data<float>();
    std::vector<float> y(static_cast<size_t>(N * C * OutH() * OutW()));
    for (int64_t n = 0; n < N; ++n) {
      for (int64_t c = 0; c < C; ++c) {
        for (int64_t oh = 0; oh < OutH(); ++oh) {
          for (int64_t ow = 0; ow < OutW(); ++ow) {
            double acc = max ? -1e30 : 0.0;
            int count = 0;
            for (int64_t i = 0; i < KH(); ++i) {
              for (int64_t j = 0; j < KW(); ++j) {
                const int64_t h = oh * sh - pt + i * dh, w = ow * sw - pl + j * dw;
                if (h < 0 || h >= H || w < 0 || w >= W) continue;
                const double v = x[XIndex(n, c, h, w)];
                acc = max ? std::max(acc, v) : acc + v;
                ++count;
              }
            }
            y[YIndex(n, c, oh, ow)] = static_cast<float>(max ? acc : acc / count);
          }
        }
      }
    }
    return y;
  }
};

// Odd shapes: strides, asymmetric pads, dilation with taps in the padding, global pooling.
inline std::vector<PoolCase> PoolCases() {
  std::vector<PoolCase> cases;
  PoolCase a{2, 3, 7, 9, 3, 3};
  a.sh = a.sw = 2;
  a.pt = a.pl = a.pb = a.pr = 1;
  cases.push_back(a);
  PoolCase asym{2, 4, 7, 9, 3, 2};
  asym.sh = 2, asym.sw = 1;
  asym.pt = 2, asym.pl = 0, asym.pb = 0, asym.pr = 1;  // asymmetric
  cases.push_back(asym);
  cases.push_back(PoolCase{2, 3, 7, 9, 2, 2});  // stride 1, no pad
  PoolCase dil{2, 3, 8, 9, 3, 2};  // dilated, taps in the padding, odd strides
  dil.dh = 2, dil.dw = 3;
  dil.sh = 3, dil.sw = 1;
  dil.pt = 2, dil.pl = 1, dil.pb = 1, dil.pr = 0;
  cases.push_back(dil);
  PoolCase g{2, 3, 7, 9, 0, 0};
  g.global = true;
  cases.push_back(g);
  return cases;
}

// Distinct values at least 0.03 apart, so max pooling is smooth under small perturbations.
inline Tensor DistinctTensor(std::vector<int64_t> dims, uint32_t seed) {
  Tensor t(std::move(dims), DataType::FLOAT);
  std::vector<int64_t> perm(static_cast<size_t>(t.numel()));
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), std::mt19937(seed));
  float* d = t.mutable_data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) d[i] = 0.03f * (perm[i] - t.numel() / 2);
  return t;
}

}  // namespace testing
}  // namespace halfcaf
