// MakeTwoClass (Caffe2): probabilities x of the positive class, any shape, to two-class
// probabilities: Y = X's dims + [2] with Y[..., 0] = 1 - x and Y[..., 1] = x (for a two-class
// loss such as LabelCrossEntropy after a sigmoid). The values are not checked to lie in [0, 1]
// (Caffe2 checks them in debug builds only).
// MakeTwoClassGradient: dY (dims + [2]) -> dX = dY[..., 1] - dY[..., 0].
// Float, float16 or bfloat16, computed in float; Y has X's type and dX has dY's (the gradient op
// sees only dY, as in Caffe2).
#include "operators/loss/make_two_class_op.h"

#include "core/float_io.h"
#include "core/gradient.h"

namespace halfcaf {

std::vector<int64_t> MakeTwoClassDims(const Tensor& X) {
  EnforceFloatType(X, "X");
  std::vector<int64_t> dims = X.dims();
  dims.push_back(2);
  return dims;
}

std::vector<int64_t> MakeTwoClassGradientDims(const OperatorBase& op, const Tensor& dY) {
  EnforceFloatType(dY, "dY");
  HALFCAF_ENFORCE(dY.ndim() >= 1 && dY.dims().back() == 2, op.DebugName(),
                  ": dY must end in a dimension of 2 (the two classes), got dims ",
                  DimsString(dY.dims()));
  return std::vector<int64_t>(dY.dims().begin(), dY.dims().end() - 1);
}

namespace {

class MakeTwoClassOp final : public Operator<CPUContext> {
 public:
  using Operator::Operator;

  void RunOnDevice() override {
    const Tensor& X = Input(0);
    const std::vector<int64_t> dims = MakeTwoClassDims(X);
    const float* x = ReadAsFloat(X, &x_);
    FloatWriter y(Output(0, dims), X.dtype(), &y_);
    float* out = y.data();
    for (int64_t i = 0; i < X.numel(); ++i) {
      out[2 * i] = 1.f - x[i];
      out[2 * i + 1] = x[i];
    }
    y.Commit();
  }

 private:
  std::vector<float> x_, y_;
};

class MakeTwoClassGradientOp final : public Operator<CPUContext> {
 public:
  using Operator::Operator;

  void RunOnDevice() override {
    const Tensor& dY = Input(0);
    const std::vector<int64_t> dims = MakeTwoClassGradientDims(*this, dY);
    const float* dy = ReadAsFloat(dY, &dy_);
    Tensor* dX = Output(0, dims);
    FloatWriter dx(dX, dY.dtype(), &dx_);
    float* g = dx.data();
    for (int64_t i = 0; i < dX->numel(); ++i) g[i] = dy[2 * i + 1] - dy[2 * i];
    dx.Commit();
  }

 private:
  std::vector<float> dy_, dx_;
};

class GetMakeTwoClassGradient : public GradientMakerBase {
 public:
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    return SingleGradientDef("MakeTwoClassGradient", {GO(0)}, {GI(0)});
  }
};

}  // namespace

REGISTER_CPU_OPERATOR(MakeTwoClass, MakeTwoClassOp);
REGISTER_CPU_OPERATOR(MakeTwoClassGradient, MakeTwoClassGradientOp);
REGISTER_GRADIENT(MakeTwoClass, GetMakeTwoClassGradient);

OPERATOR_SCHEMA(MakeTwoClass)
    .NumInputs(1)
    .NumOutputs(1)
    .TensorInferenceFunction([](const OperatorDef&, const std::vector<TensorShape>& in) {
      TensorShape y = in.at(0);
      y.dims.push_back(2);
      return std::vector<TensorShape>{y};
    })
    .PointwiseCost(1)
    .SetDoc(
        "Two-class probabilities from the probability x of the positive class: Y has X's "
        "dims + [2], Y[..., 0] = 1 - x, Y[..., 1] = x. X of any shape, float, float16 or "
        "bfloat16 (computed in float); Y has X's type. Values are not checked to lie in "
        "[0, 1].")
    .Input(0, "X", "probabilities of the positive class, any shape")
    .Output(0, "Y", "X's dims + [2]: (1 - x, x)");

OPERATOR_SCHEMA(MakeTwoClassGradient)
    .NumInputs(1)
    .NumOutputs(1)
    .TensorInferenceFunction([](const OperatorDef&, const std::vector<TensorShape>& in) {
      TensorShape dx = in.at(0);
      if (!dx.dims.empty()) dx.dims.pop_back();
      return std::vector<TensorShape>{dx};
    })
    .PointwiseCost(1)
    .SetDoc(
        "Gradient of MakeTwoClass: dX = dY[..., 1] - dY[..., 0]; dX has dY's dims without "
        "the last (which must be 2) and dY's type.")
    .Input(0, "dY", "gradient of Y, last dimension 2")
    .Output(0, "dX", "gradient of X");

}  // namespace halfcaf
