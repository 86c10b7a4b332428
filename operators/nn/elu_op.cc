#include "operators/nn/elu_op.h"

#include <cmath>

#include "core/gradient.h"
#include "core/nan_math.h"
#include "operators/math/elementwise_unary_op.h"

namespace halfcaf {

float ParseEluAlpha(const OperatorBase& op, bool for_gradient) {
  const float alpha = op.GetSingleArgument<float>("alpha", 1.f);
  HALFCAF_ENFORCE(!for_gradient || alpha > 0.f,
                  "EluGradient needs alpha > 0 (it reads the sign of X from Y), got alpha = ",
                  alpha);
  return alpha;
}

namespace {

struct EluFunctor {
  EluFunctor(const OperatorBase& op, bool for_gradient)
      : alpha(ParseEluAlpha(op, for_gradient)) {}
  float Forward(float x) const { return x < 0.f ? alpha * std::expm1(x) : x; }
  float Backward(float y, float dy) const { return y < 0.f ? dy * (y + alpha) : IsNaN(y) ? y : dy; }
  float alpha;
};

}  // namespace

REGISTER_CPU_OPERATOR(Elu, UnaryElementwiseOp<EluFunctor>);
REGISTER_CPU_OPERATOR(EluGradient, UnaryElementwiseGradientOp<EluFunctor>);
REGISTER_GRADIENT(Elu, GetGradientFromOutput);

OPERATOR_SCHEMA(Elu)
    .NumInputs(1)
    .NumOutputs(1)
    .AllowInplace({{0, 0}})
    .IdenticalTypeAndShape()
    .PointwiseCost(4)
    .SetDoc("Exponential linear unit, element-wise: Y = X where X >= 0, alpha * (exp(X) - 1) "
            "where X < 0; NaN stays NaN. Float and float16 (computed in float). May run in "
            "place: the gradient EluGradient(Y, dY) needs only Y.")
    .Arg("alpha", "float, default 1.0: scale of the negative part (its limit is -alpha)")
    .Input(0, "X", "input tensor of any shape")
    .Output(0, "Y", "output, same shape and type as X");

OPERATOR_SCHEMA(EluGradient)
    .NumInputs(2)
    .NumOutputs(1)
    .AllowInplace({{1, 0}})
    .IdenticalTypeAndShapeOfInput(1)
    .PointwiseCost(2)
    .SetDoc("Gradient of Elu from its output: dX = dY * (Y + alpha) where Y < 0, dY elsewhere "
            "(NaN where Y is NaN). alpha must be > 0.")
    .Arg("alpha", "float, default 1.0: Elu's alpha")
    .Input(0, "Y", "forward output")
    .Input(1, "dY", "gradient of Y")
    .Output(0, "dX", "gradient of X (may be computed in place on dY)");

}  // namespace halfcaf
