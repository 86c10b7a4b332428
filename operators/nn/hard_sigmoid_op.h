// HardSigmoid: Y = min(1, max(0, alpha * X + beta)); arguments `alpha` (float, default 0.2) and
// `beta` (float, default 0.5). HardSigmoidGradient: (Y, dY) -> dX = alpha * dY where 0 < Y < 1,
// 0 elsewhere (same `alpha`). Float and float16 (computed in float). Both may run in place.
#pragma once

#include "core/operator.h"

namespace halfcaf {

struct HardSigmoidParams {
  float alpha = 0.2f, beta = 0.5f;
};

HardSigmoidParams ParseHardSigmoidParams(const OperatorBase& op);

}  // namespace halfcaf
