#include "operators/loss/averaged_loss_op.h"

#include <algorithm>

#include "core/float_io.h"
#include "core/gradient.h"

namespace halfcaf {

void AveragedLossOp::RunOnDevice() {
  const Tensor& X = Input(0);
  EnforceFloatType(X, "X");
  const float* x = ReadAsFloat(X, &x_);
  const int64_t n = X.numel();
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += x[i];
  Tensor* Y = Output(0, {});
  Y->mutable_data<float>()[0] = n > 0 ? static_cast<float>(sum / n) : 0.f;
}

void AveragedLossGradientOp::RunOnDevice() {
  const Tensor& X = Input(0);
  const Tensor& dY = Input(1);
  EnforceFloatType(X, "X");
  EnforceFloatType(dY, "dY");
  HALFCAF_ENFORCE(dY.numel() == 1, DebugName(), ": dY must hold one value, got dims ",
                  DimsString(dY.dims()));
  const float dy = ReadAsFloat(dY, &dy_)[0];
  const int64_t n = X.numel();
  Tensor* dX = Output(0, X.dims());
  FloatWriter dx(dX, X.dtype(), &dx_);
  std::fill_n(dx.data(), n, n > 0 ? dy / static_cast<float>(n) : 0.f);
  dx.Commit();
}

namespace {

class GetAveragedLossGradient : public GradientMakerBase {
 public:
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    return SingleGradientDef("AveragedLossGradient", {I(0), GO(0)}, {GI(0)});
  }
};

}  // namespace

REGISTER_CPU_OPERATOR(AveragedLoss, AveragedLossOp);
REGISTER_CPU_OPERATOR(AveragedLossGradient, AveragedLossGradientOp);
REGISTER_GRADIENT(AveragedLoss, GetAveragedLossGradient);

OPERATOR_SCHEMA(AveragedLoss)
    .NumInputs(1)
    .NumOutputs(1)
    .TensorInferenceFunction([](const OperatorDef&, const std::vector<TensorShape>&) {
      return std::vector<TensorShape>{TensorShape{{}, DataType::FLOAT}};
    })
    .CostInferenceFunction([](const OperatorDef&, const std::vector<TensorShape>& in) {
      OpCost c;
      const double n = static_cast<double>(in.at(0).numel());
      c.flops = n;
      c.bytes_read = n * DataTypeSize(in[0].dtype);
      c.bytes_written = 4;
      return c;
    })
    .SetDoc(
        "Mean of all elements of X, as a 0-d float (the usual last step of a loss: "
        "AveragedLoss(LabelCrossEntropy(...))). X may have any shape, float or float16; "
        "the output is float and is 0 for an empty X.")
    .Input(0, "X", "tensor of any shape (typically per-sample losses)")
    .Output(0, "loss", "0-d float: mean of X");

OPERATOR_SCHEMA(AveragedLossGradient)
    .NumInputs(2)
    .NumOutputs(1)
    .IdenticalTypeAndShapeOfInput(0)
    .PointwiseCost(1)
    .SetDoc(
        "Gradient of AveragedLoss: every element of dX is dY / X.numel(). dX has X's shape "
        "and type.")
    .Input(0, "X", "forward input (for its shape and type)")
    .Input(1, "dY", "gradient of the loss, one value")
    .Output(0, "dX", "gradient of X");

}  // namespace halfcaf
