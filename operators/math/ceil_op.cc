// Ceil: Y = ceil(X) element-wise. No gradient, as in Caffe2 (GRADIENT_NOT_IMPLEMENTED_YET).
#include <cmath>

#include "core/gradient.h"
#include "operators/math/elementwise_unary_op.h"

namespace halfcaf {

namespace {

struct CeilFunctor {
  static float Forward(float x) { return std::ceil(x); }
};

}  // namespace

REGISTER_CPU_OPERATOR(Ceil, UnaryElementwiseOp<CeilFunctor>);
GRADIENT_NOT_IMPLEMENTED_YET(Ceil);

OPERATOR_SCHEMA(Ceil)
    .NumInputs(1)
    .NumOutputs(1)
    .AllowInplace({{0, 0}})
    .IdenticalTypeAndShape()
    .PointwiseCost(1)
    .SetDoc("Rounds each element up to the nearest integer value: Y = ceil(X) (so -0.5 gives "
            "-0; infinities and NaN pass unchanged). Float and float16 (float16 results are "
            "exact). May run in place. Like Caffe2, it has no gradient: asking for one is an "
            "error.")
    .Input(0, "X", "input tensor of any shape")
    .Output(0, "Y", "ceil(X), same shape and type as X");

}  // namespace halfcaf
