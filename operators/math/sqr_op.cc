// Sqr: Y = X * X element-wise, float and float16. Gradient (as Caffe2 builds it): two ops,
// Scale(dY -> dY, scale = 2) in place on dY, then Mul(dY, X) -> dX.
#include "core/gradient.h"
#include "operators/math/elementwise_unary_op.h"

namespace halfcaf {

namespace {

struct SqrFunctor {
  static float Forward(float x) { return x * x; }
};

class GetSqrGradient : public GradientMakerBase {
 public:
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    const std::string dy = GO(0);
    return {MakeOperatorDef("Scale", "", {dy}, {dy}, {MakeArgument("scale", 2.0f)}),
            MakeOperatorDef("Mul", "", {dy, I(0)}, {GI(0)})};
  }
};

}  // namespace

REGISTER_CPU_OPERATOR(Sqr, UnaryElementwiseOp<SqrFunctor>);
REGISTER_GRADIENT(Sqr, GetSqrGradient);

OPERATOR_SCHEMA(Sqr)
    .NumInputs(1)
    .NumOutputs(1)
    .AllowInplace({{0, 0}})
    .IdenticalTypeAndShape()
    .PointwiseCost(1)
    .SetDoc("Square, element-wise: Y = X * X. Float and float16. The gradient is built from two "
            "ops: Scale (by 2, in place on dY; note that this overwrites dY) and Mul(dY, X).")
    .Input(0, "X", "input tensor of any shape")
    .Output(0, "Y", "X squared, same shape and type");

}  // namespace halfcaf
