// Wngrad and Lars, as Caffe2 has them.
//
// Wngrad: inputs param, seq_b (1 element), grad, lr; outputs param, seq_b (in place),
// [effective_lr (1 element), [update]]. With b the old seq_b:
//   param += lr g / (b + epsilon);  seq_b = b + sum(g^2) / (b + epsilon)     (lr negative)
// effective_lr = lr / (b + epsilon); update = lr g / (b + epsilon). epsilon defaults to 1e-5.
//
// Lars: inputs X (param), dX (grad), wd, trust, lr_max (1-element float tensors); output
// lr_rescaled (1 element): local = trust / (|dX| / |X| + wd + offset) when |X| > 0, else 1;
// lr_rescaled = max(min(local, lr_max), lr_min) (offset 0.5, lr_min 0.02). An optimizer multiplies
// its rate by it. halfcaf extensions: dX may be float16 or bfloat16, and an optional sixth input
// loss_scale divides |dX| (the gradient of a loss-scaled mixed-precision net).
#include <algorithm>
#include <cmath>

#include "core/float_io.h"
#include "core/gradient.h"
#include "core/operator.h"
#include "operators/optimizer/adaptive_op.h"
#include "operators/optimizer/mixed_precision_sgd_op.h"

namespace halfcaf {

namespace {

double SumSquares(const Tensor& t) {
  const FloatIn in(t);
  const int64_t n = t.numel(), piece = 4096;
  double s = 0;
  for (int64_t off = 0; off < n; off += piece) {
    const int64_t len = std::min(piece, n - off);
    const float* x = in.Read(off, len, 0);
    for (int64_t j = 0; j < len; ++j) s += static_cast<double>(x[j]) * x[j];
  }
  return s;
}

class WngradOp final : public Operator<CPUContext> {
 public:
  WngradOp(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws), epsilon_(GetSingleArgument<float>("epsilon", 1e-5f)) {
    HALFCAF_ENFORCE(epsilon_ >= 0.f, DebugName(), ": epsilon must be >= 0, got ", epsilon_);
  }

  void RunOnDevice() override {
    const Tensor& P = Input(0);
    const Tensor& G = Input(2);
    CheckCaffeUpdateInputs(*this, "Wngrad", {0, 2}, {&P, &Input(1), &G});
    const float b = UpdateScalar(Input(1), "seq_b");
    const float lr = UpdateScalar(Input(3), "lr");
    const float rate = lr / (b + epsilon_);
    const float* g = G.data<float>();
    const double sum_sq = SumSquares(G);
    float* p = Output(0, P.dims())->mutable_data<float>();
    float* upd = OutputSize() > 3 ? Output(3, P.dims())->mutable_data<float>() : nullptr;
    for (int64_t i = 0; i < P.numel(); ++i) {
      const float step = rate * g[i];
      if (upd) upd[i] = step;
      p[i] += step;
    }
    Output(1, Input(1).dims())->mutable_data<float>()[0] =
        b + static_cast<float>(sum_sq / (b + epsilon_));
    if (OutputSize() > 2) Output(2, {1})->mutable_data<float>()[0] = rate;
  }

 private:
  const float epsilon_;
};

class LarsOp final : public Operator<CPUContext> {
 public:
  LarsOp(const OperatorDef& def, Workspace* ws) : Operator(def, ws), args_(*this) {}

  void RunOnDevice() override {
    const Tensor& X = Input(0);
    const Tensor& dX = Input(1);
    CheckLarsInputs(X, dX);
    const float wd = UpdateScalar(Input(2), "wd");
    const float trust = UpdateScalar(Input(3), "trust");
    const float lr_max = UpdateScalar(Input(4), "lr_max");
    const float scale = InputSize() > 5 ? UpdateScalar(Input(5), "loss_scale") : 1.f;
    HALFCAF_ENFORCE(scale > 0.f, "Lars: loss_scale must be positive, got ", scale);
    const double x_norm = std::sqrt(SumSquares(X));
    const double dx_norm = std::sqrt(SumSquares(dX)) / scale;
    Output(0, {1})->mutable_data<float>()[0] =
        LarsRate(x_norm, dx_norm, wd, trust, lr_max, args_.offset, args_.lr_min);
  }

 private:
  const LarsArgs args_;
};

}  // namespace

REGISTER_CPU_OPERATOR(Wngrad, WngradOp);
SHOULD_NOT_DO_GRADIENT(Wngrad);
REGISTER_CPU_OPERATOR(Lars, LarsOp);
SHOULD_NOT_DO_GRADIENT(Lars);

OPERATOR_SCHEMA(Wngrad)
    .NumInputs(4)
    .NumOutputs(2, 4)
    .EnforceInplace({{0, 0}, {1, 1}})
    .PointwiseCost(5.0)
    .SetDoc("Caffe2's WnGrad step (float; Wu, Ward and Bottou): with b the current seq_b, "
            "param += lr grad / (b + epsilon) and seq_b = b + |grad|^2 / (b + epsilon); lr "
            "negative, from LearningRate with a negative base_lr. Optional outputs: the "
            "effective rate lr / (b + epsilon) (1 element) and the update.")
    .Arg("epsilon", "float, default 1e-5")
    .Input(0, "param", "float parameter")
    .Input(1, "seq_b", "1-element float accumulator")
    .Input(2, "grad", "float gradient")
    .Input(3, "lr", "1-element float learning rate (negative)")
    .Output(0, "param", "same blob as input 0")
    .Output(1, "seq_b", "same blob as input 1")
    .Output(2, "effective_lr", "optional 1-element float")
    .Output(3, "update", "optional: the step added to param");

OPERATOR_SCHEMA(Lars)
    .NumInputs(5, 6)
    .NumOutputs(1)
    .PointwiseCost(4.0)
    .SetDoc("Caffe2's layer-wise adaptive rate scaling: lr_rescaled = max(min(trust / (|dX| / "
            "|X| + wd + offset), lr_max), lr_min), or max(min(1, lr_max), lr_min) when |X| = 0 "
            "(L2 norms). The optimizer multiplies its learning rate by it. halfcaf extensions: "
            "dX may be float16 or bfloat16, and a sixth input loss_scale divides |dX|.")
    .Arg("offset", "float, default 0.5")
    .Arg("lr_min", "float, default 0.02")
    .Input(0, "X", "float parameter")
    .Input(1, "dX", "its gradient (float, float16 or bfloat16)")
    .Input(2, "wd", "1-element float weight decay")
    .Input(3, "trust", "1-element float trust coefficient")
    .Input(4, "lr_max", "1-element float upper bound of the rescaled rate")
    .Input(5, "loss_scale", "optional 1-element float: dX is divided by it")
    .Output(0, "lr_rescaled", "1-element float");

}  // namespace halfcaf
