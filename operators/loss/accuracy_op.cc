#include "operators/loss/accuracy_op.h"

#include <cmath>

#include "core/float_io.h"
#include "core/gradient.h"
#include "core/nan_math.h"
#include "operators/loss/label_util.h"

namespace halfcaf {

AccuracyOp::AccuracyOp(const OperatorDef& def, Workspace* ws)
    : Operator(def, ws), top_k_(GetSingleArgument<int>("top_k", 1)) {
  HALFCAF_ENFORCE(top_k_ >= 1, DebugName(), ": argument top_k must be >= 1, got ", top_k_);
}

void AccuracyOp::RunOnDevice() {
  const Tensor& X = Input(0);
  const Tensor& L = Input(1);
  EnforceFloatType(X, "predictions");
  HALFCAF_ENFORCE(X.ndim() == 2, DebugName(), ": predictions must be (N, D), got dims ",
                  DimsString(X.dims()));
  const int64_t N = X.dim(0), D = X.dim(1);
  CheckLabelTensor(L, N, {N}, DebugName());
  const float* x = ReadAsFloat(X, &x_);
  const int32_t* l = L.data<int32_t>();
  int64_t correct = 0;
  bool nan = false;
  for (int64_t i = 0; i < N; ++i) {
    CheckLabelValue(l[i], i, D, DebugName());
    const float* xi = x + i * D;
    const float target = xi[l[i]];
    int64_t above = 0;
    for (int64_t j = 0; j < D; ++j) {
      nan = nan || IsNaN(xi[j]);
      if (xi[j] > target || (xi[j] == target && j < l[i])) ++above;
    }
    if (above < top_k_) ++correct;
  }
  Tensor* Y = Output(0, {});
  Y->mutable_data<float>()[0] =
      nan ? NAN : N > 0 ? static_cast<float>(static_cast<double>(correct) / N) : 0.f;
}

REGISTER_CPU_OPERATOR(Accuracy, AccuracyOp);
SHOULD_NOT_DO_GRADIENT(Accuracy);

OPERATOR_SCHEMA(Accuracy)
    .NumInputs(2)
    .NumOutputs(1)
    .TensorInferenceFunction([](const OperatorDef&, const std::vector<TensorShape>&) {
      return std::vector<TensorShape>{TensorShape{{}, DataType::FLOAT}};
    })
    .CostInferenceFunction([](const OperatorDef&, const std::vector<TensorShape>& in) {
      OpCost c;
      const double n = static_cast<double>(in.at(0).numel());
      c.flops = n;
      c.bytes_read = n * DataTypeSize(in[0].dtype) + in.at(1).numel() * 4.0;
      c.bytes_written = 4;
      return c;
    })
    .SetDoc(
        "Top-k classification accuracy: the fraction of samples whose label is among the "
        "top_k highest-scoring classes, as a 0-d float (0 for N = 0). Classes ranked above "
        "the label are those with a strictly larger score, or an equal score and a lower "
        "class index (ties favour the lower index); a sample is correct when fewer than "
        "top_k classes rank above its label. A NaN score anywhere makes the accuracy NaN, so a "
        "diverged model cannot look accurate. Not differentiable.")
    .Arg("top_k", "int, default 1: how many of the best classes count as a hit")
    .Input(0, "predictions", "float or float16 scores (N, D)")
    .Input(1, "labels", "int32 class indices, (N) or (N, 1)")
    .Output(0, "accuracy", "0-d float in [0, 1]");

}  // namespace halfcaf
