// Elu: Y = X where X >= 0, alpha * (exp(X) - 1) where X < 0; argument `alpha` (float, default 1).
// EluGradient: (Y, dY) -> dX = dY where Y >= 0, dY * (Y + alpha) where Y < 0 (same `alpha`).
// Float and float16 (computed in float). Both may run in place (X -> Y; dY -> dX).
#pragma once

#include "core/operator.h"

namespace halfcaf {

// Reads `alpha` (default 1). The gradient reads the sign of X from Y, so with `for_gradient` an
// alpha <= 0 (Y no longer negative exactly where X is) is refused.
float ParseEluAlpha(const OperatorBase& op, bool for_gradient);

}  // namespace halfcaf
