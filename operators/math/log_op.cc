// Log: Y = ln(X) element-wise. Gradient (as Caffe2 builds it): Div(dY, X) -> dX.
#include <cmath>

#include "core/gradient.h"
#include "operators/math/elementwise_unary_op.h"

namespace halfcaf {

namespace {

struct LogFunctor {
  static float Forward(float x) { return std::log(x); }
};

class GetLogGradient : public GradientMakerBase {
 public:
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    EnforceInputKeptForGradient(def_, 0);
    return SingleGradientDef("Div", {GO(0), I(0)}, {GI(0)});
  }
};

}  // namespace

REGISTER_CPU_OPERATOR(Log, UnaryElementwiseOp<LogFunctor>);
REGISTER_GRADIENT(Log, GetLogGradient);

OPERATOR_SCHEMA(Log)
    .NumInputs(1)
    .NumOutputs(1)
    .AllowInplace({{0, 0}})
    .IdenticalTypeAndShape()
    .PointwiseCost(4)
    .SetDoc("Natural logarithm, element-wise: Y = ln(X); 0 gives -inf and negative values NaN. "
            "Float and float16 (computed in float). May run in place, but then it cannot be "
            "differentiated: the gradient is one Div(dY, X) op, which needs X (unlike Caffe2, "
            "asking for the gradient of an in-place Log is an error rather than a wrong result).")
    .Input(0, "X", "input tensor of any shape")
    .Output(0, "Y", "ln(X), same shape and type as X");

}  // namespace halfcaf
