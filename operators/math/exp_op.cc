// Exp: Y = e^X element-wise. Gradient (as Caffe2 builds it): Mul(Y, dY) -> dX, since dY/dX = Y.
#include <cmath>

#include "core/gradient.h"
#include "operators/math/elementwise_unary_op.h"

namespace halfcaf {

namespace {

struct ExpFunctor {
  static float Forward(float x) { return std::exp(x); }
};

class GetExpGradient : public GradientMakerBase {
 public:
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    return SingleGradientDef("Mul", {O(0), GO(0)}, {GI(0)});
  }
};

}  // namespace

REGISTER_CPU_OPERATOR(Exp, UnaryElementwiseOp<ExpFunctor>);
REGISTER_GRADIENT(Exp, GetExpGradient);

OPERATOR_SCHEMA(Exp)
    .NumInputs(1)
    .NumOutputs(1)
    .AllowInplace({{0, 0}})
    .IdenticalTypeAndShape()
    .PointwiseCost(4)
    .SetDoc("Natural exponential, element-wise: Y = exp(X). Large X gives +inf (float16 "
            "overflows above about 11.1). Float and float16 (computed in float). May run in "
            "place; the gradient only needs Y: it is one Mul(Y, dY) op.")
    .Input(0, "X", "input tensor of any shape")
    .Output(0, "Y", "exp(X), same shape and type as X");

}  // namespace halfcaf
