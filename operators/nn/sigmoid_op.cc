// Sigmoid: Y = 1 / (1 + exp(-X)). Gradient SigmoidGradient: (Y, dY) -> dX = dY * Y * (1 - Y).
#include <cmath>

#include "core/gradient.h"
#include "operators/math/elementwise_unary_op.h"

namespace halfcaf {

namespace {

struct SigmoidFunctor {
  // exp(-x) overflows to inf for very negative x, which still gives the right limit 0.
  static float Forward(float x) { return 1.f / (1.f + std::exp(-x)); }
  static float Backward(float y, float dy) { return dy * y * (1.f - y); }
};

}  // namespace

REGISTER_CPU_OPERATOR(Sigmoid, UnaryElementwiseOp<SigmoidFunctor>);
REGISTER_CPU_OPERATOR(SigmoidGradient, UnaryElementwiseGradientOp<SigmoidFunctor>);
REGISTER_GRADIENT(Sigmoid, GetGradientFromOutput);

OPERATOR_SCHEMA(Sigmoid)
    .NumInputs(1)
    .NumOutputs(1)
    .AllowInplace({{0, 0}})
    .IdenticalTypeAndShape()
    .PointwiseCost(4)
    .SetDoc(
        "Logistic sigmoid: Y = 1 / (1 + exp(-X)), element-wise. Float and float16 (computed "
        "in float).")
    .Input(0, "X", "input tensor of any shape")
    .Output(0, "Y", "output, same shape and type as X, values in [0, 1]");

OPERATOR_SCHEMA(SigmoidGradient)
    .NumInputs(2)
    .NumOutputs(1)
    .AllowInplace({{1, 0}})
    .IdenticalTypeAndShapeOfInput(1)
    .PointwiseCost(3)
    .SetDoc("Gradient of Sigmoid from its output: dX = dY * Y * (1 - Y).")
    .Input(0, "Y", "forward output")
    .Input(1, "dY", "gradient of Y")
    .Output(0, "dX", "gradient of X (may be computed in place on dY)");

}  // namespace halfcaf
