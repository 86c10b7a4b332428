#include "operators/nn/hard_sigmoid_op.h"

#include <cmath>

#include "core/gradient.h"
#include "core/nan_math.h"
#include "operators/math/elementwise_unary_op.h"

namespace halfcaf {

HardSigmoidParams ParseHardSigmoidParams(const OperatorBase& op) {
  HardSigmoidParams p;
  p.alpha = op.GetSingleArgument<float>("alpha", 0.2f);
  p.beta = op.GetSingleArgument<float>("beta", 0.5f);
  HALFCAF_ENFORCE(std::isfinite(p.alpha) && std::isfinite(p.beta), op.type(),
                  " needs finite alpha and beta, got alpha = ", p.alpha, ", beta = ", p.beta);
  return p;
}

namespace {

struct HardSigmoidFunctor {
  HardSigmoidFunctor(const OperatorBase& op, bool) : p(ParseHardSigmoidParams(op)) {}
  // Written so that NaN fails both comparisons and comes out as NaN (the CUDA kernel matches).
  float Forward(float x) const {
    const float t = p.alpha * x + p.beta;
    const float lo = t < 0.f ? 0.f : t;
    return 1.f < lo ? 1.f : lo;
  }
  float Backward(float y, float dy) const {
    return GatedGradient(y > 0.f && y < 1.f, y, p.alpha * dy);
  }
  HardSigmoidParams p;
};

}  // namespace

REGISTER_CPU_OPERATOR(HardSigmoid, UnaryElementwiseOp<HardSigmoidFunctor>);
REGISTER_CPU_OPERATOR(HardSigmoidGradient, UnaryElementwiseGradientOp<HardSigmoidFunctor>);
REGISTER_GRADIENT(HardSigmoid, GetGradientFromOutput);

OPERATOR_SCHEMA(HardSigmoid)
    .NumInputs(1)
    .NumOutputs(1)
    .AllowInplace({{0, 0}})
    .IdenticalTypeAndShape()
    .PointwiseCost(4)
    .SetDoc("Piecewise-linear approximation of the sigmoid, element-wise: Y = alpha * X + beta "
            "clamped to [0, 1]; NaN stays NaN. Float and float16 (computed in float). May run in "
            "place: the gradient HardSigmoidGradient(Y, dY) needs only Y.")
    .Arg("alpha", "float, default 0.2: slope of the linear part")
    .Arg("beta", "float, default 0.5: offset of the linear part")
    .Input(0, "X", "input tensor of any shape")
    .Output(0, "Y", "output in [0, 1], same shape and type as X");

OPERATOR_SCHEMA(HardSigmoidGradient)
    .NumInputs(2)
    .NumOutputs(1)
    .AllowInplace({{1, 0}})
    .IdenticalTypeAndShapeOfInput(1)
    .PointwiseCost(2)
    .SetDoc("Gradient of HardSigmoid from its output: dX = alpha * dY where 0 < Y < 1 (the "
            "linear part), 0 where Y is clamped to 0 or 1; NaN where Y or dY is NaN. dX has "
            "dY's type.")
    .Arg("alpha", "float, default 0.2: HardSigmoid's alpha")
    .Arg("beta", "float, default 0.5: HardSigmoid's beta (only checked to be finite)")
    .Input(0, "Y", "forward output")
    .Input(1, "dY", "gradient of Y")
    .Output(0, "dX", "gradient of X (may be computed in place on dY)");

}  // namespace halfcaf
