// Scale: Y = scale * X (float or float16). Its gradient is Scale of dY by the same factor.
#include "core/float_io.h"
#include "core/gradient.h"
#include "core/operator.h"

namespace halfcaf {

namespace {

class ScaleOp final : public Operator<CPUContext> {
 public:
  ScaleOp(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws), scale_(GetSingleArgument<float>("scale", 1.f)) {}

  void RunOnDevice() override {
    const Tensor& X = Input(0);
    EnforceFloatType(X, "X");
    const float* x = ReadAsFloat(X, &x_);
    const DataType dtype = X.dtype();
    Tensor* Y = Output(0, X.dims());
    FloatWriter y(Y, dtype, &y_);
    for (int64_t i = 0; i < Y->numel(); ++i) y.data()[i] = scale_ * x[i];
    y.Commit();
  }

 private:
  float scale_;
  std::vector<float> x_, y_;
};

class GetScaleGradient : public GradientMakerBase {
 public:
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    return SingleGradientDef("Scale", {GO(0)}, {GI(0)});
  }
};

}  // namespace

REGISTER_CPU_OPERATOR(Scale, ScaleOp);
REGISTER_GRADIENT(Scale, GetScaleGradient);

OPERATOR_SCHEMA(Scale)
    .NumInputs(1)
    .NumOutputs(1)
    .AllowInplace({{0, 0}})
    .IdenticalTypeAndShape()
    .PointwiseCost(1)
    .SetDoc("Y = scale * X, element-wise (float or float16).")
    .Arg("scale", "float, default 1.0")
    .Input(0, "X", "input")
    .Output(0, "Y", "scaled output, same shape and type");

}  // namespace halfcaf
