// Reciprocal: Y = 1 / X element-wise. Gradient ReciprocalGradient: (Y, dY) -> dX = -dY * Y^2.
#include "core/gradient.h"
#include "operators/math/elementwise_unary_op.h"

namespace halfcaf {

namespace {

struct ReciprocalFunctor {
  static float Forward(float x) { return 1.f / x; }
  static float Backward(float y, float dy) { return -dy * y * y; }
};

}  // namespace

REGISTER_CPU_OPERATOR(Reciprocal, UnaryElementwiseOp<ReciprocalFunctor>);
REGISTER_CPU_OPERATOR(ReciprocalGradient, UnaryElementwiseGradientOp<ReciprocalFunctor>);
REGISTER_GRADIENT(Reciprocal, GetGradientFromOutput);

OPERATOR_SCHEMA(Reciprocal)
    .NumInputs(1)
    .NumOutputs(1)
    .AllowInplace({{0, 0}})
    .IdenticalTypeAndShape()
    .PointwiseCost(1)
    .SetDoc("Reciprocal, element-wise: Y = 1 / X (+-0 gives +-inf). Float and float16 "
            "(computed in float). May run in place: the gradient needs only Y.")
    .Input(0, "X", "input tensor of any shape")
    .Output(0, "Y", "1 / X, same shape and type as X");

OPERATOR_SCHEMA(ReciprocalGradient)
    .NumInputs(2)
    .NumOutputs(1)
    .AllowInplace({{1, 0}})
    .IdenticalTypeAndShapeOfInput(1)
    .PointwiseCost(3)
    .SetDoc("Gradient of Reciprocal from its output: dX = -dY * Y * Y.")
    .Input(0, "Y", "forward output")
    .Input(1, "dY", "gradient of Y")
    .Output(0, "dX", "gradient of X (may be computed in place on dY)");

}  // namespace halfcaf
