// CrossEntropy (Caffe2): cross-entropy of probabilities X (N, D) against soft labels (N, D), each
// row of labels a distribution:
//   Y[i] = -sum_j label[i, j] * log(max(X[i, j], 1e-20)).
// A label outside [0, 1] is an error on the CPU (Caffe2's check; LabelCrossEntropy takes integer
// class labels). With one-hot labels it equals LabelCrossEntropy, gradient included.
// CrossEntropyGradient: (X, label, dY) -> dX[i, j] = -dY[i] * label[i, j] / X[i, j], and 0 where
// X[i, j] < 1e-20 (the clamp is active there, so the loss does not depend on X; Caffe2 divides by
// 1e-20 instead), as LabelCrossEntropyGradient does. X float, float16 or bfloat16 (computed in
// float), label float; Y float (N); dX has X's type.
#include "operators/loss/soft_cross_entropy_op.h"

#include <algorithm>
#include <cmath>

#include "core/float_io.h"
#include "core/gradient.h"

namespace halfcaf {

void CheckCrossEntropy(const OperatorBase& op, const Tensor& X, const Tensor& label,
                       const Tensor* dY, int64_t* N, int64_t* D) {
  EnforceFloatType(X, "X");
  HALFCAF_ENFORCE(label.dtype() == DataType::FLOAT, op.DebugName(),
                  ": label must be float (probabilities; integer class labels go to "
                  "LabelCrossEntropy), got ",
                  label.DebugString());
  HALFCAF_ENFORCE(X.ndim() >= 1, op.DebugName(), ": X must be at least 1-d, got a 0-d tensor");
  *N = X.ndim() > 1 ? X.dim(0) : 1;
  *D = X.ndim() > 1 ? (*N > 0 ? X.numel() / *N : 0) : X.dim(0);
  const std::vector<int64_t> rows{*N, *D};
  HALFCAF_ENFORCE(label.dims() == X.dims() || label.dims() == rows, op.DebugName(),
                  ": label must have X's shape ", DimsString(X.dims()), " or (N, D) = (", *N, ", ",
                  *D, "), got ", DimsString(label.dims()));
  if (!dY) return;
  EnforceFloatType(*dY, "dY");
  HALFCAF_ENFORCE(dY->numel() == *N, op.DebugName(), ": dY must hold one value per sample (", *N,
                  "), got dims ", DimsString(dY->dims()));
}

namespace {

constexpr float kLogThreshold = 1e-20f;

class CrossEntropyOp final : public Operator<CPUContext> {
 public:
  using Operator::Operator;

  void RunOnDevice() override {
    const Tensor& X = Input(0);
    const Tensor& L = Input(1);
    int64_t N, D;
    CheckCrossEntropy(*this, X, L, nullptr, &N, &D);
    const float* x = ReadAsFloat(X, &x_);
    const float* l = L.data<float>();
    for (int64_t k = 0; k < N * D; ++k) {
      HALFCAF_ENFORCE(l[k] >= 0.f && l[k] <= 1.f, DebugName(),
                      ": soft labels must be probabilities in [0, 1], got label[", k / D, ", ",
                      k % D, "] = ", l[k], "; for integer class labels use LabelCrossEntropy");
    }
    float* y = Output(0, {N})->mutable_data<float>();
    for (int64_t i = 0; i < N; ++i) {
      double sum = 0;
      for (int64_t k = i * D; k < (i + 1) * D; ++k) {
        sum += static_cast<double>(l[k]) *
               std::log(static_cast<double>(std::max(x[k], kLogThreshold)));
      }
      y[i] = static_cast<float>(-sum);
    }
  }

 private:
  std::vector<float> x_;
};

class CrossEntropyGradientOp final : public Operator<CPUContext> {
 public:
  using Operator::Operator;

  void RunOnDevice() override {
    const Tensor& X = Input(0);
    const Tensor& L = Input(1);
    const Tensor& dY = Input(2);
    int64_t N, D;
    CheckCrossEntropy(*this, X, L, &dY, &N, &D);
    const float* x = ReadAsFloat(X, &x_);
    const float* dy = ReadAsFloat(dY, &dy_);
    const float* l = L.data<float>();
    FloatWriter dx(Output(0, X.dims()), X.dtype(), &dx_);
    float* g = dx.data();
    for (int64_t i = 0; i < N; ++i) {
      for (int64_t k = i * D; k < (i + 1) * D; ++k) {
        g[k] = x[k] >= kLogThreshold ? -dy[i] * l[k] / x[k] : 0.f;
      }
    }
    dx.Commit();
  }

 private:
  std::vector<float> x_, dy_, dx_;
};

class GetCrossEntropyGradient : public GradientMakerBase {
 public:
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    return SingleGradientDef("CrossEntropyGradient", {I(0), I(1), GO(0)}, {GI(0)});
  }
};

}  // namespace

REGISTER_CPU_OPERATOR(CrossEntropy, CrossEntropyOp);
REGISTER_CPU_OPERATOR(CrossEntropyGradient, CrossEntropyGradientOp);
REGISTER_GRADIENT(CrossEntropy, GetCrossEntropyGradient);

OPERATOR_SCHEMA(CrossEntropy)
    .NumInputs(2)
    .NumOutputs(1)
    .TensorInferenceFunction([](const OperatorDef&, const std::vector<TensorShape>& in) {
      const auto& d = in.at(0).dims;
      return std::vector<TensorShape>{
          TensorShape{{d.size() > 1 ? d[0] : int64_t{1}}, DataType::FLOAT}};
    })
    .PointwiseCost(3)
    .SetDoc(
        "Cross-entropy of probabilities against soft labels (a distribution per sample): "
        "Y[i] = -sum_j label[i, j] * log(max(X[i, j], 1e-20)). X is (N, D...) (dimensions "
        "after the first flattened) or (D) for one sample; float, float16 or bfloat16 "
        "(computed in float); label float, X's shape or (N, D), values in [0, 1] (checked on "
        "the CPU). Y is float (N). Integer class labels: LabelCrossEntropy.")
    .Input(0, "X", "probabilities, (N, D...) or (D)")
    .Input(1, "label", "float soft labels, X's shape or (N, D)")
    .Output(0, "Y", "float (N): the per-sample loss");

OPERATOR_SCHEMA(CrossEntropyGradient)
    .NumInputs(3)
    .NumOutputs(1)
    .IdenticalTypeAndShapeOfInput(0)
    .PointwiseCost(3)
    .SetDoc(
        "Gradient of CrossEntropy: dX[i, j] = -dY[i] * label[i, j] / X[i, j], 0 where "
        "X[i, j] < 1e-20 (the clamped region, as LabelCrossEntropyGradient). dX has X's type.")
    .Input(0, "X", "forward input")
    .Input(1, "label", "forward labels")
    .Input(2, "dY", "gradient of Y (N)")
    .Output(0, "dX", "gradient of X");

}  // namespace halfcaf
