// LeakyRelu: Y = X where X > 0, alpha * X elsewhere; argument `alpha` (float, default 0.01).
// LeakyReluGradient: (Y, dY) -> dX = dY where Y > 0, alpha * dY elsewhere (same `alpha`).
// Float and float16 (computed in float). Both may run in place (X -> Y; dY -> dX).
#pragma once

#include "core/operator.h"

namespace halfcaf {

// Reads `alpha` (default 0.01). The gradient reads the sign of X from Y, so with
// `for_gradient` a negative alpha (which flips that sign) is refused.
float ParseLeakyReluAlpha(const OperatorBase& op, bool for_gradient);

}  // namespace halfcaf
