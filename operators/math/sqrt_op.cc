// Sqrt: Y = sqrt(X) element-wise. Gradient (as Caffe2 builds it): Scale(dY -> dX, scale = 0.5),
// then Div(dX, Y) -> dX in place, i.e. dX = 0.5 * dY / Y.
#include <cmath>

#include "core/gradient.h"
#include "operators/math/elementwise_unary_op.h"

namespace halfcaf {

namespace {

struct SqrtFunctor {
  static float Forward(float x) { return std::sqrt(x); }
};

class GetSqrtGradient : public GradientMakerBase {
 public:
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    const std::string dx = GI(0);
    return {MakeOperatorDef("Scale", "", {GO(0)}, {dx}, {MakeArgument("scale", 0.5f)}),
            MakeOperatorDef("Div", "", {dx, O(0)}, {dx})};
  }
};

}  // namespace

REGISTER_CPU_OPERATOR(Sqrt, UnaryElementwiseOp<SqrtFunctor>);
REGISTER_GRADIENT(Sqrt, GetSqrtGradient);

OPERATOR_SCHEMA(Sqrt)
    .NumInputs(1)
    .NumOutputs(1)
    .AllowInplace({{0, 0}})
    .IdenticalTypeAndShape()
    .PointwiseCost(1)
    .SetDoc("Square root, element-wise: Y = sqrt(X); negative values give NaN. Float and "
            "float16 (computed in float). May run in place. The gradient needs only Y and is "
            "built from two ops: Scale(dY, scale = 0.5) -> dX, then Div(dX, Y) -> dX in place.")
    .Input(0, "X", "input tensor of any shape")
    .Output(0, "Y", "sqrt(X), same shape and type as X");

}  // namespace halfcaf
