#include "operators/loss/softmax_with_loss_op.h"

#include <algorithm>
#include <cmath>

#include "core/float_io.h"
#include "core/gradient.h"
#include "operators/loss/label_util.h"
#include "operators/nn/softmax_op.h"

namespace halfcaf {

void CheckSoftmaxLossOrder(const OperatorBase& op) {
  std::string order = op.GetSingleArgument<std::string>("order", "NCHW");
  HALFCAF_ENFORCE(order == "NCHW" || order == "nchw", op.DebugName(),
                  ": argument order must be \"NCHW\" (classes along `axis`), got \"", order, "\"");
}

void CheckSoftmaxLossLabels(const Tensor& labels, const Tensor* weights,
                            const std::vector<int64_t>& x_dims, int a, int64_t N, int64_t D,
                            bool label_prob, const std::string& op) {
  if (label_prob) {
    EnforceFloatType(labels, "labels (label_prob=1)");
    const std::vector<int64_t> nd{N, D};
    HALFCAF_ENFORCE(labels.dims() == x_dims || labels.dims() == nd, op,
                    ": with label_prob=1 the labels must be class distributions shaped like X ",
                    DimsString(x_dims), " or (", N, ", ", D, "), got ", DimsString(labels.dims()));
  } else {
    CheckLabelTensor(labels, N, std::vector<int64_t>(x_dims.begin(), x_dims.begin() + a), op);
  }
  if (weights) {
    EnforceFloatType(*weights, "weights");
    HALFCAF_ENFORCE(weights->numel() == N, op, ": weights must hold one weight per sample (", N,
                    "), got dims ", DimsString(weights->dims()));
  }
}

SoftmaxWithLossOp::SoftmaxWithLossOp(const OperatorDef& def, Workspace* ws)
    : Operator(def, ws),
      scale_(GetSingleArgument<float>("scale", 1.f)),
      label_prob_(GetSingleArgument<int>("label_prob", 0) != 0),
      axis_(GetSingleArgument<int>("axis", 1)) {
  CheckSoftmaxLossOrder(*this);
}

void SoftmaxWithLossOp::RunOnDevice() {
  const Tensor& X = Input(0);
  const Tensor& L = Input(1);
  const Tensor* W = InputSize() > 2 ? &Input(2) : nullptr;
  EnforceFloatType(X, "X (logits)");
  int64_t N, D;
  const int a = SoftmaxMatrixShape(X.dims(), axis_, DebugName(), &N, &D);
  CheckSoftmaxLossLabels(L, W, X.dims(), a, N, D, label_prob_, DebugName());

  const float* x = ReadAsFloat(X, &x_);
  const float* w = W ? ReadAsFloat(*W, &w_) : nullptr;
  Tensor* P = Output(0, X.dims());
  float* p = P->mutable_data<float>();
  lse_.resize(static_cast<size_t>(N));
  SoftmaxRows(x, N, D, p, lse_.data());

  // log P[i, j] = x[i, j] - lse[i] keeps the loss finite even when P underflows to 0.
  double total = 0, wsum = 0;
  if (label_prob_) {
    const float* l = ReadAsFloat(L, &labels_);
    for (int64_t i = 0; i < N; ++i) {
      double li = 0;
      for (int64_t j = 0; j < D; ++j) li -= l[i * D + j] * (x[i * D + j] - lse_[i]);
      const double wi = w ? w[i] : 1.0;
      total += wi * li;
      wsum += wi;
    }
  } else {
    const int32_t* l = L.data<int32_t>();
    for (int64_t i = 0; i < N; ++i) {
      CheckLabelValue(l[i], i, D, DebugName());
      const double wi = w ? w[i] : 1.0;
      total += wi * (lse_[i] - x[i * D + l[i]]);
      wsum += wi;
    }
  }
  Tensor* loss = Output(1, {});
  loss->mutable_data<float>()[0] = wsum != 0 ? static_cast<float>(total * scale_ / wsum) : 0.f;
}

SoftmaxWithLossGradientOp::SoftmaxWithLossGradientOp(const OperatorDef& def, Workspace* ws)
    : Operator(def, ws),
      scale_(GetSingleArgument<float>("scale", 1.f)),
      label_prob_(GetSingleArgument<int>("label_prob", 0) != 0),
      axis_(GetSingleArgument<int>("axis", 1)) {
  CheckSoftmaxLossOrder(*this);
}

SoftmaxLossGradInputs CheckSoftmaxLossGradientInputs(const OperatorBase& op, const Tensor& X,
                                                     const Tensor& L, int axis, bool label_prob,
                                                     const Tensor* W, const Tensor& P,
                                                     const Tensor& dLoss) {
  EnforceFloatType(X, "X (logits)");
  EnforceFloatType(P, "P");
  EnforceFloatType(dLoss, "dloss");
  SoftmaxLossGradInputs in;
  const std::string name = op.DebugName();
  in.axis = SoftmaxMatrixShape(X.dims(), axis, name, &in.N, &in.D);
  CheckSoftmaxLossLabels(L, W, X.dims(), in.axis, in.N, in.D, label_prob, name);
  HALFCAF_ENFORCE(P.dims() == X.dims(), name, ": P must have X's shape ", DimsString(X.dims()),
                  ", got ", DimsString(P.dims()));
  HALFCAF_ENFORCE(dLoss.numel() == 1, name, ": dloss must hold one value, got dims ",
                  DimsString(dLoss.dims()));
  return in;
}

void SoftmaxWithLossGradientOp::RunOnDevice() {
  const Tensor& X = Input(0);
  const Tensor& L = Input(1);
  const bool has_w = InputSize() == 5;
  const Tensor* W = has_w ? &Input(2) : nullptr;
  const Tensor& P = Input(has_w ? 3 : 2);
  const Tensor& dLoss = Input(has_w ? 4 : 3);
  const SoftmaxLossGradInputs in =
      CheckSoftmaxLossGradientInputs(*this, X, L, axis_, label_prob_, W, P, dLoss);
  const int64_t N = in.N, D = in.D;

  const float* p = ReadAsFloat(P, &p_);
  const float* w = W ? ReadAsFloat(*W, &w_) : nullptr;
  const float dloss = ReadAsFloat(dLoss, &dloss_)[0];
  double wsum = 0;
  for (int64_t i = 0; i < N; ++i) wsum += w ? w[i] : 1.0;

  Tensor* dX = Output(0, X.dims());
  FloatWriter dx(dX, X.dtype(), &dx_);
  float* g = dx.data();
  if (wsum == 0) {
    std::fill_n(g, N * D, 0.f);
  } else if (label_prob_) {
    // d/dx_j of -sum_k l_k log p_k = p_j * sum_k l_k - l_j (= p_j - l_j for distributions).
    const float* l = ReadAsFloat(L, &labels_);
    for (int64_t i = 0; i < N; ++i) {
      const float c = static_cast<float>((w ? w[i] : 1.0) * scale_ * dloss / wsum);
      double lsum = 0;
      for (int64_t j = 0; j < D; ++j) lsum += l[i * D + j];
      const float fl = static_cast<float>(lsum);
      for (int64_t j = 0; j < D; ++j) g[i * D + j] = c * (p[i * D + j] * fl - l[i * D + j]);
    }
  } else {
    const int32_t* l = L.data<int32_t>();
    for (int64_t i = 0; i < N; ++i) {
      CheckLabelValue(l[i], i, D, DebugName());
      const float c = static_cast<float>((w ? w[i] : 1.0) * scale_ * dloss / wsum);
      for (int64_t j = 0; j < D; ++j) g[i * D + j] = c * p[i * D + j];
      g[i * D + l[i]] -= c;
    }
  }
  dx.Commit();
}

namespace {

class GetSoftmaxWithLossGradient : public GradientMakerBase {
 public:
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    std::vector<std::string> in{I(0), I(1)};
    if (NumInputs() == 3) in.push_back(I(2));
    in.push_back(O(0));
    in.push_back(GO(1));
    return SingleGradientDef("SoftmaxWithLossGradient", in, {GI(0)});
  }
};

std::vector<TensorShape> SoftmaxWithLossShapes(const OperatorDef&,
                                               const std::vector<TensorShape>& in) {
  return {TensorShape{in.at(0).dims, DataType::FLOAT}, TensorShape{{}, DataType::FLOAT}};
}

OpCost SoftmaxWithLossCost(const OperatorDef&, const std::vector<TensorShape>& in) {
  OpCost c;
  const double n = static_cast<double>(in.at(0).numel());
  c.flops = 5 * n;
  c.bytes_read = n * DataTypeSize(in[0].dtype) + in.at(1).numel() * 4.0;
  c.bytes_written = n * 4.0 + 4.0;
  return c;
}

}  // namespace

REGISTER_CPU_OPERATOR(SoftmaxWithLoss, SoftmaxWithLossOp);
REGISTER_CPU_OPERATOR(SoftmaxWithLossGradient, SoftmaxWithLossGradientOp);
REGISTER_GRADIENT(SoftmaxWithLoss, GetSoftmaxWithLossGradient);

OPERATOR_SCHEMA(SoftmaxWithLoss)
    .NumInputs(2, 3)
    .NumOutputs(2)
    .TensorInferenceFunction(SoftmaxWithLossShapes)
    .CostInferenceFunction(SoftmaxWithLossCost)
    .SetDoc(
        "Softmax followed by the cross-entropy loss, fused for numerical stability. The "
        "logits X are viewed as (N, D) = (prod(dims[:axis]), prod(dims[axis:])); "
        "P = softmax of each row and loss = scale * sum_i w_i * (-log P[i, label_i]) / "
        "sum_i w_i (0 when the weights sum to 0; w_i = 1 without weights). The log is taken "
        "as x - logsumexp(x), so it stays finite when a probability underflows. With "
        "label_prob=1 the labels are float distributions and the per-sample loss is "
        "-sum_j label[i, j] * log P[i, j]. P and the loss are float even when X is float16. "
        "A label outside [0, D) is an error naming the sample and the label.")
    .Arg("scale", "float, default 1: multiplies the loss")
    .Arg("label_prob", "int, default 0: 1 = labels are float class distributions")
    .Arg("axis", "int, default 1: first dimension of the class block of X")
    .Arg("order", "string, default \"NCHW\"; only NCHW is accepted")
    .Arg("only_loss", "bool, default false: accepted for compatibility (no effect on CPU)")
    .Input(0, "X", "logits, float or float16, at least 1-d")
    .Input(1, "labels",
           "int32 class indices, one per sample ((N) or (N, 1)); with label_prob=1, "
           "float distributions shaped like X or (N, D)")
    .Input(2, "weights", "optional float per-sample weights (N)")
    .Output(0, "P", "softmax probabilities, float, X's shape")
    .Output(1, "loss", "0-d float: the weighted average loss times scale");

OPERATOR_SCHEMA(SoftmaxWithLossGradient)
    .NumInputs(4, 5)
    .NumOutputs(1)
    .TensorInferenceFunction([](const OperatorDef&, const std::vector<TensorShape>& in) {
      return std::vector<TensorShape>{in.at(0)};
    })
    .CostInferenceFunction(SoftmaxWithLossCost)
    .SetDoc(
        "Gradient of SoftmaxWithLoss with respect to the logits: "
        "dX[i, j] = dloss * scale * w_i / sum(w) * (P[i, j] - [j == label_i]) (with "
        "label_prob=1: P[i, j] * sum_k label[i, k] - label[i, j]). dX has X's type.")
    .Arg("scale", "float, default 1: as in SoftmaxWithLoss")
    .Arg("label_prob", "int, default 0: as in SoftmaxWithLoss")
    .Arg("axis", "int, default 1: as in SoftmaxWithLoss")
    .Arg("order", "string, default \"NCHW\"; only NCHW is accepted")
    .Input(0, "X", "forward logits")
    .Input(1, "labels", "forward labels")
    .Input(2, "weights", "forward weights (only when the forward op had them)")
    .Input(3, "P", "forward output P (input 2 without weights)")
    .Input(4, "dloss", "gradient of the loss, one value (input 3 without weights)")
    .Output(0, "dX", "gradient of X");

}  // namespace halfcaf
