// Tanh: Y = tanh(X). Gradient TanhGradient: (Y, dY) -> dX = dY * (1 - Y^2).
#include <cmath>

#include "core/gradient.h"
#include "operators/math/elementwise_unary_op.h"

namespace halfcaf {

namespace {

struct TanhFunctor {
  static float Forward(float x) { return std::tanh(x); }
  static float Backward(float y, float dy) { return dy * (1.f - y * y); }
};

}  // namespace

REGISTER_CPU_OPERATOR(Tanh, UnaryElementwiseOp<TanhFunctor>);
REGISTER_CPU_OPERATOR(TanhGradient, UnaryElementwiseGradientOp<TanhFunctor>);
REGISTER_GRADIENT(Tanh, GetGradientFromOutput);

OPERATOR_SCHEMA(Tanh)
    .NumInputs(1)
    .NumOutputs(1)
    .AllowInplace({{0, 0}})
    .IdenticalTypeAndShape()
    .PointwiseCost(4)
    .SetDoc(
        "Hyperbolic tangent: Y = tanh(X), element-wise. Float and float16 (computed in "
        "float).")
    .Input(0, "X", "input tensor of any shape")
    .Output(0, "Y", "output, same shape and type as X, values in [-1, 1]");

OPERATOR_SCHEMA(TanhGradient)
    .NumInputs(2)
    .NumOutputs(1)
    .AllowInplace({{1, 0}})
    .IdenticalTypeAndShapeOfInput(1)
    .PointwiseCost(3)
    .SetDoc("Gradient of Tanh from its output: dX = dY * (1 - Y * Y).")
    .Input(0, "Y", "forward output")
    .Input(1, "dY", "gradient of Y")
    .Output(0, "dX", "gradient of X (may be computed in place on dY)");

}  // namespace halfcaf
