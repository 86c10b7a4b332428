#include "operators/nn/leaky_relu_op.h"

#include "core/gradient.h"
#include "core/nan_math.h"
#include "operators/math/elementwise_unary_op.h"

namespace halfcaf {

float ParseLeakyReluAlpha(const OperatorBase& op, bool for_gradient) {
  const float alpha = op.GetSingleArgument<float>("alpha", 0.01f);
  HALFCAF_ENFORCE(!for_gradient || alpha >= 0.f, "LeakyReluGradient needs alpha >= 0 (it reads ",
                  "the sign of X from Y), got alpha = ", alpha);
  return alpha;
}

namespace {

struct LeakyReluFunctor {
  LeakyReluFunctor(const OperatorBase& op, bool for_gradient)
      : alpha(ParseLeakyReluAlpha(op, for_gradient)) {}
  // NaN fails x > 0 and stays NaN through alpha * x.
  float Forward(float x) const { return x > 0.f ? x : alpha * x; }
  float Backward(float y, float dy) const { return y > 0.f ? dy : IsNaN(y) ? y : alpha * dy; }
  float alpha;
};

}  // namespace

REGISTER_CPU_OPERATOR(LeakyRelu, UnaryElementwiseOp<LeakyReluFunctor>);
REGISTER_CPU_OPERATOR(LeakyReluGradient, UnaryElementwiseGradientOp<LeakyReluFunctor>);
REGISTER_GRADIENT(LeakyRelu, GetGradientFromOutput);

OPERATOR_SCHEMA(LeakyRelu)
    .NumInputs(1)
    .NumOutputs(1)
    .AllowInplace({{0, 0}})
    .IdenticalTypeAndShape()
    .PointwiseCost(2)
    .SetDoc("Leaky rectified linear unit, element-wise: Y = X where X > 0, alpha * X "
            "elsewhere; NaN stays NaN. Float and float16 (computed in float). May run in place: "
            "the gradient LeakyReluGradient(Y, dY) needs only Y.")
    .Arg("alpha", "float, default 0.01: slope for X <= 0")
    .Input(0, "X", "input tensor of any shape")
    .Output(0, "Y", "output, same shape and type as X");

OPERATOR_SCHEMA(LeakyReluGradient)
    .NumInputs(2)
    .NumOutputs(1)
    .AllowInplace({{1, 0}})
    .IdenticalTypeAndShapeOfInput(1)
    .PointwiseCost(2)
    .SetDoc("Gradient of LeakyRelu from its output: dX = dY where Y > 0, alpha * dY elsewhere "
            "(NaN where Y is NaN). Caffe2 passes dY where Y >= 0, which is wrong for alpha = 0 "
            "(Y = -0 for negative X); here Y = 0 takes the alpha side. alpha must be >= 0.")
    .Arg("alpha", "float, default 0.01: LeakyRelu's slope")
    .Input(0, "Y", "forward output")
    .Input(1, "dY", "gradient of Y")
    .Output(0, "dX", "gradient of X (may be computed in place on dY)");

}  // namespace halfcaf
