// Adagrad, as Caffe2 has it, and MixedPrecisionAdagradUpdate, the fused update halfcaf's optimizer
// builder uses (PyTorch's Adagrad on an FP32 master). The rule is AdagradRule in
// core/adaptive_update_rules.h.
//
// Adagrad (Caffe2): inputs param, moment, grad, lr; outputs param, moment (in place),
// [effective_lr, [update]]. With g' = grad + weight_decay param:
//   moment = decay moment + g'^2;  param += lr g' / (sqrt(moment) + epsilon)   (lr negative)
// effective_lr = lr / (sqrt(moment) + epsilon) and update = lr g' / (sqrt(moment) + epsilon), per
// element. epsilon defaults to 1e-5, decay to 1.
//
// MixedPrecisionAdagradUpdate (halfcaf extension): grad, moment, lr, master, [loss_scale,
// [found_inf]] -> moment, master, [copy] (operators/optimizer/fused_update.h): PyTorch's Adagrad
// (lr_decay 0, initial accumulator 0; epsilon 1e-10, added after the square root), lr positive.
#include "core/adaptive_update_rules.h"
#include "core/gradient.h"
#include "core/operator.h"
#include "operators/cpu_parallel.h"
#include "operators/optimizer/adaptive_op.h"
#include "operators/optimizer/fused_update.h"
#include "operators/optimizer/mixed_precision_sgd_op.h"

namespace halfcaf {

namespace {

class AdagradOp final : public Operator<CPUContext> {
 public:
  AdagradOp(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws), rule_(ReadAdagradRule(*this, 1e-5f)),
        weight_decay_(GetSingleArgument<float>("weight_decay", 0.f)) {}

  void RunOnDevice() override {
    const Tensor& P = Input(0);
    CheckCaffeUpdateInputs(*this, "Adagrad", {0, 1, 2}, {&P, &Input(1), &Input(2)});
    const float lr = UpdateScalar(Input(3), "lr");
    const float* g = Input(2).data<float>();
    float* p = Output(0, P.dims())->mutable_data<float>();
    float* h = Output(1, P.dims())->mutable_data<float>();
    float* elr = OutputSize() > 2 ? Output(2, P.dims())->mutable_data<float>() : nullptr;
    float* upd = OutputSize() > 3 ? Output(3, P.dims())->mutable_data<float>() : nullptr;
    const AdagradRule rule = rule_;
    const float wd = weight_decay_;
    ForEachPiece(P.numel(), 8.0, [&](int64_t off, int64_t len) {
      float unused = 0.f;
      for (int64_t i = off; i < off + len; ++i) {
        const float gi = g[i] + wd * p[i];
        const float step = lr * rule(gi, h[i], unused);
        if (elr) elr[i] = lr / (sqrtf(h[i]) + rule.epsilon);
        if (upd) upd[i] = step;
        p[i] += step;
      }
    });
  }

 private:
  const AdagradRule rule_;
  const float weight_decay_;
};

class MixedPrecisionAdagradUpdateOp final : public Operator<CPUContext> {
 public:
  MixedPrecisionAdagradUpdateOp(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws), rule_(ReadAdagradRule(*this, 1e-10f)), args_(*this) {}

  void RunOnDevice() override { RunFusedUpdate(*this, 1, rule_, args_); }

 private:
  const AdagradRule rule_;
  const MomentumUpdateArgs args_;  // weight_decay and copy_dtype
};

}  // namespace

REGISTER_CPU_OPERATOR(Adagrad, AdagradOp);
SHOULD_NOT_DO_GRADIENT(Adagrad);
REGISTER_CPU_OPERATOR(MixedPrecisionAdagradUpdate, MixedPrecisionAdagradUpdateOp);
SHOULD_NOT_DO_GRADIENT(MixedPrecisionAdagradUpdate);

OPERATOR_SCHEMA(Adagrad)
    .NumInputs(4)
    .NumOutputs(2, 4)
    .EnforceInplace({{0, 0}, {1, 1}})
    .PointwiseCost(8.0)
    .SetDoc("Caffe2's Adagrad step (float): moment = decay moment + g^2; param += lr g / "
            "(sqrt(moment) + epsilon), with g = grad + weight_decay param and lr negative "
            "(LearningRate with a negative base_lr, as Caffe2's nets give it). Optional outputs: "
            "the effective rate lr / (sqrt(moment) + epsilon) and the update, per element.")
    .Arg("epsilon", "float, default 1e-5 (added after the square root)")
    .Arg("decay", "float, default 1: the moment's decay")
    .Arg("weight_decay", "float, default 0")
    .Input(0, "param", "float parameter")
    .Input(1, "moment", "float sum of squared gradients")
    .Input(2, "grad", "float gradient")
    .Input(3, "lr", "1-element float learning rate (negative)")
    .Output(0, "param", "same blob as input 0")
    .Output(1, "moment", "same blob as input 1")
    .Output(2, "effective_lr", "optional: lr / (sqrt(moment) + epsilon)")
    .Output(3, "update", "optional: the step added to param");

[[maybe_unused]] static OpSchema& g_mixed_precision_adagrad_schema =
    FusedUpdateSchema(NEW_FUSED_UPDATE_SCHEMA(MixedPrecisionAdagradUpdate),
                      {{"moment", "float sum of squared gradients"}})
        .SetDoc("halfcaf extension: PyTorch's Adagrad step (lr_decay 0, initial accumulator 0) "
                "on an FP32 master parameter. g = grad / loss_scale + weight_decay master; "
                "moment = decay moment + g^2; master -= lr g / (sqrt(moment) + epsilon); writes "
                "the float16 (or bfloat16) copy of the new master. A non-zero found_inf skips "
                "the step entirely.")
        .Arg("epsilon", "float, default 1e-10 (PyTorch's)")
        .Arg("decay", "float, default 1");

}  // namespace halfcaf
