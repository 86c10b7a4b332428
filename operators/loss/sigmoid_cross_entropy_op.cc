// SigmoidCrossEntropyWithLogits (Caffe2): binary cross-entropy of logits X against targets T
// (probabilities, same shape), averaged over the last dimension:
//   Y[i] = 1/D sum_j l(X[i, j], T[i, j]),  l(x, t) = max(x, 0) - x t + log(1 + exp(-|x|))
// (-t log sigmoid(x) - (1 - t) log(1 - sigmoid(x)), computed without overflow). With log_D_trick
// (the GAN generator's "maximise log D" loss): l(x, t) = -(2t - 1) log sigmoid(x).
// Gradient: dX[i, j] = dY[i] / D * (sigmoid(x) - t), or with log_D_trick
// -dY[i] / D * (2t - 1) (1 - sigmoid(x)). X may be float, float16 or bfloat16 (computed in
// float; dX has X's type); T is float; Y is float with X's dims without the last.
#include <algorithm>
#include <cmath>

#include "core/float_io.h"
#include "core/gradient.h"
#include "core/operator.h"
#include "operators/loss/sigmoid_cross_entropy_op.h"

namespace halfcaf {

SigmoidXentShape CheckSigmoidXent(const OperatorBase& op, const Tensor& X, const Tensor& T) {
  EnforceFloatType(X, "logits");
  HALFCAF_ENFORCE(T.dtype() == DataType::FLOAT, op.DebugName(), ": targets must be float, got ",
                  T.DebugString());
  HALFCAF_ENFORCE(X.dims() == T.dims(), op.DebugName(), ": logits ", DimsString(X.dims()),
                  " and targets ", DimsString(T.dims()), " must have the same shape");
  HALFCAF_ENFORCE(X.ndim() >= 1, op.DebugName(), ": logits must be at least 1-d");
  HALFCAF_ENFORCE(op.GetSingleArgument<int>("unjoined_lr_loss", 0) == 0, op.DebugName(),
                  ": unjoined_lr_loss is not supported (only the joined and log_D_trick forms)");
  SigmoidXentShape s;
  s.inner = X.dims().back();
  s.out_dims.assign(X.dims().begin(), X.dims().end() - 1);
  s.outer = s.inner > 0 ? X.numel() / s.inner : 0;
  return s;
}

SigmoidXentShape CheckSigmoidXentGradient(const OperatorBase& op, const Tensor& dY,
                                          const Tensor& X, const Tensor& T) {
  const SigmoidXentShape s = CheckSigmoidXent(op, X, T);
  EnforceFloatType(dY, "dY");
  HALFCAF_ENFORCE(dY.numel() == s.outer, op.DebugName(), ": dY must hold one value per row (",
                  s.outer, "), got dims ", DimsString(dY.dims()));
  return s;
}

namespace {

// log(1 + exp(-|x|)), exactly for large |x|.
inline double SoftplusOfMinusAbs(double x) { return std::log1p(std::exp(-std::fabs(x))); }

class SigmoidCrossEntropyWithLogitsOp final : public Operator<CPUContext> {
 public:
  SigmoidCrossEntropyWithLogitsOp(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws), log_d_trick_(GetSingleArgument<bool>("log_D_trick", false)) {}

  void RunOnDevice() override {
    const Tensor& X = Input(0);
    const Tensor& T = Input(1);
    const SigmoidXentShape s = CheckSigmoidXent(*this, X, T);
    const float* x = ReadAsFloat(X, &x_);
    const float* t = T.data<float>();
    float* y = Output(0, s.out_dims)->mutable_data<float>();
    for (int64_t i = 0; i < s.outer; ++i) {
      double sum = 0;
      for (int64_t j = 0; j < s.inner; ++j) {
        const double xi = x[i * s.inner + j], ti = t[i * s.inner + j];
        // log sigmoid(x) = min(x, 0) - log(1 + exp(-|x|))
        sum += log_d_trick_ ? -(2 * ti - 1) * (std::min(xi, 0.0) - SoftplusOfMinusAbs(xi))
                            : std::max(xi, 0.0) - xi * ti + SoftplusOfMinusAbs(xi);
      }
      y[i] = static_cast<float>(sum / static_cast<double>(s.inner));
    }
  }

 private:
  const bool log_d_trick_;
  std::vector<float> x_;
};

class SigmoidCrossEntropyWithLogitsGradientOp final : public Operator<CPUContext> {
 public:
  SigmoidCrossEntropyWithLogitsGradientOp(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws), log_d_trick_(GetSingleArgument<bool>("log_D_trick", false)) {}

  void RunOnDevice() override {
    const Tensor& dY = Input(0);
    const Tensor& X = Input(1);
    const Tensor& T = Input(2);
    const SigmoidXentShape s = CheckSigmoidXentGradient(*this, dY, X, T);
    const float* x = ReadAsFloat(X, &x_);
    const float* dy = ReadAsFloat(dY, &dy_);
    const float* t = T.data<float>();
    FloatWriter dx(Output(0, X.dims()), X.dtype(), &dx_);
    float* g = dx.data();
    const double inv = s.inner > 0 ? 1.0 / static_cast<double>(s.inner) : 0.0;
    for (int64_t i = 0; i < s.outer; ++i) {
      for (int64_t j = 0; j < s.inner; ++j) {
        const int64_t k = i * s.inner + j;
        const double sig = 1.0 / (1.0 + std::exp(-static_cast<double>(x[k])));
        const double d = log_d_trick_ ? -(2.0 * t[k] - 1.0) * (1.0 - sig) : sig - t[k];
        g[k] = static_cast<float>(dy[i] * inv * d);
      }
    }
    dx.Commit();
  }

 private:
  const bool log_d_trick_;
  std::vector<float> x_, dy_, dx_;
};

class GetSigmoidCrossEntropyWithLogitsGradient : public GradientMakerBase {
 public:
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    return SingleGradientDef("SigmoidCrossEntropyWithLogitsGradient", {GO(0), I(0), I(1)},
                             {GI(0)});
  }
};

}  // namespace

REGISTER_CPU_OPERATOR(SigmoidCrossEntropyWithLogits, SigmoidCrossEntropyWithLogitsOp);
REGISTER_CPU_OPERATOR(SigmoidCrossEntropyWithLogitsGradient,
                      SigmoidCrossEntropyWithLogitsGradientOp);
REGISTER_GRADIENT(SigmoidCrossEntropyWithLogits, GetSigmoidCrossEntropyWithLogitsGradient);

OPERATOR_SCHEMA(SigmoidCrossEntropyWithLogits)
    .NumInputs(2)
    .NumOutputs(1)
    .TensorInferenceFunction([](const OperatorDef&, const std::vector<TensorShape>& in) {
      std::vector<int64_t> d = in.at(0).dims;
      if (!d.empty()) d.pop_back();
      return std::vector<TensorShape>{TensorShape{d, DataType::FLOAT}};
    })
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
    .TensorInferenceFunction([](const OperatorDef&, const std::vector<TensorShape>& in) {
      return std::vector<TensorShape>{in.at(1)};
    })
    .SetDoc("Gradient of SigmoidCrossEntropyWithLogits with respect to the logits: dX = dY / D * "
            "(sigmoid(x) - t), or with log_D_trick -dY / D * (2t - 1) (1 - sigmoid(x)); dX has the "
            "logits' type.")
    .Arg("log_D_trick", "int, default 0: the forward op's")
    .Input(0, "dY", "gradient of the loss")
    .Input(1, "logits", "forward input")
    .Input(2, "targets", "forward input")
    .Output(0, "dlogits", "gradient of the logits");

}  // namespace halfcaf
