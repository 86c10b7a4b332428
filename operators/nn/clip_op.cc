#include "operators/nn/clip_op.h"

#include <limits>

#include "core/float_io.h"
#include "core/gradient.h"
#include "core/nan_math.h"

namespace halfcaf {

void ParseClipBounds(const OperatorBase& op, float* lo, float* hi) {
  *lo = op.GetSingleArgument<float>("min", std::numeric_limits<float>::lowest());
  *hi = op.GetSingleArgument<float>("max", std::numeric_limits<float>::max());
  HALFCAF_ENFORCE(!(*lo > *hi), "Clip needs min <= max, got min = ", *lo, ", max = ", *hi);
}

ClipOp::ClipOp(const OperatorDef& def, Workspace* ws) : Operator(def, ws) {
  ParseClipBounds(*this, &min_, &max_);
}

void ClipOp::RunOnDevice() {
  const Tensor& X = Input(0);
  EnforceFloatType(X, "X");
  const DataType dtype = X.dtype();
  const int64_t n = X.numel();
  const float* x = ReadAsFloat(X, &x_);
  Tensor* Y = Output(0, X.dims());
  FloatWriter y(Y, dtype, &y_);
  float* yd = y.data();
  for (int64_t i = 0; i < n; ++i) yd[i] = std::min(std::max(x[i], min_), max_);
  y.Commit();
}

ClipGradientOp::ClipGradientOp(const OperatorDef& def, Workspace* ws) : Operator(def, ws) {
  ParseClipBounds(*this, &min_, &max_);
}

void ClipGradientOp::RunOnDevice() {
  const Tensor& Y = Input(0);
  const Tensor& dY = Input(1);
  EnforceFloatType(Y, "Y");
  EnforceFloatType(dY, "dY");
  HALFCAF_ENFORCE(Y.dims() == dY.dims(), "Y and dY must have the same shape, got ",
                  DimsString(Y.dims()), " and ", DimsString(dY.dims()));
  const DataType dtype = dY.dtype();
  const int64_t n = Y.numel();
  const float* y = ReadAsFloat(Y, &y_);
  const float* dy = ReadAsFloat(dY, &dy_);
  Tensor* dX = Output(0, Y.dims());
  FloatWriter dx(dX, dtype, &dx_);
  float* dxd = dx.data();
  for (int64_t i = 0; i < n; ++i) dxd[i] = GatedGradient(y[i] > min_ && y[i] < max_, y[i], dy[i]);
  dx.Commit();
}

namespace {

class GetClipGradient : public GradientMakerBase {
 public:
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    return SingleGradientDef("ClipGradient", {O(0), GO(0)}, {GI(0)});
  }
};

}  // namespace

REGISTER_CPU_OPERATOR(Clip, ClipOp);
REGISTER_CPU_OPERATOR(ClipGradient, ClipGradientOp);
REGISTER_GRADIENT(Clip, GetClipGradient);

OPERATOR_SCHEMA(Clip)
    .NumInputs(1)
    .NumOutputs(1)
    .AllowInplace({{0, 0}})
    .IdenticalTypeAndShape()
    .PointwiseCost(2)
    .SetDoc("Clamps every element of X to [min, max]; a bound that is not given is unbounded. "
            "Float and float16.")
    .Arg("min", "float, default -inf: lower bound")
    .Arg("max", "float, default +inf: upper bound")
    .Input(0, "X", "input tensor of any shape")
    .Output(0, "Y", "clipped X, same shape and type");

OPERATOR_SCHEMA(ClipGradient)
    .NumInputs(2)
    .NumOutputs(1)
    .AllowInplace({{1, 0}})
    .IdenticalTypeAndShapeOfInput(1)
    .PointwiseCost(2)
    .SetDoc("Gradient of Clip: dX = dY where min < Y < max (strictly inside the bounds), else 0.")
    .Arg("min", "float, default -inf: Clip's lower bound")
    .Arg("max", "float, default +inf: Clip's upper bound")
    .Input(0, "Y", "Clip's output")
    .Input(1, "dY", "gradient of Y")
    .Output(0, "dX", "gradient of X");

}  // namespace halfcaf
