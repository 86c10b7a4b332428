// SigmoidCrossEntropyWithLogits (Caffe2): binary cross-entropy of logits X against targets T
// (probabilities, same shape), averaged over the last dimension:
//   Y[i] = 1/D sum_j l(X[i, j], T[i, j]),  l(x, t) = max(x, 0) - x t + log(1 + exp(-|x|))
// (-t log sigmoid(x) - (1 - t) log(1 - sigmoid(x)), computed without overflow). With log_D_trick
// (the GAN generator's "maximise log D" loss): l(x, t) = -(2t - 1) log sigmoid(x).
// Gradient: dX[i, j] = dY[i] / D * (sigmoid(x) - t), or with log_D_trick
// -dY[i] / D * (2t - 1) (1 - sigmoid(x)).
// WeightedSigmoidCrossEntropyWithLogits (Caffe2): the same with a weight per element (third
// input, the logits' shape), no log_D_trick: Y[i] = 1/D sum_j W[i, j] l(X[i, j], T[i, j]);
// gradient dX[i, j] = dY[i] / D * W[i, j] * (sigmoid(x) - t); the targets and weights get none.
// X may be float, float16 or bfloat16 (computed in float; dX has X's type); T and W are float;
// Y is float with X's dims without the last.
#include <algorithm>
#include <cmath>

#include "core/float_io.h"
#include "core/gradient.h"
#include "core/operator.h"
#include "operators/loss/sigmoid_cross_entropy_op.h"

namespace halfcaf {

SigmoidXentShape CheckSigmoidXent(const OperatorBase& op, const Tensor& X, const Tensor& T,
                                  const Tensor* W) {
  EnforceFloatType(X, "logits");
  HALFCAF_ENFORCE(T.dtype() == DataType::FLOAT, op.DebugName(), ": targets must be float, got ",
                  T.DebugString());
  HALFCAF_ENFORCE(X.dims() == T.dims(), op.DebugName(), ": logits ", DimsString(X.dims()),
                  " and targets ", DimsString(T.dims()), " must have the same shape");
  HALFCAF_ENFORCE(X.ndim() >= 1, op.DebugName(), ": logits must be at least 1-d");
  if (W) {
    HALFCAF_ENFORCE(W->dtype() == DataType::FLOAT, op.DebugName(),
                    ": weights must be float, got ", W->DebugString());
    HALFCAF_ENFORCE(W->dims() == X.dims(), op.DebugName(), ": weights ", DimsString(W->dims()),
                    " must have the logits' shape ", DimsString(X.dims()));
  } else {
    HALFCAF_ENFORCE(op.GetSingleArgument<int>("unjoined_lr_loss", 0) == 0, op.DebugName(),
                    ": unjoined_lr_loss is not supported (only the joined and log_D_trick forms)");
  }
  SigmoidXentShape s;
  s.inner = X.dims().back();
  s.out_dims.assign(X.dims().begin(), X.dims().end() - 1);
  s.outer = s.inner > 0 ? X.numel() / s.inner : 0;
  return s;
}

SigmoidXentShape CheckSigmoidXentGradient(const OperatorBase& op, const Tensor& dY,
                                          const Tensor& X, const Tensor& T, const Tensor* W) {
  const SigmoidXentShape s = CheckSigmoidXent(op, X, T, W);
  EnforceFloatType(dY, "dY");
  HALFCAF_ENFORCE(dY.numel() == s.outer, op.DebugName(), ": dY must hold one value per row (",
                  s.outer, "), got dims ", DimsString(dY.dims()));
  return s;
}

namespace {

// log(1 + exp(-|x|)), exactly for large |x|.
inline double SoftplusOfMinusAbs(double x) { return std::log1p(std::exp(-std::fabs(x))); }

// The unweighted op (kWeighted false) and the weighted one, whose third input is the weights.
template <bool kWeighted>
class SigmoidXentOp final : public Operator<CPUContext> {
 public:
  SigmoidXentOp(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws),
        log_d_trick_(!kWeighted && GetSingleArgument<bool>("log_D_trick", false)) {}

  void RunOnDevice() override {
    const Tensor& X = Input(0);
    const Tensor& T = Input(1);
    const Tensor* W = kWeighted ? &Input(2) : nullptr;
    const SigmoidXentShape s = CheckSigmoidXent(*this, X, T, W);
    const float* x = ReadAsFloat(X, &x_);
    const float* t = T.data<float>();
    const float* w = W ? W->data<float>() : nullptr;
    float* y = Output(0, s.out_dims)->template mutable_data<float>();
    for (int64_t i = 0; i < s.outer; ++i) {
      double sum = 0;
      for (int64_t k = i * s.inner; k < (i + 1) * s.inner; ++k) {
        const double xi = x[k], ti = t[k];
        // log sigmoid(x) = min(x, 0) - log(1 + exp(-|x|))
        const double l = log_d_trick_
                             ? -(2 * ti - 1) * (std::min(xi, 0.0) - SoftplusOfMinusAbs(xi))
                             : std::max(xi, 0.0) - xi * ti + SoftplusOfMinusAbs(xi);
        sum += w ? w[k] * l : l;
      }
      y[i] = static_cast<float>(sum / static_cast<double>(s.inner));
    }
  }

 private:
  const bool log_d_trick_;
  std::vector<float> x_;
};

template <bool kWeighted>
class SigmoidXentGradientOp final : public Operator<CPUContext> {
 public:
  SigmoidXentGradientOp(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws),
        log_d_trick_(!kWeighted && GetSingleArgument<bool>("log_D_trick", false)) {}

  void RunOnDevice() override {
    const Tensor& dY = Input(0);
    const Tensor& X = Input(1);
    const Tensor& T = Input(2);
    const Tensor* W = kWeighted ? &Input(3) : nullptr;
    const SigmoidXentShape s = CheckSigmoidXentGradient(*this, dY, X, T, W);
    const float* x = ReadAsFloat(X, &x_);
    const float* dy = ReadAsFloat(dY, &dy_);
    const float* t = T.data<float>();
    const float* w = W ? W->data<float>() : nullptr;
    FloatWriter dx(Output(0, X.dims()), X.dtype(), &dx_);
    float* g = dx.data();
    const double inv = s.inner > 0 ? 1.0 / static_cast<double>(s.inner) : 0.0;
    for (int64_t i = 0; i < s.outer; ++i) {
      for (int64_t k = i * s.inner; k < (i + 1) * s.inner; ++k) {
        const double sig = 1.0 / (1.0 + std::exp(-static_cast<double>(x[k])));
        const double d = log_d_trick_ ? -(2.0 * t[k] - 1.0) * (1.0 - sig) : sig - t[k];
        g[k] = static_cast<float>(dy[i] * inv * (w ? w[k] * d : d));
      }
    }
    dx.Commit();
  }

 private:
  const bool log_d_trick_;
  std::vector<float> x_, dy_, dx_;
};

// Caffe2's makers: (dY, logits, targets[, weights]) -> dlogits.
template <bool kWeighted>
class GetSigmoidXentGradient : public GradientMakerBase {
 public:
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    if (kWeighted) {
      return SingleGradientDef("WeightedSigmoidCrossEntropyWithLogitsGradient",
                               {GO(0), I(0), I(1), I(2)}, {GI(0)});
    }
    return SingleGradientDef("SigmoidCrossEntropyWithLogitsGradient", {GO(0), I(0), I(1)},
                             {GI(0)});
  }
};

std::vector<TensorShape> LossShape(const OperatorDef&, const std::vector<TensorShape>& in) {
  std::vector<int64_t> d = in.at(0).dims;
  if (!d.empty()) d.pop_back();
  return {TensorShape{d, DataType::FLOAT}};
}

std::vector<TensorShape> LogitsGradientShape(const OperatorDef&,
                                             const std::vector<TensorShape>& in) {
  return {in.at(1)};
}

}  // namespace

REGISTER_CPU_OPERATOR(SigmoidCrossEntropyWithLogits, SigmoidXentOp<false>);
REGISTER_CPU_OPERATOR(SigmoidCrossEntropyWithLogitsGradient, SigmoidXentGradientOp<false>);
REGISTER_GRADIENT(SigmoidCrossEntropyWithLogits, GetSigmoidXentGradient<false>);
REGISTER_CPU_OPERATOR(WeightedSigmoidCrossEntropyWithLogits, SigmoidXentOp<true>);
REGISTER_CPU_OPERATOR(WeightedSigmoidCrossEntropyWithLogitsGradient, SigmoidXentGradientOp<true>);
REGISTER_GRADIENT(WeightedSigmoidCrossEntropyWithLogits, GetSigmoidXentGradient<true>);

OPERATOR_SCHEMA(SigmoidCrossEntropyWithLogits)
    .NumInputs(2)
    .NumOutputs(1)
    .TensorInferenceFunction(LossShape)
    .PointwiseCost(4)
    .SetDoc("Binary cross-entropy of logits against target probabilities, averaged over the last "
            "dimension: Y[i] = mean_j max(x, 0) - x t + log(1 + exp(-|x|)). With log_D_trick: "
            "mean_j -(2t - 1) log sigmoid(x) (a GAN generator's non-saturating loss). Logits "
            "float, float16 or bfloat16 (computed in float), targets float; Y float, X's dims "
            "without the last.")
    .Arg("log_D_trick", "int, default 0")
    .Arg("unjoined_lr_loss", "int, default 0; 1 is not supported")
    .Input(0, "logits", "tensor, at least 1-d")
    .Input(1, "targets", "float tensor of logits' shape (probabilities in [0, 1])")
    .Output(0, "loss", "float, logits' dims without the last");

OPERATOR_SCHEMA(SigmoidCrossEntropyWithLogitsGradient)
    .NumInputs(3)
    .NumOutputs(1)
    .TensorInferenceFunction(LogitsGradientShape)
    .PointwiseCost(4)
    .SetDoc("Gradient of SigmoidCrossEntropyWithLogits with respect to the logits: dX = dY / D * "
            "(sigmoid(x) - t), or with log_D_trick -dY / D * (2t - 1) (1 - sigmoid(x)); dX has the "
            "logits' type.")
    .Arg("log_D_trick", "int, default 0: the forward op's")
    .Input(0, "dY", "gradient of the loss")
    .Input(1, "logits", "forward input")
    .Input(2, "targets", "forward input")
    .Output(0, "dlogits", "gradient of the logits");

OPERATOR_SCHEMA(WeightedSigmoidCrossEntropyWithLogits)
    .NumInputs(3)
    .NumOutputs(1)
    .TensorInferenceFunction(LossShape)
    .PointwiseCost(5)
    .SetDoc("SigmoidCrossEntropyWithLogits with a weight per element, averaged over the last "
            "dimension: Y[i] = mean_j W[i, j] * (max(x, 0) - x t + log(1 + exp(-|x|))). Logits "
            "float, float16 or bfloat16 (computed in float), targets and weights float of the "
            "logits' shape; Y float, X's dims without the last.")
    .Input(0, "logits", "tensor, at least 1-d")
    .Input(1, "targets", "float tensor of logits' shape (probabilities in [0, 1])")
    .Input(2, "weights", "float tensor of logits' shape")
    .Output(0, "loss", "float, logits' dims without the last");

OPERATOR_SCHEMA(WeightedSigmoidCrossEntropyWithLogitsGradient)
    .NumInputs(4)
    .NumOutputs(1)
    .TensorInferenceFunction(LogitsGradientShape)
    .PointwiseCost(5)
    .SetDoc("Gradient of WeightedSigmoidCrossEntropyWithLogits with respect to the logits: dX = "
            "dY / D * W * (sigmoid(x) - t); dX has the logits' type.")
    .Input(0, "dY", "gradient of the loss")
    .Input(1, "logits", "forward input")
    .Input(2, "targets", "forward input")
    .Input(3, "weights", "forward input")
    .Output(0, "dlogits", "gradient of the logits");

}  // namespace halfcaf
