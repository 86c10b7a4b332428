// Dropout: in training (is_test = 0) each element of X is kept with probability 1 - ratio and
// scaled so the expectation is unchanged: Y = X * mask / (1 - ratio); mask (bool, shape of X,
// true = kept) is output 1. In test mode Y is a copy of X and the mask output is optional (all
// true when given). Randomness comes from the op context's generator (DeviceOption.random_seed).
// DropoutGrad: training (dY, mask) -> dX = dY * mask / (1 - ratio); test (dY) -> dX = dY.
// Args: ratio (float, 0.5, in [0, 1)), is_test (int, 0), channel_block (int, 0: with B > 0, X is
// channel-blocked (N, C / B, H, W, B), operators/nn/channel_block.h, and each element draws as the
// same element of the NCHW tensor: the blocked op keeps and drops what the NCHW op does, and
// DropoutGrad, element-wise, needs nothing more). Float, float16 and bfloat16 data.
#pragma once

#include <cstdint>
#include <vector>

#include "core/operator.h"

namespace halfcaf {

// Training's i-th 32-bit draw for a run whose key is `key` (counter-based: any element's draw is
// computed on its own, so a run's mask is the same however its loop is split over threads).
inline uint32_t DropoutDraw(uint64_t key, uint64_t i) {
  // splitmix64's output for the state key + (i + 1) * gamma: the i-th draw of the stream seeded
  // with `key`, computed directly.
  uint64_t z = key + (i + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return static_cast<uint32_t>((z ^ (z >> 31)) >> 32);
}

// The `ratio` argument (default 0.5), checked to be in [0, 1).
float ReadDropoutRatio(const OperatorBase& op);

class DropoutOp final : public Operator<CPUContext> {
 public:
  DropoutOp(const OperatorDef& def, Workspace* ws);
  void RunOnDevice() override;

 private:
  float ratio_;
  bool is_test_;
  int64_t block_;  // channel_block
};

class DropoutGradOp final : public Operator<CPUContext> {
 public:
  DropoutGradOp(const OperatorDef& def, Workspace* ws);
  void RunOnDevice() override;

 private:
  float ratio_;
  bool is_test_;
};

}  // namespace halfcaf
