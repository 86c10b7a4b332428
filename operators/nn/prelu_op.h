// PRelu: Y = X where X > 0, Slope * X elsewhere, with one slope shared by every element or one per
// channel (argument `order`, "NCHW" (default: channel = dim 1) or "NHWC" (channel = last dim)).
// PReluGradient: (Y, dY, X, Slope) -> (dX, dSlope), Caffe2's order; it reads X, so the forward op
// must not run in place when a gradient is wanted. Float and float16 (computed in float).
#pragma once

#include <cstdint>
#include <vector>

#include "core/operator.h"
#include "operators/nn/conv_pool_op_base.h"

namespace halfcaf {

// X seen as (outer, C, inner): element i uses slope (i / inner) % C. A shared slope is C = 1.
struct PReluView {
  int64_t outer = 0, C = 1, inner = 1;
};

StorageOrder ParsePReluOrder(const OperatorBase& op);

// Checks that Slope has one element, or one per channel of X (`what` names the operator in the
// error), and returns the view.
PReluView PReluViewOf(StorageOrder order, const std::vector<int64_t>& x_dims, int64_t slope_numel,
                      const char* what);

}  // namespace halfcaf
