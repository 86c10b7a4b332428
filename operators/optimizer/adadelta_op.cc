// Adadelta, as Caffe2 has it, and MixedPrecisionAdadeltaUpdate, the fused update halfcaf's
// optimizer builder uses (PyTorch's Adadelta on an FP32 master). The rule is AdadeltaRule in
// core/adaptive_update_rules.h.
//
// Adadelta (Caffe2): inputs param, moment, moment_delta, grad, lr; outputs param, moment,
// moment_delta (in place):
//   moment = decay moment + (1 - decay) g^2
//   d = sqrt(moment_delta + epsilon) / sqrt(moment + epsilon) g;  param += lr d   (lr negative)
//   moment_delta = decay moment_delta + (1 - decay) d^2
// epsilon defaults to 1e-5, decay to 0.95.
//
// MixedPrecisionAdadeltaUpdate (halfcaf extension): grad, square_avg, acc_delta, lr, master,
// [loss_scale, [found_inf]] -> square_avg, acc_delta, master, [copy]
// (operators/optimizer/fused_update.h): the same rule on g / loss_scale + weight_decay master,
// master -= lr d, with PyTorch's defaults (decay = rho 0.9, epsilon 1e-6).
#include "core/gradient.h"
#include "core/operator.h"
#include "operators/cpu_parallel.h"
#include "operators/optimizer/adaptive_op.h"
#include "operators/optimizer/fused_update.h"
#include "operators/optimizer/mixed_precision_sgd_op.h"

namespace halfcaf {

namespace {

class AdadeltaOp final : public Operator<CPUContext> {
 public:
  AdadeltaOp(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws), rule_(ReadAdadeltaRule(*this, 0.95f, 1e-5f)) {}

  void RunOnDevice() override {
    const Tensor& P = Input(0);
    CheckCaffeUpdateInputs(*this, "Adadelta", {0, 1, 2, 3},
                           {&P, &Input(1), &Input(2), &Input(3)});
    const float lr = UpdateScalar(Input(4), "lr");
    const float* g = Input(3).data<float>();
    float* p = Output(0, P.dims())->mutable_data<float>();
    float* h = Output(1, P.dims())->mutable_data<float>();
    float* u = Output(2, P.dims())->mutable_data<float>();
    const AdadeltaRule rule = rule_;
    ForEachPiece(P.numel(), 12.0, [&](int64_t off, int64_t len) {
      for (int64_t i = off; i < off + len; ++i) p[i] += lr * rule(g[i], h[i], u[i]);
    });
  }

 private:
  const AdadeltaRule rule_;
};

class MixedPrecisionAdadeltaUpdateOp final : public Operator<CPUContext> {
 public:
  MixedPrecisionAdadeltaUpdateOp(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws), rule_(ReadAdadeltaRule(*this, 0.9f, 1e-6f)), args_(*this) {}

  void RunOnDevice() override { RunFusedUpdate(*this, 2, rule_, args_); }

 private:
  const AdadeltaRule rule_;
  const MomentumUpdateArgs args_;  // weight_decay and copy_dtype
};

}  // namespace

REGISTER_CPU_OPERATOR(Adadelta, AdadeltaOp);
SHOULD_NOT_DO_GRADIENT(Adadelta);
REGISTER_CPU_OPERATOR(MixedPrecisionAdadeltaUpdate, MixedPrecisionAdadeltaUpdateOp);
SHOULD_NOT_DO_GRADIENT(MixedPrecisionAdadeltaUpdate);

OPERATOR_SCHEMA(Adadelta)
    .NumInputs(5)
    .NumOutputs(3)
    .EnforceInplace({{0, 0}, {1, 1}, {2, 2}})
    .PointwiseCost(12.0)
    .SetDoc("Caffe2's Adadelta step (float): moment = decay moment + (1 - decay) g^2; d = "
            "sqrt(moment_delta + epsilon) / sqrt(moment + epsilon) g; param += lr d (lr negative, "
            "from LearningRate with a negative base_lr); moment_delta = decay moment_delta + (1 - "
            "decay) d^2.")
    .Arg("epsilon", "float, default 1e-5")
    .Arg("decay", "float, default 0.95")
    .Input(0, "param", "float parameter")
    .Input(1, "moment", "float running average of squared gradients")
    .Input(2, "moment_delta", "float running average of squared updates")
    .Input(3, "grad", "float gradient")
    .Input(4, "lr", "1-element float learning rate (negative)")
    .Output(0, "param", "same blob as input 0")
    .Output(1, "moment", "same blob as input 1")
    .Output(2, "moment_delta", "same blob as input 2");

[[maybe_unused]] static OpSchema& g_mixed_precision_adadelta_schema =
    FusedUpdateSchema(NEW_FUSED_UPDATE_SCHEMA(MixedPrecisionAdadeltaUpdate),
                      {{"square_avg", "float running average of squared gradients"},
                       {"acc_delta", "float running average of squared updates"}})
        .SetDoc("halfcaf extension: PyTorch's Adadelta step on an FP32 master parameter. g = "
                "grad / loss_scale + weight_decay master; square_avg = decay square_avg + (1 - "
                "decay) g^2; d = sqrt(acc_delta + epsilon) / sqrt(square_avg + epsilon) g; "
                "acc_delta = decay acc_delta + (1 - decay) d^2; master -= lr d; writes the "
                "float16 (or bfloat16) copy of the new master. A non-zero found_inf skips the "
                "step entirely.")
        .Arg("epsilon", "float, default 1e-6 (PyTorch's)")
        .Arg("decay", "float, default 0.9 (PyTorch's rho)");

}  // namespace halfcaf
