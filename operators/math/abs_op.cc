// Abs: Y = |X| element-wise. Gradient AbsGradient: (X, dY) -> dX = sign(X) * dY (0 where X = 0).
#include <cmath>

#include "core/gradient.h"
#include "core/nan_math.h"
#include "operators/math/elementwise_unary_op.h"

namespace halfcaf {

namespace {

struct AbsFunctor {
  static float Forward(float x) { return std::fabs(x); }
  // Input 0 of AbsGradient is X. A NaN X or dY gives NaN.
  static float Backward(float x, float dy) {
    return x > 0.f ? dy : x < 0.f ? -dy : GatedGradient(false, x, dy);
  }
};

class GetAbsGradient : public GradientMakerBase {
 public:
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    return SingleGradientDef("AbsGradient", {I(0), GO(0)}, {GI(0)});
  }
};

}  // namespace

REGISTER_CPU_OPERATOR(Abs, UnaryElementwiseOp<AbsFunctor>);
REGISTER_CPU_OPERATOR(AbsGradient, UnaryElementwiseGradientOp<AbsFunctor, true>);
REGISTER_GRADIENT(Abs, GetAbsGradient);

OPERATOR_SCHEMA(Abs)
    .NumInputs(1)
    .NumOutputs(1)
    .IdenticalTypeAndShape()
    .PointwiseCost(1)
    .SetDoc("Absolute value, element-wise: Y = |X|. Float and float16 (computed in float). Not "
            "in place (as in Caffe2): the gradient AbsGradient(X, dY) needs X.")
    .Input(0, "X", "input tensor of any shape")
    .Output(0, "Y", "|X|, same shape and type as X");

OPERATOR_SCHEMA(AbsGradient)
    .NumInputs(2)
    .NumOutputs(1)
    .AllowInplace({{1, 0}})
    .IdenticalTypeAndShapeOfInput(1)
    .PointwiseCost(1)
    .SetDoc("Gradient of Abs: dX = dY where X > 0, -dY where X < 0, and 0 where X = 0; NaN "
            "where X or dY is NaN.")
    .Input(0, "X", "Abs's input")
    .Input(1, "dY", "gradient of Y")
    .Output(0, "dX", "gradient of X (may be computed in place on dY)");

}  // namespace halfcaf
