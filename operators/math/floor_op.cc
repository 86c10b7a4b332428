// Floor: Y = floor(X) element-wise. No gradient, as in Caffe2 (GRADIENT_NOT_IMPLEMENTED_YET).
#include <cmath>

#include "core/gradient.h"
#include "operators/math/elementwise_unary_op.h"

namespace halfcaf {

namespace {

struct FloorFunctor {
  static float Forward(float x) { return std::floor(x); }
};

}  // namespace

REGISTER_CPU_OPERATOR(Floor, UnaryElementwiseOp<FloorFunctor>);
GRADIENT_NOT_IMPLEMENTED_YET(Floor);

OPERATOR_SCHEMA(Floor)
    .NumInputs(1)
    .NumOutputs(1)
    .AllowInplace({{0, 0}})
    .IdenticalTypeAndShape()
    .PointwiseCost(1)
    .SetDoc("Rounds each element down to the nearest integer value: Y = floor(X) (so -0.5 "
            "gives -1; infinities and NaN pass unchanged). Float and float16 (float16 results "
            "are exact). May run in place. Like Caffe2, it has no gradient: asking for one is "
            "an error.")
    .Input(0, "X", "input tensor of any shape")
    .Output(0, "Y", "floor(X), same shape and type as X");

}  // namespace halfcaf
