#include "operators/loss/cross_entropy_op.h"

#include <algorithm>
#include <cmath>

#include "core/float_io.h"
#include "core/gradient.h"
#include "operators/loss/label_util.h"

namespace halfcaf {

namespace {

constexpr float kLogThreshold = 1e-20f;

// (N, D) for X of dims (N, D) or (D, one sample); throws naming `op` otherwise.
void LabelCrossEntropyShape(const Tensor& X, const std::string& op, int64_t* N, int64_t* D) {
  HALFCAF_ENFORCE(X.ndim() == 1 || X.ndim() == 2, op, ": X must be (N, D) or (D), got dims ",
                  DimsString(X.dims()));
  *N = X.ndim() == 2 ? X.dim(0) : 1;
  *D = X.dim(-1);
}

}  // namespace

void CheckLabelCrossEntropyInputs(const Tensor& X, const Tensor& labels, const Tensor* dY,
                                  const std::string& op, int64_t* N, int64_t* D) {
  EnforceFloatType(X, "X");
  if (dY) EnforceFloatType(*dY, "dY");
  LabelCrossEntropyShape(X, op, N, D);
  CheckLabelTensor(labels, *N, {*N}, op);
  if (dY) {
    HALFCAF_ENFORCE(dY->numel() == *N, op, ": dY must hold one value per sample (", *N,
                    "), got dims ", DimsString(dY->dims()));
  }
}

void LabelCrossEntropyOp::RunOnDevice() {
  const Tensor& X = Input(0);
  const Tensor& L = Input(1);
  int64_t N, D;
  CheckLabelCrossEntropyInputs(X, L, nullptr, DebugName(), &N, &D);
  const float* x = ReadAsFloat(X, &x_);
  const int32_t* l = L.data<int32_t>();
  Tensor* Y = Output(0, {N});
  float* y = Y->mutable_data<float>();
  for (int64_t i = 0; i < N; ++i) {
    CheckLabelValue(l[i], i, D, DebugName());
    y[i] = -std::log(std::max(x[i * D + l[i]], kLogThreshold));
  }
}

void LabelCrossEntropyGradientOp::RunOnDevice() {
  const Tensor& X = Input(0);
  const Tensor& L = Input(1);
  const Tensor& dY = Input(2);
  int64_t N, D;
  CheckLabelCrossEntropyInputs(X, L, &dY, DebugName(), &N, &D);
  const float* x = ReadAsFloat(X, &x_);
  const float* dy = ReadAsFloat(dY, &dy_);
  const int32_t* l = L.data<int32_t>();
  Tensor* dX = Output(0, X.dims());
  FloatWriter dx(dX, X.dtype(), &dx_);
  float* g = dx.data();
  std::fill_n(g, N * D, 0.f);
  for (int64_t i = 0; i < N; ++i) {
    CheckLabelValue(l[i], i, D, DebugName());
    const float xl = x[i * D + l[i]];
    g[i * D + l[i]] = xl >= kLogThreshold ? -dy[i] / xl : 0.f;
  }
  dx.Commit();
}

namespace {

class GetLabelCrossEntropyGradient : public GradientMakerBase {
 public:
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    return SingleGradientDef("LabelCrossEntropyGradient", {I(0), I(1), GO(0)}, {GI(0)});
  }
};

}  // namespace

REGISTER_CPU_OPERATOR(LabelCrossEntropy, LabelCrossEntropyOp);
REGISTER_CPU_OPERATOR(LabelCrossEntropyGradient, LabelCrossEntropyGradientOp);
REGISTER_GRADIENT(LabelCrossEntropy, GetLabelCrossEntropyGradient);

OPERATOR_SCHEMA(LabelCrossEntropy)
    .NumInputs(2)
    .NumOutputs(1)
    .TensorInferenceFunction([](const OperatorDef&, const std::vector<TensorShape>& in) {
      const auto& d = in.at(0).dims;
      return std::vector<TensorShape>{
          TensorShape{{d.size() == 2 ? d[0] : int64_t{1}}, DataType::FLOAT}};
    })
    .CostInferenceFunction([](const OperatorDef&, const std::vector<TensorShape>& in) {
      OpCost c;
      const auto& d = in.at(0).dims;
      const double n = d.size() == 2 ? static_cast<double>(d[0]) : 1.0;
      c.flops = n;
      c.bytes_read = n * (DataTypeSize(in[0].dtype) + 4.0);
      c.bytes_written = n * 4.0;
      return c;
    })
    .SetDoc(
        "Cross-entropy of probabilities against integer labels: "
        "Y[i] = -log(max(X[i, label_i], 1e-20)). X is (N, D), or (D) for one sample; X float "
        "or float16, Y always float. A label outside [0, D) is an error naming the sample and "
        "the label.")
    .Input(0, "X", "probabilities (N, D) or (D)")
    .Input(1, "labels", "int32 class indices, (N) or (N, 1)")
    .Output(0, "Y", "float (N): the per-sample loss");

OPERATOR_SCHEMA(LabelCrossEntropyGradient)
    .NumInputs(3)
    .NumOutputs(1)
    .IdenticalTypeAndShapeOfInput(0)
    .PointwiseCost(1)
    .SetDoc(
        "Gradient of LabelCrossEntropy: dX is zero except dX[i, label_i] = -dY[i] / "
        "X[i, label_i] (0 where X[i, label_i] < 1e-20, the clamped region). dX has X's type.")
    .Input(0, "X", "forward input")
    .Input(1, "labels", "forward labels")
    .Input(2, "dY", "gradient of Y (N)")
    .Output(0, "dX", "gradient of X");

}  // namespace halfcaf
