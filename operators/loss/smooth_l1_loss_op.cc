// SmoothL1Loss (Caffe2's Detectron module): the bounding-box regression loss of Fast R-CNN,
//   loss = scale / N * sum_k alpha_out[k] * f(alpha_in[k] * (Y_hat[k] - Y[k])),
//   f(d) = 0.5 d^2 / beta for |d| < beta, |d| - 0.5 beta otherwise,
// over every element k, with N = Y_hat.dims[0] (the batch; loss 0 when N = 0, where Caffe2 gives
// NaN). The inside weights alpha_in usually switch elements on (1) or off (0); the outside
// weights alpha_out weight each element's loss.
// SmoothL1LossGradient: d_Y_hat[k] = d_loss * scale / N * alpha_in[k] * alpha_out[k] * f'(d_k),
// f'(d) = d / beta for |d| < beta, sign(d) otherwise. Y and the weights get no gradient (as in
// Caffe2). Inputs float, float16 or bfloat16 (computed in float); the loss is a 0-d float;
// d_Y_hat has Y_hat's type.
#include "operators/loss/smooth_l1_loss_op.h"

#include <cmath>

#include "core/float_io.h"
#include "core/gradient.h"

namespace halfcaf {

SmoothL1Params ParseSmoothL1Params(const OperatorBase& op) {
  const SmoothL1Params p{op.GetSingleArgument<float>("beta", 1.f),
                         op.GetSingleArgument<float>("scale", 1.f)};
  HALFCAF_ENFORCE(p.beta > 0.f, op.DebugName(), ": beta must be > 0, got ", p.beta);
  HALFCAF_ENFORCE(p.scale >= 0.f, op.DebugName(), ": scale must be >= 0, got ", p.scale);
  return p;
}

double SmoothL1Norm(const SmoothL1Params& p, int64_t N) {
  return N > 0 ? static_cast<double>(p.scale) / static_cast<double>(N) : 0.0;
}

int64_t CheckSmoothL1Inputs(const OperatorBase& op, const Tensor& Y_hat, const Tensor& Y,
                            const Tensor& alpha_in, const Tensor& alpha_out, const Tensor* d_loss) {
  EnforceFloatType(Y_hat, "Y_hat");
  EnforceFloatType(Y, "Y");
  EnforceFloatType(alpha_in, "alpha_in");
  EnforceFloatType(alpha_out, "alpha_out");
  const int64_t n = Y_hat.numel();
  HALFCAF_ENFORCE(Y_hat.ndim() >= 1 && Y.ndim() >= 1 && Y.dim(0) == Y_hat.dim(0) &&
                      Y.numel() == n && alpha_in.numel() == n && alpha_out.numel() == n,
                  op.DebugName(),
                  ": Y_hat, Y, alpha_in and alpha_out must have the same number of elements and "
                  "Y_hat and Y the same first dimension, got Y_hat ",
                  DimsString(Y_hat.dims()), ", Y ", DimsString(Y.dims()), ", alpha_in ",
                  DimsString(alpha_in.dims()), ", alpha_out ", DimsString(alpha_out.dims()));
  if (d_loss) {
    EnforceFloatType(*d_loss, "d_loss");
    HALFCAF_ENFORCE(d_loss->numel() == 1, op.DebugName(), ": d_loss must hold one value, got dims ",
                    DimsString(d_loss->dims()));
  }
  return Y_hat.dim(0);
}

namespace {

class SmoothL1LossOp final : public Operator<CPUContext> {
 public:
  SmoothL1LossOp(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws), p_(ParseSmoothL1Params(*this)) {}

  void RunOnDevice() override {
    const int64_t N = CheckSmoothL1Inputs(*this, Input(0), Input(1), Input(2), Input(3), nullptr);
    const int64_t n = Input(0).numel();
    const float* y_hat = ReadAsFloat(Input(0), &y_hat_);
    const float* y = ReadAsFloat(Input(1), &y_);
    const float* a_in = ReadAsFloat(Input(2), &a_in_);
    const float* a_out = ReadAsFloat(Input(3), &a_out_);
    double sum = 0;
    for (int64_t k = 0; k < n; ++k) {
      const double d = static_cast<double>(a_in[k]) * (static_cast<double>(y_hat[k]) - y[k]);
      const double a = std::fabs(d);
      sum += a_out[k] * (a < p_.beta ? 0.5 * d * d / p_.beta : a - 0.5 * p_.beta);
    }
    Output(0, {})->mutable_data<float>()[0] = static_cast<float>(sum * SmoothL1Norm(p_, N));
  }

 private:
  const SmoothL1Params p_;
  std::vector<float> y_hat_, y_, a_in_, a_out_;
};

class SmoothL1LossGradientOp final : public Operator<CPUContext> {
 public:
  SmoothL1LossGradientOp(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws), p_(ParseSmoothL1Params(*this)) {}

  void RunOnDevice() override {
    const Tensor& Y_hat = Input(0);
    const int64_t N = CheckSmoothL1Inputs(*this, Y_hat, Input(1), Input(2), Input(3), &Input(4));
    const int64_t n = Y_hat.numel();
    const float* y_hat = ReadAsFloat(Y_hat, &y_hat_);
    const float* y = ReadAsFloat(Input(1), &y_);
    const float* a_in = ReadAsFloat(Input(2), &a_in_);
    const float* a_out = ReadAsFloat(Input(3), &a_out_);
    const double g = ReadAsFloat(Input(4), &dl_)[0] * SmoothL1Norm(p_, N);
    FloatWriter dx(Output(0, Y_hat.dims()), Y_hat.dtype(), &dx_);
    float* out = dx.data();
    for (int64_t k = 0; k < n; ++k) {
      const double d = static_cast<double>(a_in[k]) * (static_cast<double>(y_hat[k]) - y[k]);
      const double slope = std::fabs(d) < p_.beta ? d / p_.beta : (d > 0) - (d < 0);
      out[k] = static_cast<float>(g * a_in[k] * a_out[k] * slope);
    }
    dx.Commit();
  }

 private:
  const SmoothL1Params p_;
  std::vector<float> y_hat_, y_, a_in_, a_out_, dl_, dx_;
};

class GetSmoothL1LossGradient : public GradientMakerBase {
 public:
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    return SingleGradientDef("SmoothL1LossGradient", {I(0), I(1), I(2), I(3), GO(0)}, {GI(0)});
  }
};

}  // namespace

REGISTER_CPU_OPERATOR(SmoothL1Loss, SmoothL1LossOp);
REGISTER_CPU_OPERATOR(SmoothL1LossGradient, SmoothL1LossGradientOp);
REGISTER_GRADIENT(SmoothL1Loss, GetSmoothL1LossGradient);

OPERATOR_SCHEMA(SmoothL1Loss)
    .NumInputs(4)
    .NumOutputs(1)
    .TensorInferenceFunction([](const OperatorDef&, const std::vector<TensorShape>&) {
      return std::vector<TensorShape>{TensorShape{{}, DataType::FLOAT}};
    })
    .PointwiseCost(6)
    .SetDoc(
        "Smooth L1 (Huber-like) loss of Fast R-CNN box regression: loss = scale / N * sum_k "
        "alpha_out[k] * f(alpha_in[k] * (Y_hat[k] - Y[k])), f(d) = 0.5 d^2 / beta for |d| < "
        "beta, |d| - 0.5 beta otherwise; N = Y_hat.dims[0] (loss 0 when N = 0). The four "
        "inputs hold the same number of elements; float, float16 or bfloat16 (computed in "
        "float); the loss is a 0-d float.")
    .Arg("beta", "float, default 1.0: the L2 to L1 transition point (> 0)")
    .Arg("scale", "float, default 1.0: multiplies the loss (>= 0)")
    .Input(0, "Y_hat", "predictions, at least 1-d")
    .Input(1, "Y", "targets, Y_hat's number of elements and first dimension")
    .Input(2, "alpha_in", "inside weights (applied to the difference), Y_hat's number of elements")
    .Input(3, "alpha_out", "outside weights (applied to the loss), Y_hat's number of elements")
    .Output(0, "loss", "0-d float");

OPERATOR_SCHEMA(SmoothL1LossGradient)
    .NumInputs(5)
    .NumOutputs(1)
    .IdenticalTypeAndShapeOfInput(0)
    .PointwiseCost(6)
    .SetDoc(
        "Gradient of SmoothL1Loss with respect to Y_hat: d_Y_hat = d_loss * scale / N * "
        "alpha_in * alpha_out * f'(alpha_in * (Y_hat - Y)), f'(d) = d / beta for |d| < beta, "
        "sign(d) otherwise. d_Y_hat has Y_hat's type; Y and the weights get no gradient.")
    .Arg("beta", "float, default 1.0: the forward op's")
    .Arg("scale", "float, default 1.0: the forward op's")
    .Input(0, "Y_hat", "forward input")
    .Input(1, "Y", "forward input")
    .Input(2, "alpha_in", "forward input")
    .Input(3, "alpha_out", "forward input")
    .Input(4, "d_loss", "gradient of the loss, one value")
    .Output(0, "d_Y_hat", "gradient of Y_hat");

}  // namespace halfcaf
