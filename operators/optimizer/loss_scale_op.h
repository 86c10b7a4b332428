// Loss-scaling operators of the mixed-precision recipe (halfcaf extensions; Caffe2 has none).
//
// CheckFinite      inputs: any number of float/float16 tensors (the gradients)
//                  output: found_inf, a 0-d float CPU tensor: 1 if any element is inf or nan
// UpdateLossScale  inputs: loss_scale (0-d float), found_inf, good_steps (int64 (1)),
//                          skipped_steps (int64 (1))
//                  outputs: the same blobs, updated in place: on overflow the scale is multiplied
//                  by `backoff` (0.5) down to `min_scale` and the step counted as skipped;
//                  after `growth_interval` clean steps it is multiplied by `growth` (2) up to
//                  `max_scale`.
#pragma once

#include <cstdint>

#include "core/operator.h"

namespace halfcaf {

struct LossScaleRule {
  float growth = 2.f;
  float backoff = 0.5f;
  int64_t growth_interval = 1000;
  float min_scale = 1.f;
  float max_scale = 16777216.f;  // 2^24

  // Applies one step: returns the new scale and updates good_steps / skipped_steps.
  float Step(float scale, bool found_inf, int64_t* good_steps, int64_t* skipped_steps) const;
};

// The rule from UpdateLossScale's arguments (growth, backoff, growth_interval, min_scale,
// max_scale), checked.
LossScaleRule ParseLossScaleRule(const OperatorBase& op);

// Throws naming `what` unless t is a float tensor with one element (loss_scale, found_inf, lr).
void EnforceFloatScalar(const Tensor& t, const char* what);

}  // namespace halfcaf
