// Relu: Y = max(X, 0). Gradient ReluGradient: (Y, dY) -> dX = dY where Y > 0. NaN propagates
// (core/nan_math.h): Relu(NaN) = NaN, and dX is NaN where Y or dY is.
#include "core/gradient.h"
#include "core/nan_math.h"
#include "operators/elementwise_unary_op.h"

namespace halfcaf {

namespace {

struct ReluFunctor {
  static float Forward(float x) { return ReluNaN(x); }
  static float Backward(float y, float dy) { return GatedGradient(y > 0.f, y, dy); }
};

}  // namespace

REGISTER_CPU_OPERATOR(Relu, UnaryElementwiseOp<ReluFunctor>);
REGISTER_CPU_OPERATOR(ReluGradient, UnaryElementwiseGradientOp<ReluFunctor>);
REGISTER_GRADIENT(Relu, GetGradientFromOutput);

OPERATOR_SCHEMA(Relu)
    .NumInputs(1)
    .NumOutputs(1)
    .AllowInplace({{0, 0}})
    .IdenticalTypeAndShape()
    .PointwiseCost(1)
    .SetDoc("Rectified linear unit: Y = max(X, 0), element-wise; NaN stays NaN. Float and float16.")
    .Input(0, "X", "input tensor of any shape")
    .Output(0, "Y", "output, same shape and type as X");

OPERATOR_SCHEMA(ReluGradient)
    .NumInputs(2)
    .NumOutputs(1)
    .AllowInplace({{1, 0}})
    .IdenticalTypeAndShapeOfInput(1)
    .PointwiseCost(1)
    .SetDoc("Gradient of Relu: dX = dY where Y > 0, else 0; NaN where Y or dY is NaN.")
    .Input(0, "Y", "forward output")
    .Input(1, "dY", "gradient of Y")
    .Output(0, "dX", "gradient of X");

}  // namespace halfcaf
